package daemon

import (
	"errors"
	"strings"
)

// ErrBusFlags means the bus's settings of a Config do not go together
// (for the CLI, bad usage): the embedded bus's with an external one's.
var ErrBusFlags = errors.New("bus settings")

// busFlagsError is an ErrBusFlags that says only what is wrong.
type busFlagsError string

func (e busFlagsError) Error() string        { return string(e) }
func (e busFlagsError) Is(target error) bool { return target == ErrBusFlags }

// CheckBus splits the NATS URLs given as comma-separated values, and
// refuses bus settings that do not go together: an external cluster's
// credentials without --nats, the embedded cluster's settings with it, or
// peers without the address this bus listens on for their routes.
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
	case !external && (c.NATSCreds != "" || c.NATSCA != "" || c.NATSAccountSeed != ""):
		return busFlagsError("--nats-creds, --nats-ca and --nats-account-seed go with --nats")
	case external && (c.BusCluster != "" || len(c.BusPeers) > 0 || c.BusTrust != ""):
		return busFlagsError("--bus-cluster, --bus-peers and --bus-trust are the embedded bus's; --nats uses another")
	case len(c.BusPeers) > 0 && c.BusCluster == "":
		return busFlagsError("--bus-peers needs --bus-cluster, the address this controller's bus listens on for its peers' routes")
	}
	return nil
}
