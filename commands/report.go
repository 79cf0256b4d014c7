package commands

// The report door: what an apply report must be for the controller to
// record it, and the record of one it refuses. docs/design.md, "The door": a
// node can send only what is true of itself (its own stream, a declaration
// pushed to it, sane counts and times); what fails is refused for good and
// recorded as such (report.refused), never a crash, never redelivered for
// ever, never half-written.
//
// What the door checks of a report, in this order (RecordApply):
//
//   - it has an apply id, and its node is registered (a report of a node
//     that is not is a *Rejection with CodeNodeUnknown: there is no stream
//     to record anything on);
//   - its attempts are not below zero, its correlation fits an envelope:
//     malformed;
//   - its names and messages have the form and the bounds a report may
//     have (events.ApplyReported.CheckForm): too-large past a bound,
//     malformed otherwise (not UTF-8, a NUL, a held_since that is no UUID);
//   - its counts agree (events.ApplyReported.CheckCounts): bad-counts;
//   - its apply time is no later than the controller's clock when it
//     received it (Delivery.ReceivedAt) plus events.MaxReportSkew: bad-time
//     (a delivery with no receive time, a simulation's, in process, is not
//     compared with a clock, and its clock is not read);
//   - its declaration was composed for this node and pushed to it (a push
//     recorded, or the node's latest, whose push may not be recorded yet):
//     unknown-declaration; and the apply time is no earlier than that
//     compose less events.MaxReportSkew: bad-time; its sent is the
//     declaration's number of resources and no count is larger, it
//     created, replaced, updated and held only the declaration's
//     resources, and removed (or failed) only what a declaration of the
//     node had: bad-counts. The facts come from ReportFacts (the
//     controller's projections); a Handler without them (a simulation, a
//     test) passes over these;
//   - its held_since, if any, names an earlier report of the node that
//     carried a held list (events.HeldOf, through the store's id index):
//     malformed (RecordApply: a store read, not in CheckReport);
//   - its payload fits the store (events.MaxDataSize): too-large;
//   - its apply id is new, or the same report again (a no-op, whatever
//     its age: an id older than the node's recent applies is read through
//     the store's id index): an id stored with other content, or the id of
//     another event, is apply-id-conflict.
//
// The bus checks the rest before it decodes (size, strict JSON: no key
// twice, version, node equal to the subject's). The bounds are listed
// where the wire format is (bus.Report).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"meshplane/declaration"
	"meshplane/events"
	"meshplane/wire"
)

// ErrRefused means an apply report was refused for good at the door. The
// concrete error is a *Refusal; it is ErrRejected too.
var ErrRefused = errors.New("report refused")

// Refusal is a report the door refused: the reason (one of
// events.RefusedReasons) and a sentence naming what was wrong.
type Refusal struct {
	Reason string
	Msg    string
}

func (r *Refusal) Error() string { return r.Msg }

// RefusalReason is r's reason (what the bus consumer logs: bus.ReasonOf).
func (r *Refusal) RefusalReason() string { return r.Reason }

// Is makes errors.Is(err, ErrRefused) and errors.Is(err, ErrRejected) true.
func (r *Refusal) Is(target error) bool { return target == ErrRefused || target == ErrRejected }

func refuse(reason, format string, args ...any) error {
	return &Refusal{Reason: reason, Msg: fmt.Sprintf(format, args...)}
}

// DeclarationFacts is what a node's stream holds of a declaration a report
// names.
type DeclarationFacts struct {
	Composed   bool      // a declaration.composed of this id is on the node's stream
	ComposedAt time.Time // its time (the last compose of the id)
	Pushed     bool      // a push of it is recorded: declaration.pushed, or declaration.push-failed (a put whose acknowledgement was lost may have reached the bus)
	Latest     bool      // it is the node's last composed declaration: its push may be on its way, not yet recorded
	// Resources names the declaration's resources (its compose's), when
	// Counted says the facts know them: a report must say it was sent
	// that many, count no more, and create, replace, update and hold only
	// them.
	Resources []string
	Counted   bool
	// Declared says whether a resource of that name was in a declaration
	// composed for the node, this one or an earlier one: what a report may
	// say it removed, or failed to remove. nil: not known, not checked.
	Declared func(name string) bool
}

