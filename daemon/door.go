package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"meshplane/agent"
	"meshplane/api"
	"meshplane/bus"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/declaration"
	"meshplane/events"
	"meshplane/metrics"
	"meshplane/web"
)

// consumeReports starts recording the bus's reports through door, and
// returns the function that stops it (after the report in hand).
func consumeReports(ctx context.Context, bc *bus.Controller, door reportDoor) (func(context.Context) error, error) {
	log := door.log
	recCtx, stopRec := context.WithCancel(context.WithoutCancel(ctx))
	consumer, err := bc.ConsumeReports(recCtx, door.handler(), door.options()...)
	if err != nil {
		stopRec()
		return nil, fmt.Errorf("controller: %w", err)
	}
	return func(sctx context.Context) error {
		defer stopRec()
		serr := consumer.Stop(sctx)
		st := consumer.Stats()
		log.Info("controller: reports", "recorded", st.Recorded, "retried", st.Retried, "refused", st.Refused, "rejected", st.Rejected, "deferred", st.Deferred)
		return serr
	}, nil
}

// reportDoor wires the bus's report consumer to the controller (the door
// itself is commands.Handler.RecordApply, behind controller.RecordReport)
// and to the metrics.
type reportDoor struct {
	ctl      *controller.Controller
	recorded func(bus.Report)    // nil: not told
	metrics  *metrics.Controller // nil: not counted
	limit    bus.RateLimit
	log      *slog.Logger
}

// handler records each report through the controller: once per apply id,
// with report.delivered-late when it carries failed attempts. A report the
// door refuses (recorded as report.refused) or of a node that is not
// registered is rejected with its reason, counted, never retried; any
// other failure (the store) has it redelivered.
func (d reportDoor) handler() bus.Handler {
	return func(ctx context.Context, r bus.Report) error {
		_, err := d.ctl.RecordReport(ctx, deliveryOf(r))
		var rej *commands.Rejection
		if errors.As(err, &rej) && rej.Code == api.CodeStandby {
			return err // not this controller's to record: again later
		}
		if errors.Is(err, commands.ErrRejected) {
			reason := refusalReason(err)
			d.refused(reason)
			return bus.RejectFor(reason, err)
		}
		if err == nil && d.recorded != nil {
			d.recorded(r)
		}
		return err
	}
}

// options are the consumer's refusal and rate-limit callbacks.
func (d reportDoor) options() []bus.ConsumeOption {
	return []bus.ConsumeOption{
		bus.WithRateLimit(d.limit),
		bus.WithRefused(func(ctx context.Context, f bus.Refused) error {
			_, err := d.ctl.RecordRefusal(ctx, commands.RefusedReport{
				Node: f.Node, Reason: f.Reason, Detail: f.Err.Error(), Size: f.Size, Digest: f.Digest,
			})
			var rej *commands.Rejection
			if err != nil && (!errors.Is(err, commands.ErrRejected) || errors.As(err, &rej) && rej.Code == api.CodeStandby) {
				return err // the store, or not this controller's to record: the message comes again
			}
			d.refused(f.Reason) // recorded, or a node with no stream: counted all the same
			return nil
		}),
		bus.WithThrottled(func(ctx context.Context, t bus.Throttled) {
			if d.metrics != nil {
				d.metrics.ReportsDeferred(t.Deferred)
			}
			if _, err := d.ctl.RecordThrottled(ctx, commands.Throttled{
				Node: t.Node, Deferred: t.Deferred, From: t.From, To: t.To, Rate: t.Rate, Burst: t.Burst,
			}); err != nil && !errors.Is(err, commands.ErrRejected) {
				d.log.Warn("controller: throttled reports not recorded", "node", t.Node, "err", err)
			}
		}),
	}
}

func (d reportDoor) refused(reason string) {
	if d.metrics != nil {
		d.metrics.ReportRefused(reason)
	}
}

// refusalReason is the reason a rejected report is refused for: the door's
// (a *commands.Refusal), or unknown-node.
func refusalReason(err error) string {
	var ref *commands.Refusal
	if errors.As(err, &ref) {
		return ref.Reason
	}
	var rej *commands.Rejection
	if errors.As(err, &rej) && rej.Code == commands.CodeNodeUnknown {
		return events.RefusedUnknownNode
	}
	return events.RefusedMalformed
}

