package projections

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"meshplane/events"
)

// Sentinel errors of the read side. Callers branch on them with errors.Is.
var (
	// ErrUnknownNode means a query named a node that no folded event
	// mentions. It is a statement about the events folded so far, which may
	// lag the store (see Runner.WaitFor).
	ErrUnknownNode = errors.New("unknown node")

	// ErrUnknownDeclaration means a query named a declaration that was never
	// composed for that node.
	ErrUnknownDeclaration = errors.New("unknown declaration")

	// ErrUnattributed means a projection could not tell which node an event
	// concerns (no node in the payload, and a stream that is not a node's).
	// The runner counts and skips such an event for that projection.
	ErrUnattributed = errors.New("event names no node")

	// ErrTrimmed means a roster query needs declarations older than those a
	// snapshot keeps (the roster was loaded from one): fold from position 0
	// (a rebuild) or ask the controller, whose projections are whole.
	ErrTrimmed = errors.New("declaration history not loaded (projections from a snapshot)")
)

// Projection is one view of the event stream.
//
// Fold is called with every event the registry knows, in position order, and
// its decoded payload; it ignores the types it does not use (returning nil).
// It folds the payload, never the event's Data: a catch-up from a store that
// scans (events.Scanner) drops the bytes once they are decoded.
// An error means this projection skipped the event (it is counted by the
// runner, never fatal). Fold and Reset are called by one goroutine at a time.
//
// MarshalJSON is a deterministic serialization of the state: maps are
// written with sorted keys and slices in fold order, so equal event streams
// give equal bytes. It is what rebuild equality and the CLI compare and show.
type Projection interface {
	Name() string
	Fold(ev events.Event, p events.Payload) error
	Reset()
	MarshalJSON() ([]byte, error)
}

// Set is one of every projection, wired together (status reads churn).
type Set struct {
	Roster   *Roster
	Status   *Status
	Holds    *Holds
	Timeline *Timeline
	Churn    *Churn
}

// New returns a Set of empty projections.
func New() *Set {
	c := NewChurn()
	t := NewTimeline()
	t.churn = c
	return &Set{
		Roster:   NewRoster(),
		Status:   NewStatus(c),
		Holds:    NewHolds(),
		Timeline: t,
		Churn:    c,
	}
}

// All returns the projections of s in fold order (churn before status, so a
// status read right after a fold already sees that event's churn).
func (s *Set) All() []Projection {
	return []Projection{s.Churn, s.Roster, s.Status, s.Holds, s.Timeline}
}

// Small returns the projections of s but the timeline, in fold order: those
// small per node, which a snapshot holds whole (see SaveSnapshot). A local
// read that needs no timeline feeds only these.
func (s *Set) Small() []Projection {
	return []Projection{s.Churn, s.Roster, s.Status, s.Holds}
}

// Incomplete reports whether a projection of s, loaded from a snapshot that
// kept only each node's latest declarations, has since folded an event
// naming an older one: its state may then differ from a rebuild's, and the
// caller must rebuild (snapstore.Open does).
func (s *Set) Incomplete() bool {
	s.Status.mu.RLock()
	for _, n := range s.Status.nodes {
		if n.decls.missed {
			s.Status.mu.RUnlock()
			return true
		}
	}
	s.Status.mu.RUnlock()
	s.Churn.mu.RLock()
	for _, n := range s.Churn.nodes {
		if n.decls.missed {
			s.Churn.mu.RUnlock()
			return true
		}
	}
	s.Churn.mu.RUnlock()
	s.Timeline.mu.RLock()
	defer s.Timeline.mu.RUnlock()
	for _, x := range s.Timeline.decls {
		if x.missed {
			return true
		}
	}
	return false
}

// MarshalJSON serializes every projection of s into one object keyed by
// projection name: the snapshot that "the projections equal those before the
// rebuild" compares.
func (s *Set) MarshalJSON() ([]byte, error) { return Snapshot(s.All()...) }

// Snapshot serializes ps into one JSON object keyed by projection name, in
// name order.
func Snapshot(ps ...Projection) ([]byte, error) {
	m := make(map[string]json.RawMessage, len(ps))
	for _, p := range ps {
		b, err := p.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("projections: snapshot %s: %w", p.Name(), err)
		}
		m[p.Name()] = b
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("projections: snapshot: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// nodePrefix starts the name of every node stream (events.NodeStream).
const nodePrefix = "node-"

// streamNode returns the node a node stream belongs to, or "".
func streamNode(stream string) string {
	if n, ok := strings.CutPrefix(stream, nodePrefix); ok {
		return n
	}
	return ""
}

// nodeOf returns the node an event concerns: the payload's node when it
// names one, else the node of its stream, else "".
func nodeOf(ev events.Event, p events.Payload) string {
	var n string
	switch v := p.(type) {
	case events.NodeRegistered:
		n = v.Node
	case events.NodeAdopted:
		n = v.Node
	case events.NodeSettingSet:
		n = v.Node
	case events.ModuleAssigned:
		n = v.Node
	case events.ModuleReleased:
		n = v.Node
	case events.ModuleTaken:
		n = v.Node
	case events.DeclarationComposed:
		n = v.Node
	case events.DeclarationComposeFailed:
		n = v.Node
	case events.DeclarationPushed:
		n = v.Node
	case events.DeclarationPushFailed:
		n = v.Node
	case events.ApplyReported:
		n = v.Node
	case events.ReportDeliveredLate:
		n = v.Node
	case events.ReportRefused:
		n = v.Node
	case events.ReportThrottled:
		n = v.Node
	case events.NodeWentSilent:
		n = v.Node
	case events.NodeCameBack:
		n = v.Node
	case events.NodeRemoved:
		n = v.Node
	}
	if n == "" {
		n = streamNode(ev.Stream)
	}
	return n
}

// unattributed is the error a fold returns for an event it cannot place.
func unattributed(proj string, ev events.Event) error {
	return fmt.Errorf("projections: %s: %s at position %d: %w", proj, ev.Type, ev.Position, ErrUnattributed)
}

// marshal encodes v without HTML escaping (names such as "a<b" stay legible
// in snapshots); encoding/json sorts map keys, so output is deterministic.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// sameStrings reports whether a and b hold the same strings in order.
func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
