package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// TicksPerDay is how many passes a day holds at a 5-minute tick.
const TicksPerDay = 24 * 60 / 5

// Summary is what a run did and how the churn projection scored, for an
// incident review (WriteText) or a program (its JSON; field names are a
// public API, as every -o json).
type Summary struct {
	Nodes   int     `json:"nodes"`
	Joined  int     `json:"joined"` // nodes that joined during the run
	Big     int     `json:"big"`    // nodes with 330 resources
	Modules int     `json:"modules"`
	Passes  int     `json:"passes"`
	Seed    uint64  `json:"seed"`
	Store   string  `json:"store"`
	Faults  []Fault `json:"faults"`

	Events      int     `json:"events"` // in the store at the end
	Bytes       int     `json:"bytes"`  // counted: records and index entries (RecordBytes)
	SetUpEvents int     `json:"setup_events"`
	SetUpBytes  int     `json:"setup_bytes"`
	PassEvents  float64 `json:"pass_events_mean"`
	PassBytes   float64 `json:"pass_bytes_mean"`
	// Quiet passes are those with no fault in their window and no operator
	// command; their median, when the run had any.
	QuietPasses int `json:"quiet_passes"`
	QuietEvents int `json:"quiet_pass_events"`
	QuietBytes  int `json:"quiet_pass_bytes"`
	// A day at a 5-minute tick: of quiet passes, and of passes as this
	// run's (its faults and operators every day).
	DayQuietBytes float64 `json:"day_quiet_bytes"`
	DayBusyBytes  float64 `json:"day_busy_bytes"`

	ComposeFailed int `json:"compose_failed"`
	PushFailed    int `json:"push_failed"`
	Heavy         int `json:"heavy"`
	Operator      int `json:"operator"`

	Wall         time.Duration `json:"wall_ns"`
	PassesPerSec float64       `json:"passes_per_second"`
	EventsPerSec float64       `json:"events_per_second"`

	PerPass    []PassStats    `json:"per_pass"` // the set-up's first, as pass 0
	Score      Score          `json:"score"`
	Truth      []TruthEpisode `json:"truth"`
	Detections []Detected     `json:"detections"`

	// Measured is set by mesh sim --measure.
	Measured *Measured `json:"measured,omitempty"`
}

// Measured are the costs mesh sim --measure takes at the end of a run.
type Measured struct {
	HeapBytes     uint64        `json:"heap_bytes"` // every projection, folded from the store, after a GC
	HeapPerNode   float64       `json:"heap_bytes_per_node"`
	Status        time.Duration `json:"status_ns"` // status of every node, from a controller caught up
	TimelinePage  time.Duration `json:"timeline_page_ns"`
	TimelineQuery string        `json:"timeline_query"`
	TimelineRows  int           `json:"timeline_rows"`
	Rebuild       time.Duration `json:"rebuild_ns"` // every projection from position 0
	RebuildEvents uint64        `json:"rebuild_events"`
	StoreFile     int64         `json:"store_file_bytes,omitempty"` // the bolt file's size
}

