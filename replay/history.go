// Package replay runs an exported history again against this build: it
// reads from the history what the world did (the operators' commands,
// the builds recorded and deployed, the store's failed reads, the bus
// cut, containers removed from outside), re-runs that in a sandbox (a
// memory store, simulated nodes and bus, a simulated clock: package sim)
// through today's commands, compose, controller pass and agent, pass by
// pass, and says where today's run diverges from the recorded one:
// declarations composed differently, resources replaced or not, holds
// that differ, churn episodes that open in one and not the other.
//
// It is how a fix is proven (docs/design.md rule 7: exiting a loop by luck is
// not a fix): the incident, replayed, does not happen.
//
// A pass is what the recorded history shows as one round of the
// controller's pass and the nodes' applies: the operators' commands
// before it, then the controller's events (declaration.composed,
// compose-failed, pushed, push-failed), then each node's apply.reported,
// up to the next command, or the next controller event or apply of a
// node that already applied in the round. The controller's events of a
// pass over every node name it (events.PassOf, in histories recorded
// since they do): a round is then one pass's events, and the order of
// events decides only for those that name none. The sandbox runs each
// round as the controller runs a pass (controller.Controller.PushChanged:
// every node composed, what changed pushed) and then applies on the nodes
// that applied in it, in the recorded order.
//
// Run reads the history file once, as mesh import reads it
// (commands/importfile: a line over its bound refuses the file, a signal
// stops the read), and the sandbox lives in memory: nothing is written
// anywhere but the temporary copy of a file that can be read only once (a
// pipe, /dev/stdin), removed when the history is read.
package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"meshplane/commands/importfile"
	"meshplane/events"
	"meshplane/events/memstore"
)

// ErrHistory marks a history file that cannot be replayed: it does not
// read, or it holds lines mesh import would refuse.
var ErrHistory = errors.New("not a history to replay")

// history is a recorded history, read back: its events in a memory store
// (positions from 1, in the file's order), each one's position in the
// file, and its rounds.
type history struct {
	store   *memstore.Store
	events  []events.Event // as stored, position i+1 at i
	filePos []uint64       // the file's position of events[i] (0 when the line had none)
	rounds  []round
}

// readHistory checks the file at path as mesh import checks it (the
// door: commands/importfile), then reads its events up to file position
// until (0: all) into a memory store.
func readHistory(ctx context.Context, path string, reg *events.Registry, until uint64) (*history, error) {
	// Check reads a file that can be read only once (a pipe) into a copy
	// that Lines reads again.
	c, err := importfile.Check(ctx, path, reg, importfile.Store{None: true})
	if err != nil {
		return nil, fmt.Errorf("replay: %w: %w", ErrHistory, err)
	}
	defer c.Close()
	if bad := c.Listed(5); len(bad) > 0 {
		return nil, fmt.Errorf("replay %s: %w: mesh import would refuse it: %s", path, ErrHistory, strings.Join(bad, "; "))
	}
	// The lines Check read, once more: from its copy when the file can be
	// read only once (a pipe), bounded and stopped by ctx as it was.
	h := &history{store: memstore.New()}
	errUntil := errors.New("until")
	err = c.Lines(ctx, func(n int, line []byte) error {
		ev, derr := events.UnmarshalJSONLineStrict(line)
		if derr != nil {
			return fmt.Errorf("replay %s: line %d: %w: %w", path, n, ErrHistory, derr)
		}
		if until > 0 && ev.Position > until {
			return errUntil
		}
		pos := ev.Position
		stored, aerr := h.store.Append(ctx, ev.Stream, events.Any, ev)
		if aerr != nil {
			return fmt.Errorf("replay %s: line %d: %w", path, n, aerr)
		}
		h.events = append(h.events, stored...)
		h.filePos = append(h.filePos, pos)
		return nil
	})
	if err != nil && !errors.Is(err, errUntil) {
		h.store.Close()
		return nil, err
	}
	h.rounds = splitRounds(reg, h.events)
	return h, nil
}

