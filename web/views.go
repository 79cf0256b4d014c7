package web

import (
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"meshplane/api"
	"meshplane/events"
)

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"clock": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("15:04:05")
	},
	"stamp": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	},
	"short": shortDigest,
	"kind":  stateKind,
	// orNone is a changed field's value, "(none)" when absent.
	"orNone": func(s string) string {
		if s == "" {
			return "(none)"
		}
		return s
	},
	"sortedFields": func(m map[string]int) []fieldCount {
		out := make([]fieldCount, 0, len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			out = append(out, fieldCount{k, m[k]})
		}
		return out
	},
}

type fieldCount struct {
	Field string
	Count int
}

// shortDigest is a digest as people compare them: its first 12 hex digits.
func shortDigest(d string) string {
	_, hex, ok := strings.Cut(d, ":")
	if !ok {
		hex = d
	}
	if len(hex) > 12 {
		hex = hex[:12]
	}
	return hex
}

// --- status ---

type nodeRow struct {
	api.NodeStatus
	Held      string // "route-proxy: 2, photos: 1"
	HeldTotal int
	// Seen is when the node was last heard of, and SeenLabel what that
	// time is. Today it is the last apply report ("last report"): when
	// received by the controller, else the apply's own time. Hook: when
	// NodeStatus carries the agent's heartbeat (issue 20, item 2:
	// liveness), seenOf takes it and SeenLabel reads "last seen".
	Seen      time.Time
	SeenLabel string
	// Pending are the modules assigned and absent from the applied
	// declaration, by name, each with why (its compose failed, ...).
	Pending []pendingModule
	// Runs are the node's modules, each with its containers and their
	// states (the overview's; set for the rows of its page only).
	Runs []moduleRun
}

// pendingModule is a module of a node's that is pending, and why.
type pendingModule struct{ Module, Reason string }

// modulePending is projections.ModulePending, as the API carries it.
const modulePending = "pending"

// --- a node's swimlanes ---

// Lanes, top to bottom.
var laneNames = []string{"commands", "composes", "failed composes", "pushes", "applies"}

// laneOf is the lane an entry of type typ is drawn in.
func laneOf(typ string) int {
	switch typ {
	case events.TypeDeclarationComposed:
		return 1
	case events.TypeDeclarationComposeFailed:
		return 2
	case events.TypeDeclarationPushed, events.TypeDeclarationPushFailed:
		return 3
	case events.TypeApplyReported, events.TypeReportDeliveredLate:
		return 4
	}
	return 0
}

type nodeView struct {
	Node     string
	Status   *nodeRow
	Now      nowView // what runs now
	Columns  []column
	Lanes    []lane
	Bands    []bandCell
	Episodes []episodeView // every episode of the node (the bands index it)
	// Shown are the episodes listed, with their evidence: those on the
	// page and the latest maxEpisodes; Earlier counts the others.
	Shown   []episodeView
	Earlier int
	// Paging: Older pages back from the first column, Newer forward from
	// the last; Latest is true for the page that ends at the head (live).
	Older, Newer       uint64
	HasOlder, HasNewer bool
	Latest             bool
	Limit              int
	First, Last        uint64 // positions of the page's first and last entries
	Decls              []api.Entry
	DiffFrom, DiffTo   string
	// AsOf is the moment shown (?at=); nil: now. The node's head and
	// what ran say so, never "live" or "now".
	AsOf *api.Moment
}

type column struct {
	Entry  api.Entry
	Label  string // the time, where the minute changes
	Band   int    // index in Episodes of the episode it falls in, -1 if none
	Marker marker
	// Resources are the first maxResources the entry touched; the detail
	// counts the rest.
	Resources     []string
	MoreResources int
}

// marker is an entry as drawn in its lane.
type marker struct {
	Kind   string // CSS class
	Label  string
	Counts *Counts // applies
	Span   bool    // a run of idle applies, drawn as one span
}

type lane struct {
	Name  string
	Cells []cell
}

type cell struct {
	Column *column // nil: nothing in this lane at this column
	Band   int
	Open   bool // the band's episode is still open
}

// bandCell is one cell of the churn row: Span columns, in an episode
// (Episode ≥ 0) or not.
type bandCell struct {
	Span    int
	Episode int
	Label   string
	Open    bool
}

type episodeView struct {
	api.Episode
	ID    string // element id of its evidence
	Kind  string // "loop", "flip", "loop and flip"
	On    bool   // some of it is on this page
	After uint64 // cursor of a page starting at the episode
	// Pairs are consecutive declarations of the evidence, to diff.
	Pairs [][2]string
}

