package controllerd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"meshplane/bus"
	"meshplane/controller"
	"meshplane/declaration"
	"meshplane/secrets"
)

// secretKey is the controller's secret key, in its data directory
// (secrets.KeyFile, made at the first start) or $MESH_SECRET_KEY; none
// without a data directory. Every controller of a cluster must be given
// the same key file (package secrets).
func secretKey(data string) (*secrets.Key, error) {
	if data == "" && os.Getenv(secrets.KeyEnv) == "" {
		return nil, nil
	}
	k, err := secrets.LoadOrMakeKey(data)
	if err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	return k, nil
}

// serveSecrets answers the agents' secret requests (bus.ServeSecrets) with
// the controller's ResolveSecrets; a standby answers none. It returns the
// stop of the subscription, which logs what it answered and refused.
func serveSecrets(bc *bus.ControllerConn, ctl *controller.Controller, log *slog.Logger) (func(context.Context) error, error) {
	svc, err := bc.ServeSecrets(func(ctx context.Context, want []declaration.Secret) (map[string]string, error) {
		v, err := ctl.ResolveSecrets(ctx, want)
		if errors.Is(err, controller.ErrNotLeading) {
			return nil, bus.ErrNotLeading
		}
		return v, err
	})
	if err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	return func(context.Context) error {
		svc.Stop()
		st := svc.Stats()
		log.Info("controller: secret requests", "answered", st.Answered, "refused", st.Refused, "dropped", st.Dropped)
		return nil
	}, nil
}
