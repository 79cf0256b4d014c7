package web

import (
	"cmp"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"meshplane/api"
)

// The overview (/ui/status) is one page of the nodes at a time, what is
// wrong first: at a thousand nodes the whole list is tall and heavy
// (about 800 KB and 42,000 pixels), and the one failing node is far down
// it. Above the page it counts every node by state; the filter narrows by
// state, module and name; each row shows the node's modules and
// containers with their states.

// StatusPageSize is how many nodes one page of the overview shows.
const StatusPageSize = 50

// Filter states beside the health states (a node matches a health state
// when its health is that state).
const (
	stateWrong       = "wrong"   // anything but a converged node with nothing pending
	statePending     = "pending" // a module pending: assigned, not in the applied declaration
	stateUnreachable = api.SyncUnreachable
)

type statusView struct {
	Info api.Info
	// Nodes are the rows of this page, what is wrong first.
	Nodes []nodeRow
	// Skipped is how many events the projections could not fold.
	Skipped int
	// AsOf is the moment shown (?at=); nil: now.
	AsOf *api.Moment
	// Total is every node; Counts counts them by health, worst first,
	// then those with a module pending and those unreachable.
	Total  int
	Counts []stateCount
	Filter statusFilter
	// Matched is how many nodes the filter keeps; the page shows rows
	// From to To of them (1-based), page Page of Pages.
	Matched, From, To, Page, Pages int
	Prev, Next                     int // the pages before and after this one; 0: none
	// Modules are every module a node names, for the filter's list.
	Modules []string
}

// statusFilter is what the overview is narrowed to: a state (a health,
// or stateWrong, statePending, stateUnreachable), a module assigned to or
// applied on the node, and part of its name. The zero value keeps every
// node.
type statusFilter struct {
	State, Module, Name string
}

func (f statusFilter) Any() bool { return f != statusFilter{} }

// keeps reports whether the filter keeps row.
func (f statusFilter) keeps(row nodeRow) bool {
	switch f.State {
	case "":
	case stateWrong:
		if severity(row) == severityWell {
			return false
		}
	case statePending:
		if len(row.Pending) == 0 {
			return false
		}
	case stateUnreachable:
		if row.Sync != api.SyncUnreachable {
			return false
		}
	default:
		if row.Health != f.State {
			return false
		}
	}
	if f.Module != "" {
		if _, ok := row.Modules[f.Module]; !ok {
			return false
		}
	}
	return f.Name == "" || strings.Contains(strings.ToLower(row.Node), strings.ToLower(f.Name))
}

// healthRank orders the health states, worst first; a state this page
// does not know yet comes after the known failures and before the well.
var healthRank = map[string]int{
	"failing":         0,
	"churning":        1,
	"unknown":         3,
	"waiting-on-take": 4,
	"converged":       severityWell,
}

const (
	severityUnreachable = 2
	severityOther       = 5 // a health this page does not know
	severityPending     = 6 // converged, with a module pending or a push not applied
	severityWell        = 7
)

// severity is where row sorts in the overview: the lower, the worse.
func severity(row nodeRow) int {
	r, ok := healthRank[row.Health]
	if !ok {
		r = severityOther
	}
	if row.Sync == api.SyncUnreachable && r > severityUnreachable {
		r = severityUnreachable
	}
	if r == severityWell && (len(row.Pending) > 0 || row.Sync != syncInSync) {
		r = severityPending
	}
	return r
}

// syncInSync is projections.SyncInSync, as the API carries it.
const syncInSync = "in-sync"

// moduleRun is one module of a node as the overview shows it: its state
// (projections' module state) and its containers with theirs.
type moduleRun struct {
	Module, State, Reason string
	Containers            []containerRun
}

// containerRun is one container and its state, as the status projection
// and the API carry it (running, held, failed, restarted, or what the
// engine says: crash-looping, unhealthy, starting, ...).
type containerRun struct{ Name, State string }

// stateKinds style the states the overview and the node's page show: a
// failure, something waiting or held, something not yet known, or well.
// A state not here is shown as it is, in the neutral style (stateKind).
var stateKinds = map[string]string{
	"failing": "fail", "failed": "fail", "crash-looping": "fail", "restarting": "fail",
	"unhealthy": "fail", "exited": "fail", "dead": "fail", "unreachable": "fail",
	"churning":        "churn",
	"waiting-on-take": "warn", "held": "warn", "restarted": "warn", "pending": "warn",
	"running": "ok", "converged": "ok", "in-place": "ok", "healthy": "ok",
}

// stateKind is the style of state: fail, churn, warn, ok, or neutral
// (starting, unknown, created, and any state this page does not know).
func stateKind(state string) string {
	if k, ok := stateKinds[state]; ok {
		return k
	}
	return "neutral"
}

