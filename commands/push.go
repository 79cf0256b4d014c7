package commands

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"meshplane/declaration"
	"meshplane/events"
	"meshplane/wire"
)

// SendFunc hands a declaration to the bus for its node.
type SendFunc func(ctx context.Context, d declaration.Declaration) error

// LastPush is what a pass knows of a node's pushes: the digest of the
// declaration last handed to the bus for it, and the error of its last
// compose when that failed (and is the node's last compose attempt,
// whatever was applied since). The zero value knows of none: a push now,
// changed or not.
type LastPush struct {
	Digest  string
	Failure string
	// Pass is the causation of the pass over every node this push is
	// part of (events.PassCause), recorded on each event the push
	// appends; "" for a push of its own (named nodes, PushNode).
	Pass string
}

// PushAction is what one node's push in a pass does (DecidePush).
type PushAction int

const (
	// PushSkip: nothing new. The composition is the declaration last
	// handed to the bus (and the last compose attempt did not fail), or
	// the compose failed as the last one did (which is recorded already:
	// recording it every pass says nothing new).
	PushSkip PushAction = iota
	// PushSend: record the composition (unless unchanged) and send it
	// (Handler.Push).
	PushSend
	// PushRecordFailure: record the compose's failure
	// (Handler.ComposeFailed).
	PushRecordFailure
	// PushRefused: the node is not registered (or was not when read):
	// there is no stream to record on. A push asked for by name says so.
	PushRefused
)

func (a PushAction) String() string {
	switch a {
	case PushSkip:
		return "skip"
	case PushSend:
		return "send"
	case PushRecordFailure:
		return "record failure"
	case PushRefused:
		return "refused"
	}
	return fmt.Sprintf("PushAction(%d)", int(a))
}

// DecidePush decides one node's push from what Compose returned for it (c,
// or the compose's error err) and what was last done (last): the
// controller's pushed-digest and same-failure filters, as one pure
// function. With last zero (a push now), whatever composes is sent and
// every failure recorded. A compose that succeeds after a failed one is
// sent even when it is the declaration last pushed: its record is what
// ends the failure (a node stays failing until a compose succeeds).
func DecidePush(c Composition, err error, last LastPush) PushAction {
	switch {
	case errors.Is(err, ErrRejected):
		return PushRefused
	case err != nil && last.Failure != "" && err.Error() == last.Failure:
		return PushSkip
	case err != nil:
		return PushRecordFailure
	case last.Failure != "":
		return PushSend
	case last.Digest != "" && c.Declaration.Digest == last.Digest:
		return PushSkip
	}
	return PushSend
}

// PushNode is one node's push: it composes node through reader (nil: the
// handler itself, the store), decides with DecidePush against last, and
// does what it decided: Push the composition it decided on, or record the
// compose's failure (ComposeFailed). A composition whose append finds the
// node's stream moved on (a command on the node meanwhile) is composed and
// decided again, up to the handler's retries. It returns what it decided,
// the declaration composed (zero when the compose failed), and the error of
// the compose, the send or the record; a refusal returns the compose's
// rejection and records nothing. It is StagePush, send, then FinishPush.
func (h *Handler) PushNode(ctx context.Context, node string, reader Reader, last LastPush, send SendFunc) (PushAction, declaration.Declaration, error) {
	st, err := h.StagePush(ctx, node, reader, last)
	if st.Action != PushSend || err != nil {
		return st.Action, st.Declaration(), err
	}
	d, err := h.FinishPush(ctx, st, send(ctx, st.Declaration()))
	return PushSend, d, err
}

// StagedPush is one node's push between its record and its send: what
// StagePush decided and, for PushSend, the composition to send, recorded
// (declaration.composed appended, or the stored declaration unchanged).
// Its declaration may be handed to the bus once StagePush returns; then
// FinishPush records how the send went.
type StagedPush struct {
	Action      PushAction
	Composition Composition // for PushSend, as recorded; for PushSkip, as composed
	meta        events.Meta
}

