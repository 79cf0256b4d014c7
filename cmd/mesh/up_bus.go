package main

import (
	"github.com/spf13/pflag"

	"meshplane/controllerd"
	"meshplane/internal/flagcheck"
)

// busFlagNames are the controller's flags addBusFlags adds, refused with
// --passes as the other controller flags are.
var busFlagNames = []string{"bus-cluster", "bus-peers", "bus-trust", "bus-replicas", "nats-creds", "nats-ca", "nats-account-seed", "nats-operator-seed", "nats-system-creds"}

func init() { controllerFlags = append(controllerFlags, busFlagNames...) }

// addBusFlags adds mesh up's flags of the bus beyond --bus-listen and
// --nats to fs, into cfg (checked by cfg.CheckBus): a clustered embedded
// bus (the controllers sharing one store each run a server of one NATS
// cluster), and the controller's credentials on an external NATS cluster.
func addBusFlags(fs *pflag.FlagSet, cfg *controllerd.Config) {
	fs.StringVar(&cfg.BusCluster, "bus-cluster", "", "controller: the embedded NATS server listens for its peers' routes on this `address`, one server of a cluster with --bus-peers (routes use --tls-cert/--tls-key, peers verified against --tls-ca)")
	fs.StringSliceVar(&cfg.BusPeers, "bus-peers", nil, "controller: the other controllers' route `URLs` (nats-route://host:port,...), the controllers sharing this --store")
	fs.StringVar(&cfg.BusTrust, "bus-trust", "", "controller: read the bus's trust root (operator.nk, system-account.nk, mesh-account.nk) from this `directory`, a copy of the first controller's DATA/bus seeds; never made there")
	fs.IntVar(&cfg.BusReplicas, "bus-replicas", 0, "controller: replicas of the declarations bucket and the reports stream (default 3 with three servers or more: 1+len(--bus-peers), or len(--nats); else 1)")
	fs.StringVar(&cfg.NATSCreds, "nats-creds", "", "controller: with --nats, the controller user's NATS .creds `file` (mesh bus account writes one)")
	fs.StringVar(&cfg.NATSCA, "nats-ca", "", "controller: with --nats, the PEM `file` of the cluster's CA when it is a private one")
	fs.StringVar(&cfg.NATSAccountSeed, "nats-account-seed", "", "controller: with --nats, a `file` holding a signing key seed (SA...) of the mesh account, to mint node users with (mesh bus account writes one)")
	fs.StringVar(&cfg.NATSOperatorSeed, "nats-operator-seed", "", "controller: with --nats, a `file` holding a signing key seed (SO...) of the operator, to sign the account's revocations with (mesh node revoke); with --nats-system-creds (mesh bus account writes both)")
	fs.StringVar(&cfg.NATSSystemCreds, "nats-system-creds", "", "controller: with --nats, a system account user's NATS .creds `file`, to send the account's revocations as; with --nats-operator-seed")
	flagcheck.Install(fs, map[string]flagcheck.Check{
		"bus-cluster":  flagcheck.Optional(flagcheck.ListenAddr),
		"bus-peers":    flagcheck.ListOf(flagcheck.URLOf("nats-route")),
		"bus-replicas": flagcheck.AtLeast(1),
	})
}