func (h *handler) node(w http.ResponseWriter, r *http.Request) {
	node, err := required(r, "node")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	before, err := uintParam(r, "before")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	after, err := uintParam(r, "after")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	limit := DefaultColumns
	if s := r.URL.Query().Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 || limit > MaxColumns {
			h.fail(w, r, badRequestf("limit %q: give 1 to %d", s, MaxColumns))
			return
		}
	}
	ctx := r.Context()
	st, err := h.qs(r).Status(ctx, api.StatusRequest{Nodes: []string{node}})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	forward := after > 0 || r.URL.Query().Get("forward") == "1"
	page, err := h.qs(r).Timeline(ctx, api.TimelineRequest{Node: node, Before: before, After: after, Forward: forward, Limit: limit})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	now, err := h.qs(r).Resources(ctx, node)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	churn, err := h.qs(r).Churn(ctx, api.ChurnRequest{Nodes: []string{node}})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	decls, err := h.qs(r).Timeline(ctx, api.TimelineRequest{Node: node, Type: events.TypeDeclarationComposed, Limit: declChoices})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var eps []api.Episode
	if len(churn.Nodes) == 1 {
		eps = churn.Nodes[0].Episodes
	}
	v := buildNode(node, page, forward, before > 0, eps, limit)
	v.Now = buildNow(now)
	if len(st.Nodes) == 1 {
		row := statusRow(st.Nodes[0])
		v.Status = &row
	}
	v.AsOf = st.AsOf
	v.Decls = decls.Entries
	slices.Reverse(v.Decls) // newest first
	if len(v.Decls) > 0 {
		v.DiffTo = v.Decls[0].Declaration
		v.DiffFrom = v.DiffTo
		if len(v.Decls) > 1 {
			v.DiffFrom = v.Decls[1].Declaration
		}
	}
	h.render(w, r, "node.html", v)
}

func statusRow(ns api.NodeStatus) nodeRow {
	row := nodeRow{NodeStatus: ns}
	parts := make([]string, len(ns.Held))
	for i, mc := range ns.Held {
		parts[i] = fmt.Sprintf("%s: %d", mc.Module, mc.Count)
		row.HeldTotal += mc.Count
	}
	row.Held = strings.Join(parts, ", ")
	row.Seen, row.SeenLabel = seenOf(ns)
	for _, m := range slices.Sorted(maps.Keys(ns.Modules)) {
		if ms := ns.Modules[m]; ms.State == modulePending {
			row.Pending = append(row.Pending, pendingModule{Module: m, Reason: ms.Reason})
		}
	}
	return row
}

// seenOf is when node status ns was last heard of, and what that time is
// (nodeRow.Seen): its last heartbeat the controller heard (liveness), else
// its last apply report, received or made.
func seenOf(ns api.NodeStatus) (time.Time, string) {
	a := ns.Applied
	switch {
	case ns.LastSeen != nil && !ns.LastSeen.IsZero():
		return *ns.LastSeen, "last heartbeat"
	case ns.Sync == api.SyncUnreachable && a == nil:
		return time.Time{}, "never heard"
	case a == nil:
		return time.Time{}, "never reported"
	case !a.Report.ReceivedAt.IsZero():
		return a.Report.ReceivedAt, "last report"
	}
	return a.At, "last report"
}

// --- what runs now ---

// nowView is what runs on a node now, as its last apply left it: every
// resource of the applied declaration with its state, in the
// declaration's order, and the states counted.
type nowView struct {
	api.NodeResources
	Rows   []resourceRow
	Counts []stateCount // the states present, worst first
}

// resourceRow is one resource as the page shows it.
type resourceRow struct {
	api.ResourceState
	StateLabel string // "running", "held", "failed", "restarted", "in place"
	Did        string // what the last apply did: "replaced (env.GREETING)"
}

type stateCount struct {
	State, Label string
	Count        int
}

// Resource states, as the API carries them (projections' Resource*), worst
// first, with their words on the page.
var resourceStates = []struct{ state, label string }{
	{"failed", "failed"},
	{"restarted", "restarted"},
	{"held", "held"},
	{"running", "running"},
	{"in-place", "in place"},
}