// runsOf is the modules of node status ns and their containers, from its
// resources r: every module ns names (assigned or applied), then any
// other r names, by name; each module's containers in r's order.
func runsOf(ns api.NodeStatus, r api.NodeResources) []moduleRun {
	byModule := map[string]*moduleRun{}
	for m, ms := range ns.Modules {
		byModule[m] = &moduleRun{Module: m, State: ms.State, Reason: ms.Reason}
	}
	for _, rs := range r.Resources {
		if rs.Kind != "container" {
			continue
		}
		mr, ok := byModule[rs.Module]
		if !ok {
			mr = &moduleRun{Module: rs.Module}
			byModule[rs.Module] = mr
		}
		mr.Containers = append(mr.Containers, containerRun{Name: rs.Name, State: rs.State})
	}
	out := make([]moduleRun, 0, len(byModule))
	for _, m := range slices.Sorted(maps.Keys(byModule)) {
		out = append(out, *byModule[m])
	}
	return out
}

// parseStatusQuery reads the overview's filter and page from r: state,
// module and name (each at most maxFilter bytes), page a whole number
// from 1 (past the last page shows the last).
func parseStatusQuery(r *http.Request) (statusFilter, int, error) {
	q := r.URL.Query()
	f := statusFilter{State: q.Get("state"), Module: q.Get("module"), Name: q.Get("name")}
	for name, v := range map[string]string{"state": f.State, "module": f.Module, "name": f.Name} {
		if len(v) > maxFilter {
			return f, 0, badRequestf("%s: at most %d bytes", name, maxFilter)
		}
	}
	page := 1
	if s := q.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return f, 0, badRequestf("page %q: want a page number from 1", s)
		}
		page = n
	}
	return f, page, nil
}

const maxFilter = 200

func (h *handler) status(w http.ResponseWriter, r *http.Request) {
	filter, page, err := parseStatusQuery(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	q := h.qs(r)
	info, err := q.Info(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	st, err := q.Status(r.Context(), api.StatusRequest{})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	v := statusView{Info: info, Skipped: st.Skipped.FailuresTotal, AsOf: st.AsOf, Total: len(st.Nodes), Filter: filter}
	for _, n := range st.Skipped.UnknownTypes {
		v.Skipped += n
	}
	count := map[string]int{}
	modules := map[string]bool{}
	var kept []nodeRow
	for _, ns := range st.Nodes {
		row := statusRow(ns)
		count[row.Health]++
		if len(row.Pending) > 0 {
			count[statePending]++
		}
		if row.Sync == api.SyncUnreachable {
			count[stateUnreachable]++
		}
		for m := range ns.Modules {
			modules[m] = true
		}
		if filter.keeps(row) {
			kept = append(kept, row)
		}
	}
	v.Counts = countsOf(count)
	v.Modules = slices.Sorted(maps.Keys(modules))
	slices.SortStableFunc(kept, func(a, b nodeRow) int {
		return cmp.Or(cmp.Compare(severity(a), severity(b)), strings.Compare(a.Node, b.Node))
	})
	v.Matched = len(kept)
	v.Pages = max(1, (len(kept)+StatusPageSize-1)/StatusPageSize)
	v.Page = min(page, v.Pages)
	from := (v.Page - 1) * StatusPageSize
	to := min(from+StatusPageSize, len(kept))
	v.Nodes = kept[from:to]
	if to > from {
		v.From, v.To = from+1, to
	}
	if v.Page > 1 {
		v.Prev = v.Page - 1
	}
	if v.Page < v.Pages {
		v.Next = v.Page + 1
	}
	for i := range v.Nodes {
		res, err := q.Resources(r.Context(), v.Nodes[i].Node)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		v.Nodes[i].Runs = runsOf(v.Nodes[i].NodeStatus, res)
	}
	h.render(w, r, "status.html", v)
}

// countsOf is the overview's counts: every health present, worst first
// (a health this page does not know after the known failures), then the
// nodes with a module pending and those unreachable.
func countsOf(count map[string]int) []stateCount {
	var out []stateCount
	healths := slices.Collect(maps.Keys(count))
	healths = slices.DeleteFunc(healths, func(s string) bool { return s == statePending || s == stateUnreachable })
	slices.SortFunc(healths, func(a, b string) int {
		ra, ok := healthRank[a]
		if !ok {
			ra = severityOther
		}
		rb, ok := healthRank[b]
		if !ok {
			rb = severityOther
		}
		return cmp.Or(cmp.Compare(ra, rb), strings.Compare(a, b))
	})
	for _, s := range healths {
		out = append(out, stateCount{State: s, Label: s, Count: count[s]})
	}
	if n := count[statePending]; n > 0 {
		out = append(out, stateCount{State: statePending, Label: "with a module pending", Count: n})
	}
	if n := count[stateUnreachable]; n > 0 {
		out = append(out, stateCount{State: stateUnreachable, Label: "unreachable", Count: n})
	}
	return out
}