// Summary summarizes the run; store names the store for the record.
func (r *Run) Summary(store string) Summary {
	det := r.Detections(r.Mesh.Views.Churn)
	s := Summary{
		Nodes: r.cfg.Nodes, Joined: len(r.nodes) - r.cfg.Nodes, Big: r.cfg.Big, Modules: r.cfg.Modules,
		Passes: r.cfg.Passes, Seed: r.cfg.Seed, Store: store, Faults: r.cfg.Faults,
		Score: r.Score(det), Truth: r.Truth(), Detections: det, Wall: r.wall, PerPass: r.Stats(),
	}
	if s.Faults == nil {
		s.Faults = []Fault{}
	}
	if s.Truth == nil {
		s.Truth = []TruthEpisode{}
	}
	if s.Detections == nil {
		s.Detections = []Detected{}
	}
	var quiet []PassStats
	for _, st := range r.stats {
		s.Events += st.Events
		s.Bytes += st.Bytes
		if st.Pass == 0 {
			s.SetUpEvents, s.SetUpBytes = st.Events, st.Bytes
			continue
		}
		s.ComposeFailed += st.ComposeFailed
		s.PushFailed += st.PushFailed
		s.Heavy += st.Heavy
		s.Operator += st.Operator
		faulted := false
		for _, f := range r.cfg.Faults {
			// Adopted nodes holding found data are a steady state, not a fault
			// of their passes.
			faulted = faulted || (f.Kind != FaultAdopt && f.Active(st.Pass, r.cfg.Passes)) ||
				(f.Kind == FaultRemove && f.Active(st.Pass-1, r.cfg.Passes))
		}
		// The first passes create everything: not quiet.
		if !faulted && st.Operator == 0 && st.Pass > 2 {
			quiet = append(quiet, st)
		}
	}
	if n := len(r.stats) - 1; n > 0 {
		s.PassEvents = float64(s.Events-s.SetUpEvents) / float64(n)
		s.PassBytes = float64(s.Bytes-s.SetUpBytes) / float64(n)
		s.DayBusyBytes = s.PassBytes * TicksPerDay
	}
	if len(quiet) > 0 {
		slices.SortFunc(quiet, func(a, b PassStats) int { return a.Bytes - b.Bytes })
		m := quiet[len(quiet)/2]
		s.QuietPasses, s.QuietEvents, s.QuietBytes = len(quiet), m.Events, m.Bytes
		s.DayQuietBytes = float64(m.Bytes) * TicksPerDay
	}
	if secs := s.Wall.Seconds(); secs > 0 {
		s.PassesPerSec = float64(len(r.stats)-1) / secs
		s.EventsPerSec = float64(s.Events-s.SetUpEvents) / secs
	}
	return s
}

