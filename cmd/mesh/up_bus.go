package main

import (
	"strings"

	"github.com/spf13/pflag"

	"meshplane/daemon"
	"meshplane/internal/flagcheck"
)

// busOptions are mesh up's flags of the bus beyond --bus-listen and
// --nats: a clustered embedded bus (the controllers sharing one store each
// run a server of one NATS cluster), and the controller's credentials on
// an external NATS cluster (--nats).
type busOptions struct {
	cluster     string   // --bus-cluster
	peers       []string // --bus-peers
	trust       string   // --bus-trust
	replicas    int      // --bus-replicas
	natsCreds   string   // --nats-creds
	natsCA      string   // --nats-ca
	accountSeed string   // --nats-account-seed
	opSeed      string   // --nats-operator-seed
	sysCreds    string   // --nats-system-creds
}

// busFlagNames are the controller's flags addBusFlags adds, refused with
// --passes as the other controller flags are.
var busFlagNames = []string{"bus-cluster", "bus-peers", "bus-trust", "bus-replicas", "nats-creds", "nats-ca", "nats-account-seed", "nats-operator-seed", "nats-system-creds"}

func init() { controllerFlags = append(controllerFlags, busFlagNames...) }

// addBusFlags adds the bus's flags of mesh up to fs, into o.
func addBusFlags(fs *pflag.FlagSet, o *busOptions) {
	fs.StringVar(&o.cluster, "bus-cluster", "", "controller: the embedded NATS server listens for its peers' routes on this `address`, one server of a cluster with --bus-peers (routes use --tls-cert/--tls-key, peers verified against --tls-ca)")
	fs.StringSliceVar(&o.peers, "bus-peers", nil, "controller: the other controllers' route `URLs` (nats-route://host:port,...), the controllers sharing this --store")
	fs.StringVar(&o.trust, "bus-trust", "", "controller: read the bus's trust root (operator.nk, system-account.nk, mesh-account.nk) from this `directory`, a copy of the first controller's DATA/bus seeds; never made there")
	fs.IntVar(&o.replicas, "bus-replicas", 0, "controller: replicas of the declarations bucket and the reports stream (default 3 with three servers or more: 1+len(--bus-peers), or len(--nats); else 1)")
	fs.StringVar(&o.natsCreds, "nats-creds", "", "controller: with --nats, the controller user's NATS .creds `file` (mesh bus account writes one)")
	fs.StringVar(&o.natsCA, "nats-ca", "", "controller: with --nats, the PEM `file` of the cluster's CA when it is a private one")
	fs.StringVar(&o.accountSeed, "nats-account-seed", "", "controller: with --nats, a `file` holding a signing key seed (SA...) of the mesh account, to mint node users with (mesh bus account writes one)")
	fs.StringVar(&o.opSeed, "nats-operator-seed", "", "controller: with --nats, a `file` holding a signing key seed (SO...) of the operator, to sign the account's revocations with (mesh node revoke); with --nats-system-creds (mesh bus account writes both)")
	fs.StringVar(&o.sysCreds, "nats-system-creds", "", "controller: with --nats, a system account user's NATS .creds `file`, to send the account's revocations as; with --nats-operator-seed")
	flagcheck.Install(fs, map[string]flagcheck.Check{
		"bus-cluster":  flagcheck.Optional(flagcheck.ListenAddr),
		"bus-peers":    flagcheck.ListOf(flagcheck.URLOf("nats-route")),
		"bus-replicas": flagcheck.AtLeast(1),
	})
}

// apply puts o in cfg. --nats URLs given as one comma-separated value are
// split; tlsCA (--tls-ca) is the CA the bus's route peers are verified
// against.
func (o busOptions) apply(cfg *daemon.Config, tlsCA string) error {
	var nats []string
	for _, n := range cfg.NATS {
		for _, u := range strings.Split(n, ",") {
			if u = strings.TrimSpace(u); u != "" {
				nats = append(nats, u)
			}
		}
	}
	cfg.NATS = nats
	external := len(nats) > 0
	switch {
	case !external && (o.natsCreds != "" || o.natsCA != "" || o.accountSeed != "" || o.opSeed != "" || o.sysCreds != ""):
		return usagef("--nats-creds, --nats-ca, --nats-account-seed, --nats-operator-seed and --nats-system-creds go with --nats")
	case (o.opSeed == "") != (o.sysCreds == ""):
		return usagef("--nats-operator-seed and --nats-system-creds go together")
	case external && (o.cluster != "" || len(o.peers) > 0 || o.trust != ""):
		return usagef("--bus-cluster, --bus-peers and --bus-trust are the embedded bus's; --nats uses another")
	case len(o.peers) > 0 && o.cluster == "":
		return usagef("--bus-peers needs --bus-cluster, the address this controller's bus listens on for its peers' routes")
	}
	cfg.BusCluster, cfg.BusPeers, cfg.BusTrust, cfg.BusReplicas = o.cluster, o.peers, o.trust, o.replicas
	cfg.NATSCreds, cfg.NATSCA, cfg.NATSAccountSeed = o.natsCreds, o.natsCA, o.accountSeed
	cfg.NATSOperatorSeed, cfg.NATSSystemCreds = o.opSeed, o.sysCreds
	cfg.TLSCA = tlsCA
	return nil
}