// Declaration is the declaration to send (zero when the compose failed).
func (s StagedPush) Declaration() declaration.Declaration { return s.Composition.Declaration }

// Recorded says the node's stream already records a successful push of
// s's declaration: FinishPush appends nothing after a send that succeeds.
func (s StagedPush) Recorded() bool { return s.Composition.Unchanged && s.Composition.Pushed }

// StagePush is the first half of PushNode: it composes node through reader
// (nil: the store), decides with DecidePush against last, and records what
// comes before a send (Push's first step: declaration.composed at the
// version compose read, unless unchanged), composing again while the
// node's stream moves on, up to the handler's retries. A failed compose is
// recorded here (ComposeFailed) and returned as the error; a refusal
// returns the compose's rejection and records nothing. Many nodes' stages
// may run at once: their appends share the store's group commits.
func (h *Handler) StagePush(ctx context.Context, node string, reader Reader, last LastPush) (StagedPush, error) {
	if reader == nil {
		reader = h
	}
	var lastErr error
	for attempt := 0; attempt <= h.retries; attempt++ {
		c, err := Compose(ctx, reader, node, "")
		switch act := DecidePush(c, err, last); act {
		case PushRefused:
			return StagedPush{Action: act}, err
		case PushSkip:
			return StagedPush{Action: act, Composition: c}, nil
		case PushRecordFailure:
			return StagedPush{Action: act}, h.composeFailed(ctx, node, err, last.Pass)
		}
		st, err := h.record(ctx, c, last.Pass)
		if errors.Is(err, events.ErrWrongExpectedVersion) {
			lastErr = err
			continue
		}
		return st, err
	}
	return StagedPush{Action: PushSend}, fmt.Errorf("commands: push %s: gave up after %d attempts, the node kept changing: %w (last: %v)",
		node, h.retries+1, ErrConflict, lastErr)
}

// Push records the composition c (as Compose returned it, for its node)
// and hands its declaration to send, recording each step as an event on
// the node's stream, all sharing one correlation:
//
//   - composed: declaration.composed, appended at the node version compose
//     read (c.Version), so no command on the node slips between; then
//     send; if send fails, declaration.push-failed and the error;
//     otherwise declaration.pushed. If the node's stream moved on since
//     compose read it, nothing is appended or sent and the error wraps
//     events.ErrWrongExpectedVersion: c is stale, compose again
//     (PushNode does).
//   - composed unchanged (byte-identical to the node's current declaration,
//     Composition.Unchanged): no declaration.composed; the stored
//     declaration is sent again, under its id and its compose's correlation
//     (which the events of this push then share). A failed send is recorded
//     as above. A successful one is recorded only when the stream does not
//     already say that declaration was pushed, or says its last push failed:
//     an idle pass records nothing on the controller's side, and the node's
//     apply report is the pass's one event (events.DeclarationPushed).
//
// A composition without a correlation (composed with "") gets a new one.
func (h *Handler) Push(ctx context.Context, c Composition, send SendFunc) (declaration.Declaration, error) {
	st, err := h.record(ctx, c, "")
	if err != nil {
		return declaration.Declaration{}, err
	}
	return h.FinishPush(ctx, st, send(ctx, st.Declaration()))
}

// record is Push's first step: c's correlation, its roster's revision
// (roster.changed appended first when its roster is not the last recorded:
// RosterRevision), and declaration.composed appended at c.Version unless c
// is unchanged; each of its events, and those FinishPush appends, caused
// by pass (LastPush.Pass).
func (h *Handler) record(ctx context.Context, c Composition, pass string) (StagedPush, error) {
	node := c.Declaration.Node
	if c.Declaration.Correlation == "" {
		c.Declaration.Correlation = h.newID().String()
	}
	st := StagedPush{Action: PushSend, Composition: c, meta: events.Meta{Actor: "controller", Correlation: c.Declaration.Correlation, Causation: pass}}
	rev, err := h.rosterRevisionOf(ctx, c.Roster, c.Declaration.RosterDigest, st.meta)
	if err != nil {
		return StagedPush{}, fmt.Errorf("commands: push %s: %w", node, err)
	}
	c.Declaration.RosterRevision = rev
	st.Composition = c
	if c.Unchanged {
		return st, nil
	}
	stream := events.NodeStream(node)
	evs, err := h.events(stream, []events.Payload{c.Stored()}, st.meta)
	if err != nil {
		return StagedPush{}, err
	}
	if _, err := h.store.Append(ctx, stream, events.Exactly(c.Version), evs...); err != nil {
		return StagedPush{}, fmt.Errorf("commands: push %s: append composed: %w", node, err)
	}
	return st, nil
}