// WriteText writes s for people: what ran, the score against the targets,
// what the store took, and what was measured.
func (s Summary) WriteText(w io.Writer) error {
	var b strings.Builder
	joined := ""
	if s.Joined > 0 {
		joined = fmt.Sprintf(" (+%d joined)", s.Joined)
	}
	fmt.Fprintf(&b, "mesh sim: %d nodes%s, %d with 330 resources, %d modules, %d passes, seed %d, store %s\n",
		s.Nodes, joined, s.Big, s.Modules, s.Passes, s.Seed, s.Store)
	if len(s.Faults) == 0 {
		fmt.Fprintf(&b, "faults: none\n")
	}
	for i, f := range s.Faults {
		if i == 0 {
			b.WriteString("faults: ")
		} else {
			b.WriteString("        ")
		}
		b.WriteString(f.String() + "\n")
	}
	fmt.Fprintf(&b, "ran %d passes in %s: %s passes/s, %s events/s\n\n", s.Passes, s.Wall.Round(time.Millisecond), rate(s.PassesPerSec), rate(s.EventsPerSec))

	sc := s.Score
	met := "MET"
	if !sc.Met() {
		met = "MISSED"
	}
	fmt.Fprintf(&b, "churn detector against the injected truth: targets %s (recall 1, no false loop on a legitimate pass, delay <= 2)\n", met)
	fmt.Fprintf(&b, "  injected    %d episode(s): %d loop(s), %d flip(s)\n", sc.Injected, sc.InjectedLoops, sc.InjectedFlips)
	fmt.Fprintf(&b, "  recall      %.2f (%d of %d found)\n", sc.Recall, sc.Found, sc.Injected)
	operator := ""
	if sc.OperatorLoops > 0 {
		operator = fmt.Sprintf("; %d of them an operator's pass and the injected removal after it", sc.OperatorLoops)
	}
	fmt.Fprintf(&b, "  precision   %.2f (%d of %d detections true%s)\n", sc.Precision, sc.TrueDetected, sc.Detections, operator)
	fmt.Fprintf(&b, "  delay       mean %.2f, max %d pass(es) from an episode's start to its detection (best 1; 0 after an operator's heavy pass)\n", sc.DelayMean, sc.DelayMax)
	fmt.Fprintf(&b, "  legitimate  %d node-pass(es) with an operator command; false loops at them: %d; other false detections: %d\n",
		sc.LegitPasses, sc.FalseLoopsLegit, sc.FalseOther)
	for _, t := range sc.Missed {
		fmt.Fprintf(&b, "  missed      %s %s, passes %d-%d\n", t.Node, kind(t.Loop, t.Flip), t.Start, t.End)
	}
	for _, d := range sc.False {
		fmt.Fprintf(&b, "  false       %s %s, detected at pass %d%s\n", d.Node, kind(d.Loop, d.Flip), d.Detected, map[bool]string{true: ", after an operator command"}[d.Legit])
	}
	b.WriteString("\n")

	fmt.Fprintf(&b, "store (counted: records and index entries)\n")
	fmt.Fprintf(&b, "  events      %d: %d at set-up, %.1f a pass\n", s.Events, s.SetUpEvents, s.PassEvents)
	fmt.Fprintf(&b, "  bytes       %s: %s at set-up, %s a pass\n", size(float64(s.Bytes)), size(float64(s.SetUpBytes)), size(s.PassBytes))
	if s.QuietPasses > 0 {
		fmt.Fprintf(&b, "  quiet pass  %d events, %s (median of %d passes with no fault and no operator command)\n", s.QuietEvents, size(float64(s.QuietBytes)), s.QuietPasses)
		fmt.Fprintf(&b, "  a day       at a 5-minute tick (%d passes): %s quiet, %s as this run\n", TicksPerDay, size(s.DayQuietBytes), size(s.DayBusyBytes))
	} else {
		fmt.Fprintf(&b, "  a day       at a 5-minute tick (%d passes): %s as this run (no quiet pass to measure)\n", TicksPerDay, size(s.DayBusyBytes))
	}
	fmt.Fprintf(&b, "  passes      %d compose(s) failed, %d push(es) failed, %d heavy apply(s), %d operator command(s)\n",
		s.ComposeFailed, s.PushFailed, s.Heavy, s.Operator)
	if m := s.Measured; m != nil {
		b.WriteString("\nmeasured at the end\n")
		fmt.Fprintf(&b, "  memory      %s of projections, %s a node\n", size(float64(m.HeapBytes)), size(m.HeapPerNode))
		fmt.Fprintf(&b, "  status      %s (every node)\n", m.Status.Round(time.Microsecond))
		fmt.Fprintf(&b, "  timeline    %s (%s: %d rows)\n", m.TimelinePage.Round(time.Microsecond), m.TimelineQuery, m.TimelineRows)
		fmt.Fprintf(&b, "  rebuild     %s (%d events from position 0)\n", m.Rebuild.Round(time.Millisecond), m.RebuildEvents)
		if m.StoreFile > 0 {
			fmt.Fprintf(&b, "  store file  %s\n", size(float64(m.StoreFile)))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func kind(loop, flip bool) string {
	switch {
	case loop && flip:
		return "loop+flip"
	case loop:
		return "loop"
	}
	return "flip"
}

func rate(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", v)
}

// size is n bytes in B, KB, MB or GB (powers of 1000).
func size(n float64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f GB", n/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", n/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f KB", n/1e3)
	}
	return fmt.Sprintf("%.0f B", n)
}

// ErrTargetsMissed means the churn detector missed a target of the
// score; the summary says which.
var ErrTargetsMissed = errors.New("the churn detector missed a target (see the summary)")

// Print writes the summary of run o to w, as indented JSON or as text
// (then, when the events stayed in the bolt store, where to look), and
// is ErrTargetsMissed when the score missed a target.
func (s Summary) Print(w io.Writer, asJSON bool, o Options) error {
	var err error
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		err = enc.Encode(s)
	} else if err = s.WriteText(w); err == nil && o.Store == "bolt" {
		err = WhereToLook(w, o.Data)
	}
	if err == nil && !s.Score.Met() {
		err = ErrTargetsMissed
	}
	return err
}