func buildNow(r api.NodeResources) nowView {
	v := nowView{NodeResources: r}
	count := map[string]int{}
	for _, rs := range r.Resources {
		row := resourceRow{ResourceState: rs, StateLabel: rs.State, Did: rs.Outcome}
		for _, s := range resourceStates {
			if s.state == rs.State {
				row.StateLabel = s.label
			}
		}
		if len(rs.Fields) > 0 {
			row.Did += " (" + strings.Join(rs.Fields, ", ") + ")"
		}
		count[rs.State]++
		v.Rows = append(v.Rows, row)
	}
	for _, s := range resourceStates {
		if n := count[s.state]; n > 0 {
			v.Counts = append(v.Counts, stateCount{State: s.state, Label: s.label, Count: n})
			delete(count, s.state)
		}
	}
	for _, st := range slices.Sorted(maps.Keys(count)) { // a state this page does not know yet
		v.Counts = append(v.Counts, stateCount{State: st, Label: st, Count: count[st]})
	}
	return v
}

// buildNode lays a page of a node's timeline out in lanes: one column per
// entry, a run of identical outcomes (api.Collapse) one column, and
// the node's churn episodes as bands over the columns they cover.
func buildNode(node string, page api.TimelinePage, forward, back bool, eps []api.Episode, limit int) nodeView {
	v := nodeView{Node: node, Limit: limit}
	entries := api.Collapse(page.Entries)
	v.Episodes = make([]episodeView, len(eps))
	for i, ep := range eps {
		ev := episodeView{Episode: ep, ID: fmt.Sprintf("ep-%d", i), Kind: "loop"}
		switch {
		case ep.Loop && ep.Flip:
			ev.Kind = "loop and flip"
		case ep.Flip:
			ev.Kind = "flip"
		}
		if ep.Start.Position > 0 {
			ev.After = ep.Start.Position - 1
		}
		ds := ep.Evidence.Declarations
		for j := 1; j < len(ds); j++ {
			ev.Pairs = append(ev.Pairs, [2]string{ds[j-1].Declaration, ds[j].Declaration})
		}
		v.Episodes[i] = ev
	}
	// episodeAt is the episode covering positions [from, to], -1 if none.
	// Episodes follow one another (one open at a time, oldest first), so
	// the first that ends at or after from is the only candidate.
	episodeAt := func(from, to uint64) int {
		i := sort.Search(len(eps), func(i int) bool { return eps[i].End == nil || eps[i].End.Position >= from })
		if i < len(eps) && eps[i].Start.Position <= to {
			return i
		}
		return -1
	}
	var lastMinute string
	v.Columns = make([]column, len(entries))
	for i, en := range entries {
		c := column{Entry: en, Marker: markerOf(en), Resources: en.Resources}
		if n := len(c.Resources); n > maxResources {
			c.Resources, c.MoreResources = c.Resources[:maxResources], n-maxResources
		}
		last := en.Position
		if en.Run != nil {
			last = en.Run.LastPosition
		}
		c.Band = episodeAt(en.Position, last)
		if c.Band >= 0 {
			v.Episodes[c.Band].On = true
		}
		if m := en.At.UTC().Format("15:04"); m != lastMinute {
			c.Label, lastMinute = m, m
		}
		v.Columns[i] = c
	}
	v.Lanes = make([]lane, len(laneNames))
	for l, name := range laneNames {
		v.Lanes[l] = lane{Name: name, Cells: make([]cell, len(v.Columns))}
		for i := range v.Columns {
			c := &v.Columns[i]
			cl := cell{Band: c.Band}
			if c.Band >= 0 {
				cl.Open = eps[c.Band].Active()
			}
			if laneOf(c.Entry.Type) == l {
				cl.Column = c
			}
			v.Lanes[l].Cells[i] = cl
		}
	}
	for i, ep := range v.Episodes {
		if ep.On || i >= len(v.Episodes)-maxEpisodes {
			v.Shown = append(v.Shown, ep)
		} else {
			v.Earlier++
		}
	}
	for i := 0; i < len(v.Columns); {
		j := i + 1
		for j < len(v.Columns) && v.Columns[j].Band == v.Columns[i].Band {
			j++
		}
		bc := bandCell{Span: j - i, Episode: v.Columns[i].Band}
		if bc.Episode >= 0 {
			ep := v.Episodes[bc.Episode]
			bc.Open = ep.Active()
			bc.Label = fmt.Sprintf("churn %s: %d heavy passes, %d flips", ep.Kind, ep.HeavyPasses, ep.Flips)
			if bc.Open {
				bc.Label += " (open)"
			}
		}
		v.Bands = append(v.Bands, bc)
		i = j
	}
	if n := len(entries); n > 0 {
		v.First = entries[0].Position
		v.Last = entries[n-1].Position
		if entries[n-1].Run != nil {
			v.Last = entries[n-1].Run.LastPosition
		}
	}
	// Paging. A backward page (the latest, or before=P) has older entries
	// when Next says so; a forward one (after=P) has newer ones when Next
	// says so. The other direction is offered whenever the page is not
	// at that end of the timeline as far as this query can tell.
	switch {
	case forward:
		v.HasNewer = page.Next > 0
		v.HasOlder = v.First > 1
		v.Latest = !v.HasNewer
	default:
		v.HasOlder = page.Next > 0
		v.HasNewer = back
		v.Latest = !back
	}
	v.Older, v.Newer = v.First, v.Last
	return v
}