// round is one pass of the recorded history.
type round struct {
	ops     []events.Event // operator commands, run before its push
	ctl     []events.Event // the controller's events of its push
	applies []events.Event // apply.reported delivered in it, in order (late ones too)
	applied map[string]bool
	// apply lists the nodes that applied in it, by the agents' time: those
	// whose report was delivered in it, and those whose report was kept in
	// an outbox and delivered late (report.delivered-late), in a later one.
	apply    []nodeAt
	late     map[string]bool      // nodes whose late reports were delivered in it
	staged   map[string]bool      // "STAGE NODE": the controller's stages (ctlStage) a node went through in it
	ranLate  map[string]bool      // nodes with a late report delivered in it of an apply that ran in it (by the agent's clock)
	sent     bool                 // a send of any node is in it: in whole passes, every compose of a pass comes before its sends
	pass     string               // the pass its controller's events name (events.PassOf), "" when they name none
	flushed  map[string]time.Time // node → when its kept reports were last delivered in it
	from, to uint64               // positions in the store: (from, to]
	at       time.Time            // of its first event
}

// nodeAt is a node's apply at a time.
type nodeAt struct {
	node string
	at   time.Time
	late bool         // its report was delivered late
	ev   events.Event // its apply.reported
}

func (r *round) empty() bool { return len(r.ops)+len(r.ctl)+len(r.applies) == 0 }

// inputTypes are the operators' commands a replay runs again.
var inputTypes = map[string]bool{
	events.TypeNodeRegistered: true, events.TypeNodeAdopted: true, events.TypeNodeSettingSet: true,
	events.TypeModuleDefined: true, events.TypeModuleAssigned: true, events.TypeModuleReleased: true,
	events.TypeModuleTaken: true, events.TypeArtifactRecorded: true, events.TypeModuleDeployed: true,
	events.TypeSecretSet: true, // sealed as recorded: the sandbox never opens it
}

// controlTypes are the controller's events of a push.
var controlTypes = map[string]bool{
	events.TypeDeclarationComposed: true, events.TypeDeclarationComposeFailed: true,
	events.TypeDeclarationPushed: true, events.TypeDeclarationPushFailed: true,
}

// The stages of a controller's pass a controller event records.
const (
	stageCompose = "compose" // declaration.composed or compose-failed
	stageSend    = "send"    // declaration.pushed or push-failed
)

// ctlStage is the stage of a controller's pass a controller event records.
func ctlStage(typ string) string {
	if typ == events.TypeDeclarationComposed || typ == events.TypeDeclarationComposeFailed {
		return stageCompose
	}
	return stageSend
}

// isInput reports whether ev is an operator's command to run again: a
// deploy only when an operator made it (a roll-out's or a first build's
// follows from the build, which is run again).
func isInput(reg *events.Registry, ev events.Event) bool {
	if !inputTypes[ev.Type] {
		return false
	}
	if ev.Type != events.TypeModuleDeployed {
		return true
	}
	p, err := events.DecodeAs[events.ModuleDeployed](reg, ev)
	return err == nil && p.By == events.DeployedByOperator
}

// nodeOf is the node of a node stream's event ("" for another stream).
func nodeOf(ev events.Event) string {
	n, ok := strings.CutPrefix(ev.Stream, "node-")
	if !ok {
		return ""
	}
	return n
}

