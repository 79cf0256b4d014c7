package controllerd

import (
	"context"
	"fmt"
	"log/slog"

	"meshplane/bus"
	"meshplane/controller"
)

// hearHeartbeats hands every agent heartbeat heard on the bus to the
// controller (controller.Heard: its last-seen table, in memory, never an
// event). A leader and a standby both hear them: a standby that starts
// leading knows who was heard. The returned stop ends the subscription and
// logs what it heard and ignored.
func hearHeartbeats(bc *bus.ControllerConn, ctl *controller.Controller, log *slog.Logger) (func(context.Context) error, error) {
	sub, err := bc.SubscribeHeartbeats(func(node string, hb bus.Heartbeat) { ctl.HeardAgent(node, hb.Version) })
	if err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	return func(context.Context) error {
		sub.Stop()
		st := sub.Stats()
		log.Info("controller: heartbeats", "heard", st.Heard, "ignored", st.Ignored)
		return nil
	}, nil
}
