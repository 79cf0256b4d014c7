package commands

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"meshplane/api"
	"meshplane/declaration"
	"meshplane/events"
)

// Moment is a point of the history a revert goes back to: a store position
// (the mesh as it stood after the event at that position, or the last one
// before it) or, when At is set, a time (after the last event at or before
// it).
type Moment struct {
	Position uint64
	At       time.Time // UTC; zero for a position
}

// ParseMoment reads TIME|POSITION (api.ReadMoment): a whole number is a
// store position, anything else a time in RFC 3339. What is neither is a
// rejection (invalid) naming both forms.
func ParseMoment(s string) (Moment, error) {
	p, at, err := api.ReadMoment(s)
	return Moment{Position: p, At: at}, err
}

// BeforeFirst is the one refusal of a moment before the first event
// (api.BeforeFirst). It is a *Rejection.
func BeforeFirst(moment string, first time.Time) error { return api.BeforeFirst(moment, first) }

// String is m as ParseMoment reads it: the position, or the time in RFC
// 3339 (UTC, nanoseconds kept).
func (m Moment) String() string {
	if m.At.IsZero() {
		return strconv.FormatUint(m.Position, 10)
	}
	return m.At.Format(time.RFC3339Nano)
}

// Includes reports whether ev is at or before m. A stream is folded up to
// its first event m does not include: by time, an event stamped after m
// ends the moment even if a later one carries an earlier time.
func (m Moment) Includes(ev events.Event) bool {
	if m.At.IsZero() {
		return ev.Position <= m.Position
	}
	return !ev.At.After(m.At)
}

// RevertModule makes a module again what it was at a moment: its
// definition then, and the builds it ran then (mesh revert). Done when it
// is defined so and runs them. Its events carry the cause RevertCause.
type RevertModule struct {
	Module string
	To     Moment
	// After is the id of the rollout.failed this revert answers (the
	// controller's, on_failure: revert); "" for mesh revert.
	After string
}

func (c RevertModule) Stream() string { return events.ModuleStream(c.Module) }
func (RevertModule) command()         {}

// RevertCause is the causation of the events a revert appends: the command
// that caused them, "revert forge --to 41" (or "--to" a time in RFC 3339).
// The events it names stay as they are: a revert adds, it never rewrites.
//
// A revert after a failed roll-out names it instead:
// "rollout.failed:<its event id>" (RolloutCausePrefix).
func RevertCause(c RevertModule) string {
	if c.After != "" {
		return RolloutCausePrefix + c.After
	}
	return "revert " + c.Module + " --to " + c.To.String()
}

// Then is a module as its stream stood at a moment: folded from its events
// at or before it (ModuleAt reads them).
type Then struct {
	Module Module // as it stood; Defined false when it was not defined then
	// Position and At are those of the module's last event at or before
	// the moment; 0 and zero when it had none.
	Position uint64
	At       time.Time
	// First is the position of the stream's first module.defined, at any
	// time (0 when it has none), and FirstAt its time: what a refusal names.
	First   uint64
	FirstAt time.Time
}

// FoldThen folds a module's stream (in version order, as stored) up to
// to: pure, the payloads decoded by decode (nil for a type it does not
// know: it only advances the version).
func FoldThen(evs []events.Event, to Moment, decode func(events.Event) (events.Payload, error)) (Then, error) {
	var t Then
	folding := true
	for _, ev := range evs {
		if ev.Type == events.TypeModuleDefined && t.First == 0 {
			t.First, t.FirstAt = ev.Position, ev.At
		}
		if folding = folding && to.Includes(ev); !folding {
			continue
		}
		var p events.Payload
		if moduleDecodes(ev.Type) {
			var err error
			if p, err = decode(ev); errors.Is(err, events.ErrUnknownType) {
				p = nil
			} else if err != nil {
				return Then{}, fmt.Errorf("read %s #%d: %w", ev.Stream, ev.Version, err)
			}
		}
		t.Module = EvolveModule(t.Module, ev, p)
		t.Position, t.At = ev.Position, ev.At
	}
	return t, nil
}

