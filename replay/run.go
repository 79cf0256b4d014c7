package replay

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"meshplane/commands"
	"meshplane/events"
)

// Options are a replay's.
type Options struct {
	// Until stops the replay after this position of the file (0: its end).
	Until uint64
}

// Run replays the history at path (an export file, mesh export's
// format) against this build and returns the report; its error is
// ErrDiverged, with the report, when the runs diverge. Its steps: read
// the history and cut it into passes (readHistory), fold the recorded run
// and read from it what the world did (readRecorded), run each pass again
// in a sandbox (sandbox.round), then compare the two runs pass by pass
// (compare) and their churn (compareChurn).
func Run(ctx context.Context, path string, o Options) (*Report, error) {
	reg := events.NewRegistry()
	h, err := readHistory(ctx, path, reg, o.Until)
	if err != nil {
		return nil, err
	}
	defer h.store.Close()
	rep := newReport(path, h)
	rec, err := readRecorded(ctx, reg, h)
	if err != nil {
		return nil, err
	}
	s := newSandbox(reg, h, rec, rep)
	defer s.Close()
	for k, rd := range h.rounds {
		if err := s.round(ctx, k, rd); err != nil {
			return nil, err
		}
	}
	today := compare(s)
	rep.Inputs.Unreplayed = slices.Sorted(maps.Keys(s.unreplayed))
	if err := s.m.CatchUp(ctx); err != nil {
		return nil, fmt.Errorf("replay: sandbox projections: %w", err)
	}
	compareChurn(s, today)
	return finish(rep, rec.facts, today)
}

// newReport is the report of replaying h, read from path, before the
// replay: what the history holds.
func newReport(path string, h *history) *Report {
	rep := &Report{History: filepath.Base(path), Events: len(h.events), Passes: len(h.rounds)}
	if n := len(h.events); n > 0 {
		rep.Through, rep.At = h.filePos[n-1], h.events[n-1].At
	}
	nodes := map[string]bool{}
	for _, ev := range h.events {
		if n := nodeOf(ev); n != "" {
			nodes[n] = true
		}
	}
	rep.Nodes = slices.Sorted(maps.Keys(nodes))
	return rep
}

// at is d, a divergence in pass k (from 0), placed there: the pass's
// number, time and last position in the file.
func (h *history) at(k int, d Divergence) Divergence {
	rd := h.rounds[k]
	d.Pass, d.At, d.Position = k+1, rd.at, h.filePos[rd.to-1]
	return d
}

// compare compares today's passes (the sandbox's) with the recorded ones
// once every report is in (an apply is compared in the pass it ran in,
// wherever its report was delivered), adds their divergences to the
// report, and returns today's facts.
func compare(s *sandbox) *facts {
	today := newFacts(s.reg)
	passes := make([]map[string]*nodePass, len(s.h.rounds))
	for k := range s.h.rounds {
		passes[k] = today.pass(s.evs[k])
	}
	for k := range s.h.rounds {
		today.settle(passes[k], s.ran[k])
		for _, d := range compareRound(s.rec.passes[k], passes[k], s.rec.facts, today) {
			s.rep.Divergences = append(s.rep.Divergences, s.h.at(k, d))
		}
	}
	return today
}

// compareChurn puts each run's churn episodes in the report, an apply's
// counted in the pass it ran in (wherever its report was delivered), and
// adds where they differ to the divergences.
func compareChurn(s *sandbox, today *facts) {
	recAt, todayAt := map[uint64]int{}, map[uint64]int{}
	ranIn := map[string]int{} // today's apply id → its pass
	for k, rd := range s.h.rounds {
		for _, a := range rd.apply {
			recAt[a.ev.Position] = k + 1
		}
		for _, ids := range s.ran[k] {
			for _, id := range ids {
				ranIn[id] = k + 1
			}
		}
	}
	for _, evs := range s.evs {
		for _, ev := range evs {
			if ev.Type == events.TypeApplyReported {
				if k, ok := ranIn[applyID(s.reg, ev)]; ok {
					todayAt[ev.Position] = k
				}
			}
		}
	}
	rep := s.rep
	rep.ChurnRecorded = episodes(s.rec.set.Churn, s.rec.ends, recAt)
	rep.ChurnToday = episodes(s.m.Views.Churn, s.ends, todayAt)
	for _, d := range churnDiffs(rep.ChurnRecorded, rep.ChurnToday) {
		if d.Pass > 0 && d.Pass <= len(s.h.rounds) {
			d = s.h.at(d.Pass-1, d)
		}
		rep.Divergences = append(rep.Divergences, d)
	}
}

// finish orders the report's divergences by pass and node, puts in each
// run's totals (rec's and today's) and says whether the runs agree: the
// error is ErrDiverged when they do not.
func finish(rep *Report, rec, today *facts) (*Report, error) {
	slices.SortStableFunc(rep.Divergences, func(a, b Divergence) int {
		if a.Pass != b.Pass {
			return a.Pass - b.Pass
		}
		return strings.Compare(a.Node, b.Node)
	})
	rep.Recorded, rep.Today = rec.totals, today.totals
	rep.Recorded.Episodes, rep.Today.Episodes = len(rep.ChurnRecorded), len(rep.ChurnToday)
	if rep.Divergences == nil {
		rep.Divergences = []Divergence{}
	}
	if rep.ChurnRecorded == nil {
		rep.ChurnRecorded = []Episode{}
	}
	if rep.ChurnToday == nil {
		rep.ChurnToday = []Episode{}
	}
	rep.Agree = len(rep.Divergences) == 0
	if !rep.Agree {
		return rep, ErrDiverged
	}
	return rep, nil
}

// commandOf is the operator's command that recorded ev.
func commandOf(reg *events.Registry, ev events.Event) (commands.Command, error) {
	p, err := reg.Decode(ev)
	if err != nil {
		return nil, err
	}
	switch v := p.(type) {
	case events.NodeRegistered:
		return commands.RegisterNode{Node: v.Node}, nil
	case events.NodeAdopted:
		return commands.AdoptNode{Node: v.Node}, nil
	case events.NodeSettingSet:
		return commands.SetNodeSetting{Node: v.Node, Key: v.Key, Value: v.Value}, nil
	case events.ModuleDefined:
		return commands.DefineModule{Module: v.Module, Spec: v.Spec}, nil
	case events.ModuleAssigned:
		return commands.AssignModule{Module: v.Module, Node: v.Node}, nil
	case events.ModuleReleased:
		return commands.ReleaseModule{Module: v.Module, Node: v.Node}, nil
	case events.ModuleTaken:
		return commands.TakeModule{Module: v.Module, Node: v.Node}, nil
	case events.ArtifactRecorded:
		return commands.RecordArtifact{Module: v.Module, Name: v.Name, Digest: v.Digest}, nil
	case events.SecretSet:
		return commands.SetSecret{Name: v.Name, Digest: v.Digest, Sealed: v.Sealed, KeyID: v.KeyID, By: v.By}, nil
	case events.ModuleDeployed:
		c := commands.DeployModule{Module: v.Module}
		if len(v.Builds) == 1 {
			c.Digest = v.Builds[0].Digest
		}
		return c, nil
	}
	return nil, fmt.Errorf("replay: %s is no command to run again", ev.Type)
}