// FinishPush is the second half of PushNode, after st's declaration was
// handed to the bus: it records sendErr, the send's outcome, as Push does
// (declaration.push-failed, or declaration.pushed unless the stream
// already says so), and returns the declaration sent and the error of the
// send or the record. Many nodes' finishes may run at once.
func (h *Handler) FinishPush(ctx context.Context, st StagedPush, sendErr error) (declaration.Declaration, error) {
	c, meta := st.Composition, st.meta
	d := c.Declaration
	stream := events.NodeStream(d.Node)
	if sendErr != nil {
		failed := events.DeclarationPushFailed{Node: d.Node, Declaration: d.ID, Error: sendErr.Error()}
		if aerr := h.appendAny(ctx, stream, failed, meta); aerr != nil {
			return d, fmt.Errorf("commands: push %s: send: %w (and recording it failed: %v)", d.Node, sendErr, aerr)
		}
		return d, fmt.Errorf("commands: push %s: send %s: %w", d.Node, d.ID, sendErr)
	}
	if st.Recorded() {
		return d, nil // the stream already says so
	}
	pushed := events.DeclarationPushed{Node: d.Node, Declaration: d.ID, Digest: d.Digest, Resources: len(d.Resources)}
	if err := h.appendAny(ctx, stream, pushed, meta); err != nil {
		return d, fmt.Errorf("commands: push %s: record pushed: %w", d.Node, err)
	}
	return d, nil
}

// ComposeFailed records that node's compose failed with cause
// (declaration.compose-failed, naming the read when cause is a *ReadError)
// and returns the error to report, naming the node.
func (h *Handler) ComposeFailed(ctx context.Context, node string, cause error) error {
	return h.composeFailed(ctx, node, cause, "")
}

// composeFailed is ComposeFailed in a pass (LastPush.Pass), its cause.
func (h *Handler) composeFailed(ctx context.Context, node string, cause error, pass string) error {
	meta := events.Meta{Actor: "controller", Correlation: h.newID().String(), Causation: pass}
	p := events.DeclarationComposeFailed{Node: node, Error: cause.Error()}
	var re *ReadError
	if errors.As(cause, &re) {
		p.Read = re.Read
	}
	err := fmt.Errorf("commands: push %s: %w", node, cause)
	if aerr := h.appendAny(ctx, events.NodeStream(node), p, meta); aerr != nil {
		return fmt.Errorf("%w (and recording the failure failed: %v)", err, aerr)
	}
	return err
}

func (h *Handler) appendAny(ctx context.Context, stream string, p events.Payload, meta events.Meta) error {
	evs, err := h.events(stream, []events.Payload{p}, meta)
	if err != nil {
		return err
	}
	_, err = h.store.Append(ctx, stream, events.Any, evs...)
	return err
}

// Delivery is an apply outcome as an agent delivers it.
type Delivery struct {
	Report      events.ApplyReported
	ApplyID     uuid.UUID // the id of the apply.reported event: re-delivery is a no-op
	AppliedAt   time.Time
	Correlation string
	Attempts    int    // failed delivery attempts before this one
	LastError   string // the last of them
	// ReceivedAt is when the controller received it, by its clock: the
	// door's now, stored as the report's received_at (zero: none, as a
	// simulation records; the door then reads no clock).
	ReceivedAt time.Time
	// Size and Digest ("sha256:<hex>") are those of the message's bytes, for
	// the record of a refusal (RecordRefusal); empty when not known.
	Size   int
	Digest string
	// Workload is what the pass saw change in how the node's containers
	// run (nil: nothing, or an agent that does not say): each change is
	// recorded as its container state event beside the apply.reported.
	Workload *wire.Workload
}