// splitRounds cuts evs into rounds (the package doc says how).
func splitRounds(reg *events.Registry, evs []events.Event) []round {
	// Reports delivered late belong to the round of their apply (by the
	// agent's time), not to the one they were delivered in.
	late := map[string]bool{}
	for _, ev := range evs {
		if ev.Type == events.TypeReportDeliveredLate {
			if v, err := events.DecodeAs[events.ReportDeliveredLate](reg, ev); err == nil {
				late[v.ApplyID] = true
			}
		}
	}
	// When the late reports' applies ran, by the agents' clocks.
	var lateAt []time.Time
	for _, ev := range evs {
		if ev.Type == events.TypeApplyReported && late[applyID(reg, ev)] {
			lateAt = append(lateAt, ev.At)
		}
	}
	slices.SortFunc(lateAt, time.Time.Compare)
	// appliedBetween reports whether an apply whose report was kept ran
	// after a and before b.
	appliedBetween := func(a, b time.Time) bool {
		i, _ := slices.BinarySearchFunc(lateAt, a, time.Time.Compare)
		for i < len(lateAt) && !lateAt[i].After(a) {
			i++
		}
		return i < len(lateAt) && lateAt[i].Before(b)
	}
	// A compose after an apply begins the next pass only in a history of
	// whole passes (the controller's pass: every node composed and sent,
	// then the applies). A pass of one node at a time (mesh up --passes,
	// the scenarios' "N passes run on"), composes a node after the
	// previous node's apply within one pass.
	whole := wholePasses(evs)
	var lateApplies []nodeAt
	var out []round
	cur := round{applied: map[string]bool{}, late: map[string]bool{}, staged: map[string]bool{}, ranLate: map[string]bool{}, flushed: map[string]time.Time{}}
	var last uint64
	closeRound := func() {
		if !cur.empty() {
			cur.to = last
			out = append(out, cur)
		}
		cur = round{applied: map[string]bool{}, late: map[string]bool{}, staged: map[string]bool{}, ranLate: map[string]bool{}, flushed: map[string]time.Time{}, from: last}
	}
	for _, ev := range evs {
		switch {
		case isInput(reg, ev):
			if len(cur.ctl)+len(cur.applies) > 0 {
				closeRound()
			}
			cur.ops = append(cur.ops, ev)
		case controlTypes[ev.Type]:
			n, stage, pass := nodeOf(ev), ctlStage(ev.Type), events.PassOf(ev)
			// A pass composes a node once and sends it once, after its
			// compose, and records every compose before the applies its
			// sends bring: a node's second compose or send, its compose
			// after its send, and a compose after an apply (delivered on
			// time, or kept: by the agent's clock) are the next pass's. (A
			// pass that recorded nothing, a send that failed again, a node
			// whose report a cut bus or a failing store kept: each leaves
			// no apply of the node to close on.)
			//
			// An event that names its pass over every node (events.PassOf:
			// recorded since passes name themselves) says which it is: the
			// round's pass goes on, another begins the next round, and so
			// does an event of no such pass (a push of named nodes) after
			// one. A round without one goes on into a pass until it holds
			// another push's events or an apply (on time, or kept: by the
			// agent's clock), which came after an earlier pass. Events of
			// no such pass, in a round of none, are cut by their order.
			var next bool
			switch {
			case cur.pass != "":
				next = pass != cur.pass
			case pass != "":
				next = len(cur.ctl) > 0 || len(cur.apply) > 0 || !cur.at.IsZero() && appliedBetween(cur.at, ev.At)
			default:
				next = cur.applied[n] || cur.staged[stage+" "+n] || (stage == stageCompose && cur.staged[stageSend+" "+n]) ||
					(whole && stage == stageCompose && (cur.sent || len(cur.apply) > 0 || !cur.at.IsZero() && appliedBetween(cur.at, ev.At)))
			}
			if next {
				closeRound()
			}
			if cur.pass == "" {
				cur.pass = pass
			}
			cur.staged[stage+" "+n] = true
			cur.sent = cur.sent || stage == stageSend
			cur.ctl = append(cur.ctl, ev)
		case ev.Type == events.TypeApplyReported && late[applyID(reg, ev)]:
			cur.applies = append(cur.applies, ev)
			cur.late[nodeOf(ev)] = true
			lateApplies = append(lateApplies, nodeAt{nodeOf(ev), ev.At, true, ev})
			if !cur.at.IsZero() && !ev.At.Before(cur.at) {
				cur.ranLate[nodeOf(ev)] = true
			}
		case ev.Type == events.TypeApplyReported:
			n := nodeOf(ev)
			// A node applies once a pass; an apply that ran after the
			// node's kept reports were delivered (its bus restored
			// between passes) is the next pass's, while one that ran
			// before is the one the delivery followed. So is one after
			// a kept report of an apply of the node that ran in the
			// round: a pass that recorded nothing of the controller's
			// (every compose unchanged, or failing as before) has only
			// its applies to begin it.
			if cur.applied[n] || cur.ranLate[n] || (!cur.flushed[n].IsZero() && ev.At.After(cur.flushed[n])) {
				closeRound()
			}
			cur.applies = append(cur.applies, ev)
			cur.applied[n] = true
			cur.apply = append(cur.apply, nodeAt{n, ev.At, false, ev})
		case ev.Type == events.TypeReportDeliveredLate:
			cur.flushed[nodeOf(ev)] = ev.At
			last = ev.Position
			continue
		default:
			last = ev.Position
			continue
		}
		if cur.at.IsZero() {
			cur.at = ev.At
		}
		last = ev.Position
	}
	closeRound()
	for _, a := range lateApplies {
		// The last round begun by then, or the next one without an apply
		// of the node (a node applies once a round: a round's first
		// recorded event may come after an apply whose report was kept).
		// When that next one begins with an operator's command or the
		// controller's pass after the apply ran, or there is none, the
		// apply ran in a pass that recorded nothing on time (every
		// report of it kept): a round of its own, with no events.
		i, _ := slices.BinarySearchFunc(out, a.at, func(r round, t time.Time) int { return r.at.Compare(t) })
		if i == len(out) || (i > 0 && out[i].at.After(a.at)) {
			i--
		}
		if i < 0 {
			continue // no round: no late report without an apply before it
		}
		mine := func(b nodeAt) bool { return b.node == a.node }
		// begunAfter: out[i] began after the apply ran with what comes
		// before a pass's applies, or with an apply of the node.
		begunAfter := func(i int) bool {
			return out[i].at.After(a.at) && (len(out[i].ops)+len(out[i].ctl) > 0 || slices.ContainsFunc(out[i].apply, mine))
		}
		for i < len(out) && slices.ContainsFunc(out[i].apply, mine) {
			i++
			if i < len(out) && begunAfter(i) {
				break
			}
		}
		if i == len(out) || begunAfter(i) || slices.ContainsFunc(out[i].apply, mine) {
			at := out[i-1].to
			out = slices.Insert(out, i, round{from: at, to: at, at: a.at,
				applied: map[string]bool{}, late: map[string]bool{}, staged: map[string]bool{}, ranLate: map[string]bool{}, flushed: map[string]time.Time{}})
		}
		out[i].apply = append(out[i].apply, a)
		if out[i].from >= a.ev.Position {
			out[i].late[a.node] = true // its report, delivered before the round, is restored after it
		}
	}
	for i := range out {
		slices.SortStableFunc(out[i].apply, func(a, b nodeAt) int { return a.at.Compare(b.at) })
	}
	return out
}

// applyID is an apply.reported's apply id: its payload's, or (as stored
// since) the event's own.
func applyID(reg *events.Registry, ev events.Event) string {
	if v, err := events.DecodeAs[events.ApplyReported](reg, ev); err == nil && v.ApplyID != "" {
		return v.ApplyID
	}
	return ev.ID.String()
}

// roundOf is the round (from 1) whose range holds position p in ends
// (each round's last position, ascending); 0 before the first.
func roundOf(ends []uint64, p uint64) int {
	i, _ := slices.BinarySearch(ends, p)
	if i >= len(ends) {
		return len(ends)
	}
	return i + 1
}

// wholePasses reports whether evs were recorded by whole passes (the
// controller's PushChanged, mesh sim): two nodes' declarations composed one
// after the other, with nothing between them, somewhere in the history. A
// pass of one node at a time composes a node, sends it and records its
// apply before the next node's compose, so never does that.
func wholePasses(evs []events.Event) bool {
	prev := ""
	for _, ev := range evs {
		if ev.Type != events.TypeDeclarationComposed {
			prev = ""
			continue
		}
		if n := nodeOf(ev); prev != "" && n != prev {
			return true
		} else {
			prev = n
		}
	}
	return false
}