// ReportFacts is what the door reads beyond the node's own aggregate: the
// controller answers from its projections (folded from the store, synced
// when they do not know a declaration yet).
type ReportFacts interface {
	Declaration(ctx context.Context, node, declaration string) (DeclarationFacts, error)
}

// WithReportFacts gives RecordApply the facts it checks a report's
// declaration and time against. Without them it checks only what needs
// none (see the door above).
func WithReportFacts(f ReportFacts) Option { return func(h *Handler) { h.facts = f } }

// CheckReport is the door's pure check of one delivery, against now (the
// controller's clock when it received the report; zero: not compared with
// a clock) and the facts about its declaration (nil: unknown, those checks
// are passed over). It returns a *Refusal, or nil.
func CheckReport(d Delivery, decl *DeclarationFacts, now time.Time) error {
	r := d.Report
	id := d.ApplyID
	switch {
	case id == uuid.Nil:
		return refuse(events.RefusedMalformed, "apply report from %s has no apply id", short(r.Node))
	case d.AppliedAt.IsZero():
		return refuse(events.RefusedMalformed, "apply report %s from %s has no apply time", id, short(r.Node))
	case d.Attempts < 0:
		return refuse(events.RefusedMalformed, "apply report %s from %s: %d attempts", id, short(r.Node), d.Attempts)
	case len(d.Correlation) > events.MaxNameSize:
		return refuse(events.RefusedMalformed, "apply report %s from %s: a correlation of %d bytes, over %d", id, short(r.Node), len(d.Correlation), events.MaxNameSize)
	}
	if err := r.CheckForm(); err != nil {
		reason := events.RefusedMalformed
		if errors.Is(err, events.ErrTooLong) {
			reason = events.RefusedTooLarge
		}
		return refuse(reason, "apply report %s from %s: %v", id, short(r.Node), err)
	}
	if err := r.CheckCounts(); err != nil {
		return refuse(events.RefusedCounts, "apply report %s from %s: %v", id, short(r.Node), err)
	}
	if err := checkWorkload(d.Workload, r); err != nil {
		return refuse(events.RefusedMalformed, "apply report %s from %s: %v", id, short(r.Node), err)
	}
	if latest := now.Add(events.MaxReportSkew); !now.IsZero() && d.AppliedAt.After(latest) {
		return refuse(events.RefusedTime, "apply report %s from %s: applied at %s, later than the controller's clock (%s) allows, by more than %v",
			id, short(r.Node), stamp(d.AppliedAt), stamp(now), events.MaxReportSkew)
	}
	if decl == nil {
		return nil
	}
	switch {
	case !decl.Composed:
		return refuse(events.RefusedDecl, "apply report %s from %s: declaration %s was never composed for %s",
			id, short(r.Node), quote(r.Declaration), short(r.Node))
	case !decl.Pushed && !decl.Latest:
		return refuse(events.RefusedDecl, "apply report %s from %s: declaration %s was never pushed to it", id, short(r.Node), quote(r.Declaration))
	}
	if earliest := decl.ComposedAt.Add(-events.MaxReportSkew); d.AppliedAt.Before(earliest) {
		return refuse(events.RefusedTime, "apply report %s from %s: applied at %s, before its declaration %s was composed (%s), by more than %v",
			id, short(r.Node), stamp(d.AppliedAt), short(r.Declaration), stamp(decl.ComposedAt), events.MaxReportSkew)
	}
	if err := checkAgainst(r, decl); err != nil {
		return refuse(events.RefusedCounts, "apply report %s from %s: %v", id, short(r.Node), err)
	}
	if decl.Counted {
		has := make(map[string]bool, len(decl.Resources))
		for _, name := range decl.Resources {
			has[name] = true
		}
		for _, c := range d.Workload.List() {
			if !has[c.Container] {
				return refuse(events.RefusedCounts, "apply report %s from %s: workload: container %s, which declaration %s does not have",
					id, short(r.Node), quote(c.Container), short(r.Declaration))
			}
		}
		if d.Workload != nil {
			for _, f := range d.Workload.Rollouts {
				if !has[f.Container] {
					return refuse(events.RefusedCounts, "apply report %s from %s: workload: failed roll-out of container %s, which declaration %s does not have",
						id, short(r.Node), quote(f.Container), short(r.Declaration))
				}
			}
		}
	}
	return nil
}

