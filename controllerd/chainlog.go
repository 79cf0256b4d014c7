package controllerd

import (
	"context"
	"log/slog"
	"time"

	"meshplane/events"
	"meshplane/internal/safego"
)

// DefaultChainLogEvery is how often a controller logs its store's hash
// chain head (Config.ChainLogEvery): a line a log shipper can carry off
// the host, for mesh store verify --anchor to prove the history against.
const DefaultChainLogEvery = 10 * time.Minute

// logChainHead logs store's chain head at once and then every every, until
// ctx ends, as "store: chain head" with head=LINE (events.ChainHead's line,
// as mesh store head prints it). A head it cannot read is logged as a
// warning and the next tick tries again. It returns when it has stopped.
func logChainHead(ctx context.Context, store events.Store, every time.Duration, log *slog.Logger) <-chan struct{} {
	return safego.Go("daemon.chain", log, func() error {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			h, err := store.ChainHead(rctx)
			cancel()
			switch {
			case ctx.Err() != nil:
				return nil
			case err != nil:
				log.Warn("store: chain head not read", "err", err)
			default:
				log.Info("store: chain head", "head", h.String())
			}
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
	})
}