// RecordApply appends an agent's apply report as apply.reported, as the
// agent sent it (compact or full), under the agent's apply id, so delivering
// it again appends nothing; and, when earlier attempts failed,
// report.delivered-late beside it. It is the report door: a report is
// checked before anything is appended (see the door at the top of
// report.go); one that fails is a *Refusal (ErrRefused, ErrRejected), and
// nothing is appended. A report of a node that is not registered is a
// *Rejection with CodeNodeUnknown. Any other error (the store) means "not
// now": the report may be delivered again.
func (h *Handler) RecordApply(ctx context.Context, d Delivery) ([]events.Event, error) {
	node := d.Report.Node
	if d.ApplyID == uuid.Nil {
		return nil, refuse(events.RefusedMalformed, "apply report from %s has no apply id", short(node))
	}
	n, err := h.Node(ctx, node)
	if err != nil {
		return nil, fmt.Errorf("commands: record apply %s: %w", d.ApplyID, err)
	}
	if !n.Registered {
		return nil, reject(CodeNodeUnknown, "apply report from %s: node %s is not registered", short(node), short(node))
	}
	var decl *DeclarationFacts
	if h.facts != nil {
		f, err := h.facts.Declaration(ctx, node, d.Report.Declaration)
		if err != nil {
			return nil, fmt.Errorf("commands: record apply %s: declaration %s: %w", d.ApplyID, short(d.Report.Declaration), err)
		}
		decl = &f
	}
	if err := CheckReport(d, decl, d.ReceivedAt); err != nil {
		return nil, err
	}
	stream := events.NodeStream(node)
	if err := h.checkHeldSince(ctx, stream, d); err != nil {
		return nil, err
	}
	// The apply id is the event's id: the stored payload leaves it out
	// (events.ApplyReported), and readers take it from the envelope. The
	// time received is the controller's, whatever the agent said.
	d.Report.ApplyID = ""
	d.Report.ReceivedAt = time.Time{}
	if !d.ReceivedAt.IsZero() {
		d.Report.ReceivedAt = d.ReceivedAt.UTC()
	}
	apply, err := h.reg.New(stream, d.Report, events.Meta{
		ID: d.ApplyID, At: d.AppliedAt, Actor: "agent:" + node, Correlation: d.Correlation,
	})
	if err != nil {
		return nil, refuse(events.RefusedMalformed, "apply report %s from %s: %v", d.ApplyID, node, err)
	}
	if len(apply.Data) > events.MaxDataSize {
		return nil, refuse(events.RefusedTooLarge, "apply report %s from %s: its outcome is %d bytes, over the store's %d", d.ApplyID, node, len(apply.Data), events.MaxDataSize)
	}
	batch := []events.Event{apply}
	if d.Attempts > 0 {
		late, err := h.reg.New(stream, events.ReportDeliveredLate{
			Node: node, Declaration: d.Report.Declaration, ApplyID: d.ApplyID.String(),
			Attempts: d.Attempts, LastError: bounded(d.LastError, maxLastError),
		}, events.Meta{ID: lateID(d.ApplyID), At: h.now(), Actor: "agent:" + node, Correlation: d.Correlation, Causation: d.ApplyID.String()})
		if err != nil {
			return nil, err
		}
		batch = append(batch, late)
	}
	for i, c := range d.Workload.List() {
		ev, err := h.reg.New(stream, events.ContainerPayload(c), events.Meta{
			ID: workloadID(d.ApplyID, i), At: d.AppliedAt, Actor: "agent:" + node, Correlation: d.Correlation, Causation: d.ApplyID.String(),
		})
		if err != nil {
			return nil, refuse(events.RefusedMalformed, "apply report %s from %s: workload change %d: %v", d.ApplyID, node, i, err)
		}
		batch = append(batch, ev)
	}
	failed, err := h.rolloutsFailed(ctx, d)
	if err != nil {
		return nil, fmt.Errorf("commands: record apply %s: %w", d.ApplyID, err)
	}
	for i, f := range failed {
		ev, err := h.reg.New(stream, f, events.Meta{
			ID: rolloutID(d.ApplyID, i), At: d.AppliedAt, Actor: "agent:" + node, Correlation: d.Correlation, Causation: d.ApplyID.String(),
		})
		if err != nil {
			return nil, refuse(events.RefusedMalformed, "apply report %s from %s: failed roll-out %d: %v", d.ApplyID, node, i, err)
		}
		batch = append(batch, ev)
	}
	stored, err := h.store.Append(ctx, stream, events.Any, batch...)
	if errors.Is(err, events.ErrIDConflict) && len(batch) > 1 {
		// Recorded before, and the acknowledgement was lost: the late note
		// then differs (its time, its attempts). The report itself decides.
		stored, err = h.store.Append(ctx, stream, events.Any, apply)
	}
	if errors.Is(err, events.ErrIDConflict) {
		return h.recordedBefore(ctx, node, apply)
	}
	if errors.Is(err, events.ErrInvalid) {
		return nil, refuse(events.RefusedMalformed, "apply report %s from %s: the store refuses it: %v", d.ApplyID, node, err)
	}
	if err != nil {
		return nil, fmt.Errorf("commands: record apply %s of %s: %w", d.ApplyID, d.Report.Declaration, err)
	}
	return stored, nil
}

