package bus

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"meshplane/internal/safego"
)

// handleSafely is handle behind a recover (safego.Call, "bus.report"): a
// report whose handling panics is logged with the stack, counted
// (meshplane_panics_total{where="bus.report"}) and redelivered later with
// the same backoff as a report the handler could not record, and the
// consumer goes on with the next. A panic is a bug of this build, not a
// report the node got wrong: the report is kept on the stream, not
// refused, so a fixed build records it.
func (k *Consumer) handleSafely(ctx context.Context, h Handler, m jetstream.Msg) {
	err := safego.Call("bus.report", k.log, func() error {
		k.handle(ctx, h, m)
		return nil
	})
	if err == nil {
		return
	}
	k.retried.Add(1)
	var delivered uint64 = 1
	if md, merr := m.Metadata(); merr == nil {
		delivered = md.NumDelivered
	}
	k.settle(m.NakWithDelay(retryDelay(delivered)), 0)
}
