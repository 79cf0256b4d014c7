package controllerd

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"meshplane/internal/usage"
)

// TestCheckBus: comma-separated --nats values are split; the embedded
// bus's settings and an external cluster's never go together, and peers
// need the route address.
func TestCheckBus(t *testing.T) {
	c := Config{NATS: []string{"nats://a:4222, nats://b:4222", "nats://c:4222"}, NATSCreds: "c.creds"}
	if err := c.CheckBus(); err != nil || !slices.Equal(c.NATS, []string{"nats://a:4222", "nats://b:4222", "nats://c:4222"}) {
		t.Fatalf("CheckBus: %v, NATS %q", err, c.NATS)
	}
	for want, c := range map[string]Config{
		"--nats-creds, --nats-ca, --nats-account-seed, --nats-operator-seed and --nats-system-creds go with --nats": {NATSCA: "ca.pem"},
		"--nats-operator-seed and --nats-system-creds go together":                                                  {NATS: []string{"nats://a:4222"}, NATSOperatorSeed: "op.nk"},
		"are the embedded bus's; --nats uses another":                                                               {NATS: []string{"nats://a:4222"}, BusTrust: "trust"},
		"--bus-peers needs --bus-cluster":                                                                           {BusPeers: []string{"nats-route://b:6222"}},
	} {
		if err := c.CheckBus(); !errors.Is(err, usage.Err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want usage.Err saying %q", c, err, want)
		}
	}
	ok := Config{BusCluster: "10.0.0.1:6222", BusPeers: []string{"nats-route://b:6222"}}
	if err := ok.CheckBus(); err != nil {
		t.Errorf("a cluster with its peers: %v", err)
	}
}