// checkWorkload checks the form of the workload changes a report carries
// (wire.Workload.Check): each of the report's node and of the declaration
// it names.
func checkWorkload(w *wire.Workload, r events.ApplyReported) error {
	if err := w.Check(r.Node); err != nil {
		return err
	}
	for i, c := range w.List() {
		if c.Declaration != r.Declaration {
			return fmt.Errorf("workload: changes[%d] (%s): declaration %s, the report's is %s", i, quote(c.Container), quote(c.Declaration), quote(r.Declaration))
		}
	}
	return nil
}

// checkAgainst says what r says that its declaration contradicts (decl's
// Resources and Declared, when known): a count other than the
// declaration's, or larger; a resource created, replaced, updated or held
// that it does not have; one removed, or failed, that no declaration of
// the node had.
func checkAgainst(r events.ApplyReported, decl *DeclarationFacts) error {
	if decl.Counted {
		n := len(decl.Resources)
		switch {
		case r.Sent != n:
			return fmt.Errorf("sent %d, but declaration %s has %d resource(s)", r.Sent, short(r.Declaration), n)
		case r.Applied > n, r.Unchanged > n:
			return fmt.Errorf("%d applied, %d unchanged, of the %d resource(s) of declaration %s", r.Applied, r.Unchanged, n, short(r.Declaration))
		case r.Applied+len(r.Held)+len(r.Failed) > n+1:
			return fmt.Errorf("%d applied, %d held and %d failed, of the %d resource(s) of declaration %s (and the hosts file)",
				r.Applied, len(r.Held), len(r.Failed), n, short(r.Declaration))
		}
		has := make(map[string]bool, n)
		for _, name := range decl.Resources {
			has[name] = true
		}
		lists := []struct {
			what  string
			names []string
		}{{"created", r.Created}, {"replaced", replacedNames(r.Replaced)}, {"updated", replacedNames(r.Updated)}, {"held", heldNames(r.Held)}}
		for _, l := range lists {
			for _, name := range l.names {
				if !has[name] {
					return fmt.Errorf("%s %s, which declaration %s does not have", l.what, quote(name), short(r.Declaration))
				}
			}
		}
		for _, f := range r.Failed {
			if !has[f.Name] && f.Name != declaration.HostsPath && (decl.Declared == nil || !decl.Declared(f.Name)) {
				return fmt.Errorf("failed %s, which no declaration of %s has had", quote(f.Name), short(r.Node))
			}
		}
	}
	if decl.Declared != nil {
		for _, name := range r.Removed {
			if !decl.Declared(name) {
				return fmt.Errorf("removed %s, which no declaration of %s has had", quote(name), short(r.Node))
			}
		}
	}
	return nil
}

func replacedNames(rs []events.Replaced) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Name
	}
	return out
}

func heldNames(hs []events.Held) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Name
	}
	return out
}

// stamp is a time for a message.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// RefusedReport is a report message the door refused, as RecordRefusal
// records it: never its bytes, their digest and size.
type RefusedReport struct {
	Node   string // the node of the subject it came on
	Reason string // one of events.RefusedReasons
	Detail string // the door's sentence
	Size   int    // of the message's bytes
	Digest string // "sha256:<hex>" of the message's bytes
	// What the message named, when it decoded that far.
	ApplyID     uuid.UUID
	Declaration string
	Correlation string
}

// refusalSpace is the name space of the ids RefusalID makes.
var refusalSpace = uuid.MustParse("9b0cf3f2-6d65-5368-8a72-656675736564")

// RefusalID is the id of the report.refused event of a message of node
// whose bytes have the given digest: a name-based UUID (version 5) of the
// two, so that the same message refused again is the same event.
func RefusalID(node, digest string) uuid.UUID {
	return uuid.NewSHA1(refusalSpace, []byte(node+"\x00"+digest))
}