// checkHeldSince refuses a report whose held_since names no report of its
// node that carried a held list (events.HeldOf, through the store's id
// index; a store that has none is not asked): a reader would have no hold
// to show for it. A failed read is an error, never a refusal.
func (h *Handler) checkHeldSince(ctx context.Context, stream string, d Delivery) error {
	since := d.Report.HeldSince
	if since == "" {
		return nil
	}
	ir, ok := h.store.(events.IDReader)
	if !ok {
		return nil
	}
	_, err := events.HeldOf(ctx, ir, h.reg, stream, since)
	switch {
	case errors.Is(err, events.ErrHeldUnresolved):
		return refuse(events.RefusedMalformed, "apply report %s from %s: held_since %s names no earlier report of %s that carried a held list",
			d.ApplyID, short(d.Report.Node), quote(since), short(d.Report.Node))
	case err != nil:
		return fmt.Errorf("commands: record apply %s: held_since %s: %w", d.ApplyID, since, err)
	}
	return nil
}

// maxLastError bounds the delivery error a report.delivered-late keeps.
const maxLastError = 1024

// recordedBefore answers an append of apply that the store refused with
// ErrIDConflict: the same report recorded before (received at another
// time, which is all that may differ) is a no-op that returns the stored
// event; anything else under that id is refused (apply-id-conflict). The
// stored report is found among the node's recent ones (Node.Applies): an
// agent delivers again only a report it just sent.
func (h *Handler) recordedBefore(ctx context.Context, node string, apply events.Event) ([]events.Event, error) {
	n, err := h.Node(ctx, node)
	if err != nil {
		return nil, fmt.Errorf("commands: record apply %s: %w", apply.ID, err)
	}
	conflict := refuse(events.RefusedApplyID, "apply report %s from %s: apply id %s is already stored with other content, or is the id of another event",
		apply.ID, node, apply.ID)
	var evs []events.Event
	if v := n.Applies.Version(apply.ID); v > 0 {
		evs, err = h.store.ReadStream(ctx, apply.Stream, v-1, 1)
		if err != nil {
			return nil, fmt.Errorf("commands: record apply %s: read it back: %w", apply.ID, err)
		}
	} else if ir, ok := h.store.(events.IDReader); ok {
		// Older than the node's recent applies: the id index finds it,
		// whatever its age.
		ev, err := ir.ReadByID(ctx, apply.ID)
		switch {
		case errors.Is(err, events.ErrNotFound):
			return nil, conflict
		case err != nil:
			return nil, fmt.Errorf("commands: record apply %s: read it back: %w", apply.ID, err)
		}
		evs = []events.Event{ev}
	}
	if len(evs) != 1 || evs[0].ID != apply.ID || evs[0].Stream != apply.Stream {
		return nil, conflict
	}
	stored := evs[0]
	was, err := events.DecodeAs[events.ApplyReported](h.reg, stored)
	if err != nil {
		return nil, conflict
	}
	now, err := events.DecodeAs[events.ApplyReported](h.reg, apply)
	if err != nil {
		return nil, err
	}
	now.ReceivedAt = was.ReceivedAt
	again, err := h.reg.New(apply.Stream, now, events.Meta{
		ID: apply.ID, At: apply.At, Actor: apply.Actor, Causation: apply.Causation, Correlation: apply.Correlation,
	})
	if err != nil || !again.SameContent(stored) {
		return nil, conflict
	}
	return evs, nil
}