// markerOf is how an entry is drawn in its lane.
func markerOf(en api.Entry) marker {
	m := marker{Kind: kindOf(en.Type)}
	switch en.Type {
	case events.TypeDeclarationComposed, events.TypeDeclarationPushed:
		m.Label = declNumber(en.Declaration)
	case events.TypeDeclarationComposeFailed, events.TypeDeclarationPushFailed:
		m.Label = "✗"
	case events.TypeReportDeliveredLate:
		m.Label = "late"
	case events.TypeApplyReported:
		c, _ := ParseApplySummary(en.Summary)
		m.Counts = &c
		switch {
		case en.Idle && en.Run != nil:
			m.Kind += " idle"
			m.Span = true
		case en.Idle:
			m.Kind += " idle"
		case en.Heavy:
			m.Kind += " heavy"
		}
		if c.Failed > 0 {
			m.Kind += " failing"
		}
	default:
		_, verb, _ := strings.Cut(en.Type, ".")
		m.Label = verb
	}
	if en.Churn != "" {
		m.Kind += " churn-mark"
	}
	return m
}

func kindOf(typ string) string {
	switch typ {
	case events.TypeDeclarationComposed:
		return "compose"
	case events.TypeDeclarationComposeFailed:
		return "compose-failed"
	case events.TypeDeclarationPushed:
		return "push"
	case events.TypeDeclarationPushFailed:
		return "push-failed"
	case events.TypeApplyReported:
		return "apply"
	case events.TypeReportDeliveredLate:
		return "late"
	}
	return "command"
}

// declNumber is a declaration id's number ("novox/3" → "3").
func declNumber(decl string) string {
	if i := strings.LastIndexByte(decl, '/'); i >= 0 {
		return decl[i+1:]
	}
	return decl
}

// --- roster diff, why ---

// ownPush is the push behind touch t as its panel lists it: every apply
// of a declaration shares the push's correlation, so the answer's Push
// names the applies of the declaration's other touches too; ownPush keeps
// the push's other entries (its compose, its push) and t's own applies
// (those of its run), and leaves the other touches' applies to them.
func ownPush(t api.WhyTouch) []api.Entry {
	first, last := t.Entry.Position, t.Entry.Position
	if r := t.Entry.Run; r != nil {
		first, last = r.FirstPosition, r.LastPosition
	}
	var out []api.Entry
	for _, en := range t.Push {
		switch en.Type {
		case events.TypeApplyReported, events.TypeReportDeliveredLate:
			if en.Position < first || en.Position > last {
				continue
			}
		}
		out = append(out, en)
	}
	return out
}

type diffView struct {
	Node string
	api.RosterDiff
}

func (h *handler) diff(w http.ResponseWriter, r *http.Request) {
	var req api.RosterDiffRequest
	var err error
	for _, p := range []struct {
		dst  *string
		name string
	}{{&req.Node, "node"}, {&req.From, "from"}, {&req.To, "to"}} {
		if *p.dst, err = required(r, p.name); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	d, err := h.qs(r).RosterDiff(r.Context(), req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, "diff.html", diffView{Node: req.Node, RosterDiff: d})
}

type whyView struct {
	Node, Resource string
	Touches        []api.WhyTouch
	Earlier        int         // touches not shown (older)
	AsOf           *api.Moment // the moment shown (?at=); nil: now
}

func (h *handler) why(w http.ResponseWriter, r *http.Request) {
	node, err := required(r, "node")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	res, err := required(r, "resource")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	resp, err := h.qs(r).Why(r.Context(), api.WhyRequest{Node: node, Resource: res})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	v := whyView{Node: node, Resource: res, Touches: api.CollapseWhy(resp.Touches), AsOf: resp.AsOf}
	for i := range v.Touches {
		v.Touches[i].Push = ownPush(v.Touches[i])
	}
	if n := len(v.Touches); n > whyTouches {
		v.Earlier = n - whyTouches
		v.Touches = v.Touches[n-whyTouches:]
	}
	slices.Reverse(v.Touches) // newest first
	h.render(w, r, "why.html", v)
}