// RecordRefusal appends report.refused on the node's stream, with an id
// derived from the node and the message's digest (RefusalID; from the
// apply id when the digest is not known): the same message refused again
// appends nothing, and returns no event. A node that is not registered has
// no stream: nothing is appended, and the error is a *Rejection with
// CodeNodeUnknown.
func (h *Handler) RecordRefusal(ctx context.Context, r RefusedReport) ([]events.Event, error) {
	if r.Node == "" {
		return nil, reject(CodeNodeUnknown, "refused report of no node")
	}
	n, err := h.Node(ctx, r.Node)
	if err != nil {
		return nil, fmt.Errorf("commands: record refusal from %s: %w", r.Node, err)
	}
	if !n.Registered {
		return nil, reject(CodeNodeUnknown, "refused report from %s: node %s is not registered", r.Node, r.Node)
	}
	key := r.Digest
	if key == "" {
		key = "apply:" + r.ApplyID.String()
	}
	p := events.ReportRefused{
		Node: r.Node, Reason: r.Reason, Detail: bounded(r.Detail, events.MaxRefusalDetail),
		Digest: r.Digest, Size: r.Size, Declaration: keep(r.Declaration),
	}
	meta := events.Meta{ID: RefusalID(r.Node, key), At: h.now(), Actor: "controller"}
	if r.ApplyID != uuid.Nil {
		p.ApplyID, meta.Causation = r.ApplyID.String(), r.ApplyID.String()
	}
	if c := r.Correlation; len(c) <= events.MaxNameSize && utf8.ValidString(c) {
		meta.Correlation = c
	}
	stream := events.NodeStream(r.Node)
	ev, err := h.reg.New(stream, p, meta)
	if err != nil {
		return nil, err
	}
	stored, err := h.store.Append(ctx, stream, events.Any, ev)
	if errors.Is(err, events.ErrIDConflict) {
		return nil, nil // refused and recorded before, at another time
	}
	if err != nil {
		return nil, fmt.Errorf("commands: record refusal from %s: %w", r.Node, err)
	}
	return stored, nil
}

// Throttled is what RecordThrottled records: a node's reports deferred by
// its rate limit over a window.
type Throttled struct {
	Node     string
	Deferred uint64
	From, To time.Time
	Rate     float64 // reports a second
	Burst    int
}

// RecordThrottled appends report.throttled on the node's stream. A node
// that is not registered has no stream: a *Rejection with CodeNodeUnknown.
func (h *Handler) RecordThrottled(ctx context.Context, t Throttled) ([]events.Event, error) {
	if t.Node == "" {
		return nil, reject(CodeNodeUnknown, "throttled reports of no node")
	}
	n, err := h.Node(ctx, t.Node)
	if err != nil {
		return nil, fmt.Errorf("commands: record throttled reports of %s: %w", t.Node, err)
	}
	if !n.Registered {
		return nil, reject(CodeNodeUnknown, "throttled reports of %s: node %s is not registered", t.Node, t.Node)
	}
	stream := events.NodeStream(t.Node)
	evs, err := h.events(stream, []events.Payload{events.ReportThrottled{
		Node: t.Node, Deferred: t.Deferred, From: t.From.UTC(), To: t.To.UTC(), Rate: t.Rate, Burst: t.Burst,
	}}, events.Meta{Actor: "controller"})
	if err != nil {
		return nil, err
	}
	stored, err := h.store.Append(ctx, stream, events.Any, evs...)
	if err != nil {
		return nil, fmt.Errorf("commands: record throttled reports of %s: %w", t.Node, err)
	}
	return stored, nil
}

// bounded is s cut to at most n bytes, on a rune boundary, with "…" when
// cut; invalid UTF-8 is replaced.
func bounded(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// keep is what a refusal keeps of a name the message gave: the name when it
// is short valid UTF-8, else nothing.
func keep(s string) string {
	if len(s) > events.MaxRefusalDetail || !utf8.ValidString(s) {
		return ""
	}
	return s
}
