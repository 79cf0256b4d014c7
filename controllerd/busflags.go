package controllerd

import (
	"meshplane/internal/usage"
	"strings"
)

// CheckBus splits the NATS URLs given as comma-separated values, and
// refuses bus settings that do not go together: an external cluster's
// credentials without --nats, the embedded cluster's settings with it, or
// peers without the address this bus listens on for their routes (bad
// usage, usage.Err).
func (c *Config) CheckBus() error {
	var nats []string
	for _, n := range c.NATS {
		for _, u := range strings.Split(n, ",") {
			if u = strings.TrimSpace(u); u != "" {
				nats = append(nats, u)
			}
		}
	}
	c.NATS = nats
	external := len(nats) > 0
	switch {
	case !external && (c.NATSCreds != "" || c.NATSCA != "" || c.NATSAccountSeed != "" || c.NATSOperatorSeed != "" || c.NATSSystemCreds != ""):
		return usage.Errorf("--nats-creds, --nats-ca, --nats-account-seed, --nats-operator-seed and --nats-system-creds go with --nats")
	case (c.NATSOperatorSeed == "") != (c.NATSSystemCreds == ""):
		return usage.Errorf("--nats-operator-seed and --nats-system-creds go together")
	case external && (c.BusCluster != "" || len(c.BusPeers) > 0 || c.BusTrust != ""):
		return usage.Errorf("--bus-cluster, --bus-peers and --bus-trust are the embedded bus's; --nats uses another")
	case len(c.BusPeers) > 0 && c.BusCluster == "":
		return usage.Errorf("--bus-peers needs --bus-cluster, the address this controller's bus listens on for its peers' routes")
	}
	return nil
}