// ModuleAt reads a module's stream and folds it up to to (FoldThen). A
// moment that has not been yet (a position past the store's last event, a
// time after the handler's clock) is a rejection (invalid): a revert goes
// back.
func (h *Handler) ModuleAt(ctx context.Context, name string, to Moment) (Then, error) {
	if err := checkName("module", name); err != nil {
		return Then{}, err
	}
	if to.At.IsZero() {
		head, err := h.store.Head(ctx)
		if err != nil {
			return Then{}, fmt.Errorf("commands: read the store's head: %w", err)
		}
		if to.Position > head {
			return Then{}, reject(CodeInvalid, "position %d is past the store's last event (%d): a revert goes back to a moment that has been", to.Position, head)
		}
	} else if now := h.now(); to.At.After(now) {
		return Then{}, reject(CodeInvalid, "%s is after now (%s): a revert goes back to a moment that has been", to, now.Format(time.RFC3339))
	}
	stream := events.ModuleStream(name)
	evs, err := h.store.ReadStream(ctx, stream, 0, 0)
	if err != nil {
		return Then{}, fmt.Errorf("commands: read %s: %w", stream, err)
	}
	t, err := FoldThen(evs, to, h.reg.Decode)
	if err != nil {
		return Then{}, fmt.Errorf("commands: %w", err)
	}
	if t.Module.Name == "" {
		t.Module.Name = name
	}
	return t, nil
}

// Builds are the builds the module ran then, by artifact name.
func (t Then) Builds() []events.Build {
	var out []events.Build
	for _, name := range slices.Sorted(maps.Keys(t.Module.Deployed)) {
		out = append(out, events.Build{Name: name, Digest: t.Module.Deployed[name]})
	}
	return out
}

// decideRevert is Decide for a RevertModule: s.Module is the module now,
// s.Then as it stood at c.To. It defines the module as it was defined then
// (when its definition differs now, or it is not defined now: a revert to a
// moment before a removal defines it again) and deploys the builds it ran
// then that it does not run now, in one append; nothing when it is already
// so. A moment when the module was not defined is refused, naming when it
// was.
func decideRevert(s State, c RevertModule) ([]events.Payload, error) {
	then := s.Then.Module
	if !then.Defined {
		switch {
		case s.Then.First == 0:
			return nil, reject(CodeModuleUnknown, "cannot revert module %s: it was never defined", short(c.Module))
		case s.Then.First > s.Then.Position:
			return nil, reject(CodeModuleUnknown, "cannot revert module %s to %s: it was not defined yet then (first defined at position %d, %s)",
				c.Module, c.To, s.Then.First, s.Then.FirstAt.Format(time.RFC3339))
		}
		return nil, reject(CodeModuleUnknown, "cannot revert module %s to %s: it was not defined then", c.Module, c.To)
	}
	if err := ValidateSpec(then.Spec); err != nil {
		return nil, reject(CodeInvalid, "cannot revert module %s to %s: its definition then is not valid now: %v", c.Module, c.To, err)
	}
	var out []events.Payload
	if !s.Module.Defined || declaration.Digest(s.Module.Spec) != declaration.Digest(then.Spec) {
		for _, r := range then.Spec.Routes {
			if other, ok := s.Claims[r]; ok && other != c.Module {
				return nil, reject(CodeRouteClaimed, "cannot revert module %s to %s: it routed %s then, which module %s now routes", c.Module, c.To, r, other)
			}
		}
		out = append(out, events.ModuleDefined{Module: c.Module, Spec: then.Spec})
	}
	var builds []events.Build
	for _, b := range s.Then.Builds() {
		if s.Module.Deployed[b.Name] != b.Digest {
			builds = append(builds, b)
		}
	}
	if len(builds) > 0 {
		out = append(out, events.ModuleDeployed{Module: c.Module, Builds: builds, By: events.DeployedByRevert})
	}
	return out, nil
}
