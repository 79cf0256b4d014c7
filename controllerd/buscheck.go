package controllerd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"meshplane/bus"
)

// BusCheckHelp is mesh bus check's help.
const BusCheckHelp = `mesh bus check connects to the bus with the controller's user and prints one line
per check (ok, FAIL, skip): the server's version; the mesh account's JetStream
consumer limit (a bound, not unlimited); the declarations bucket's stream
(republishing to mesh.decl.>, direct gets, at most 16 consumers) and the
reports stream (work queue, at most 4 consumers), both made by the controller
at its start; and that a node's user cannot create a JetStream consumer (a
throwaway node user, expiring in a minute, tries).

Without --nats it checks the embedded bus of the controller on --data (its
trust root in DATA/bus, its URLs in DATA/bus-urls). With --nats URL and
--nats-creds FILE it checks an external cluster as mesh up --nats reaches
it; --nats-account-seed lets it mint the node user (else that check is
skipped). Exit 0 when every check passed, 1 when one failed.`

// BusCheck is what `mesh bus check` checks a bus with: the embedded bus of
// the controller on Data (its trust root in DATA/bus, its URLs in
// DATA/bus-urls, or URLs when given), or, with NATSCreds, an external
// cluster at URLs, as mesh up --nats reaches it (NATSCA, and
// NATSAccountSeed to mint the throwaway node user the last check needs).
type BusCheck struct {
	Data            string
	URLs            []string
	NATSCreds       string
	NATSCA          string
	NATSAccountSeed string
}

// CheckBus runs bus.Check against the bus c names: every result, and an
// error wrapping bus.ErrCheckFailed if one failed.
func CheckBus(ctx context.Context, c BusCheck) ([]bus.CheckResult, error) {
	var cc bus.CheckConfig
	if c.NATSCreds != "" {
		if len(c.URLs) == 0 {
			return nil, errors.New("bus check: --nats-creds needs --nats, the cluster's URLs")
		}
		b, err := externalBus(Config{NATS: c.URLs, NATSCreds: c.NATSCreds, NATSCA: c.NATSCA, NATSAccountSeed: c.NATSAccountSeed}, slog.New(slog.DiscardHandler))
		if err != nil {
			return nil, fmt.Errorf("bus check: %w", err)
		}
		cc = bus.CheckConfig{URLs: b.cfg.URLs, User: b.cfg.User, CA: b.cfg.CA, Issuer: b.issuer}
	} else {
		if c.NATSAccountSeed != "" {
			return nil, errors.New("bus check: --nats-account-seed goes with --nats-creds (an external cluster); the embedded bus's trust root is in DATA/bus")
		}
		auth, err := bus.OpenAuthority(filepath.Join(c.Data, BusDir))
		if err != nil {
			return nil, fmt.Errorf("bus check: %w", err)
		}
		u, err := auth.Issuer().Controller()
		if err != nil {
			return nil, fmt.Errorf("bus check: %w", err)
		}
		urls := c.URLs
		if len(urls) == 0 {
			if urls, err = ReadBusURLs(c.Data); err != nil {
				return nil, fmt.Errorf("bus check: %w", err)
			}
		}
		if len(urls) == 0 {
			urls = []string{defaultBusURL}
		}
		var ca []byte
		if c.NATSCA != "" {
			if ca, err = os.ReadFile(c.NATSCA); err != nil {
				return nil, fmt.Errorf("bus check: --nats-ca: %w", err)
			}
		}
		cc = bus.CheckConfig{URLs: urls, User: u, CA: ca, Issuer: auth.Issuer()}
	}
	return bus.Check(ctx, cc)
}