// deliveryOf is a report off the bus as the write side takes it.
func deliveryOf(r bus.Report) commands.Delivery {
	return commands.Delivery{
		Report: r.Outcome, ApplyID: r.ApplyID, AppliedAt: r.AppliedAt,
		Correlation: r.Correlation, Attempts: r.Attempts, LastError: r.LastError,
		Size: r.Size, Digest: r.Digest, Workload: r.Workload,
	}
}

// busPublisher is what the controller's publisher is in the daemon: the
// bus's (bus.DeclarationPublisher), or it wrapped (notifyingPublisher).
type busPublisher interface {
	controller.BatchPublisher
	controller.DryRunner
	controller.LogAsker
}

var (
	_ busPublisher = bus.DeclarationPublisher{}
	_ busPublisher = notifyingPublisher{}
)

// laterPublisher is the controller's publisher before the bus is up: Run
// makes and resumes the controller first (so that the bus starts with the
// revocation list it folded), then sets the bus's publisher here, before
// the controller runs or serves. A put before that is an error, never a
// silent drop.
type laterPublisher struct{ p atomic.Pointer[busPublisher] }

func (l *laterPublisher) set(p busPublisher) { l.p.Store(&p) }

var errBusNotUp = errors.New("controller: the bus is not up yet")

func (l *laterPublisher) PutDeclaration(ctx context.Context, d declaration.Declaration) error {
	p := l.p.Load()
	if p == nil {
		return errBusNotUp
	}
	return (*p).PutDeclaration(ctx, d)
}

func (l *laterPublisher) PutDeclarations(ctx context.Context, ds []declaration.Declaration) []error {
	p := l.p.Load()
	if p == nil {
		errs := make([]error, len(ds))
		for i := range errs {
			errs[i] = errBusNotUp
		}
		return errs
	}
	return (*p).PutDeclarations(ctx, ds)
}

func (l *laterPublisher) DryRun(ctx context.Context, d declaration.Declaration) (agent.Preview, error) {
	p := l.p.Load()
	if p == nil {
		return agent.Preview{}, errBusNotUp
	}
	return (*p).DryRun(ctx, d)
}

// notifyingPublisher tells pushed about each declaration put.
type notifyingPublisher struct {
	controller.Publisher
	pushed func(declaration.Declaration)
}

func (p notifyingPublisher) PutDeclaration(ctx context.Context, d declaration.Declaration) error {
	if err := p.Publisher.PutDeclaration(ctx, d); err != nil {
		return err
	}
	p.pushed(d)
	return nil
}

// PutDeclarations puts ds through the wrapped publisher (pipelined when it
// is a controller.BatchPublisher, else one after the other) and tells
// pushed about each put.
func (p notifyingPublisher) PutDeclarations(ctx context.Context, ds []declaration.Declaration) []error {
	var errs []error
	if bp, ok := p.Publisher.(controller.BatchPublisher); ok {
		errs = bp.PutDeclarations(ctx, ds)
	} else {
		errs = make([]error, len(ds))
		for i, d := range ds {
			errs[i] = p.Publisher.PutDeclaration(ctx, d)
		}
	}
	for i, d := range ds {
		if errs == nil || errs[i] == nil {
			p.pushed(d)
		}
	}
	return errs
}

// The controller is the page's feed of changes (checked here: the
// controller does not link the page).
var _ web.Feed = (*controller.Controller)(nil)

// DryRun forwards to the wrapped publisher's dry runs, when it has them.
func (p notifyingPublisher) DryRun(ctx context.Context, d declaration.Declaration) (agent.Preview, error) {
	dr, ok := p.Publisher.(controller.DryRunner)
	if !ok {
		return agent.Preview{}, fmt.Errorf("no dry runs on this bus")
	}
	return dr.DryRun(ctx, d)
}

// The bus adapter is the controller core's Publisher (checked here: bus
// does not link the controller).
var (
	_ controller.Publisher      = bus.DeclarationPublisher{}
	_ controller.BatchPublisher = bus.DeclarationPublisher{} // a push of many nodes puts them pipelined
	_ controller.BatchPublisher = notifyingPublisher{}
	_ controller.DryRunner      = bus.DeclarationPublisher{} // mesh plan asks the agents over the bus
)