// lateID derives the id of a report's report.delivered-late event from the
// apply id: the same report always yields the same id (a UUIDv7 still, with
// the apply's timestamp and a flipped random bit).
// workloadID is the id of the i-th container state event a report
// carries: derived from its apply id, so that the same report delivered
// again records nothing new.
func workloadID(apply uuid.UUID, i int) uuid.UUID {
	return uuid.NewSHA1(apply, []byte(fmt.Sprintf("workload/%d", i)))
}

func rolloutID(apply uuid.UUID, i int) uuid.UUID {
	return uuid.NewSHA1(apply, []byte(fmt.Sprintf("rollout/%d", i)))
}

// RolloutCausePrefix begins the causation of a revert the controller makes
// after a failed roll-out: "rollout.failed:<its event id>".
const RolloutCausePrefix = events.TypeRolloutFailed + ":"

// rolloutsFailed is the rollout.failed of each module whose roll-out d's
// pass says failed, with what the mesh does about it: revert (the
// module's on_failure: revert) to the position before the module's last
// definition or deploy; give up (pause); or stop, when that last change
// was itself a revert after a failed roll-out (never a revert loop).
func (h *Handler) rolloutsFailed(ctx context.Context, d Delivery) ([]events.RolloutFailed, error) {
	if d.Workload == nil || len(d.Workload.Rollouts) == 0 {
		return nil, nil
	}
	by := map[string][]events.RolloutFailure{}
	for _, f := range d.Workload.Rollouts {
		by[f.Module] = append(by[f.Module], f)
	}
	var out []events.RolloutFailed
	for _, module := range slices.Sorted(maps.Keys(by)) {
		rf := events.RolloutFailed{Node: d.Report.Node, Module: module, Declaration: d.Report.Declaration, Containers: by[module], Action: events.RolloutGaveUp}
		m, err := h.Module(ctx, module)
		if err != nil {
			return nil, err
		}
		if u := m.Spec.Update; u != nil && u.OnFailure == events.UpdateRevert {
			evs, err := h.store.ReadStream(ctx, events.ModuleStream(module), 0, 0)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", events.ModuleStream(module), err)
			}
			var last events.Event
			for _, ev := range evs {
				if ev.Type == events.TypeModuleDefined || ev.Type == events.TypeModuleDeployed {
					last = ev
				}
			}
			switch {
			case strings.HasPrefix(last.Causation, RolloutCausePrefix):
				rf.Action = events.RolloutStopped
			case last.Position > 1:
				rf.Action, rf.RevertTo = events.RolloutRevert, last.Position-1
			}
		}
		out = append(out, rf)
	}
	return out, nil
}

func lateID(apply uuid.UUID) uuid.UUID {
	id := apply
	id[15] ^= 0x01
	return id
}
