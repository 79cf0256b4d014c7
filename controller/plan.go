package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/declaration"
	"meshplane/declaration/nodeplan"
	"meshplane/events"
	"meshplane/projections"
	"meshplane/wire"
)

// DryRunner asks a node's agent what it would do with a declaration,
// without applying it: the agent observes its node and runs the same Diff
// as an apply (agent.Agent.DryRun). The bus implements it (a request on the
// node's plan subject); the simulator answers in process.
type DryRunner interface {
	DryRun(ctx context.Context, d declaration.Declaration) (wire.Preview, error)
}

// DefaultDryRunTimeout is how long a plan waits for a node's answer before
// it falls back to the declaration-to-declaration diff.
const DefaultDryRunTimeout = 5 * time.Second

// Planning is what PlanNode reads.
type Planning struct {
	// Reader is where compose reads: the store (a commands.Handler), or
	// the mesh as it would be after some commands (Handler.Hypothetical).
	Reader commands.Reader
	// Store and Registry read the node's stream for the fallback: the
	// declaration its last apply report applied.
	Store    events.Store
	Registry *events.Registry
	// DryRun asks the node's agent; nil when none can be asked, NoDryRun
	// then says why.
	DryRun   DryRunner
	NoDryRun string
	// Timeout bounds the node's answer; 0 means DefaultDryRunTimeout.
	Timeout time.Duration
	// Status, when set, gives the node's last apply, for rule 7's retry
	// exception: a container that apply failed, created now, is not
	// churn (events.Heavy). Nil: no apply is known.
	Status *projections.Status
}

// PlanNode is what the next push would do on node, appending nothing. It
// composes as a push does (commands.Compose, through p.Reader), then asks the
// node's agent for a dry run of that declaration: the agent's Diff against
// what the node holds, found data and holds included. A node that does not
// answer within the timeout is planned by the same Diff against the
// declaration its last apply report applied (nodeplan.Declared, LastApplied),
// labelled so, naming a push not applied yet. A
// declaration that does not compose is a plan of nothing, saying why. A
// failed read is an error (rule 1), never a plan.
func PlanNode(ctx context.Context, p Planning, node string) (api.NodePlan, error) {
	comp, err := commands.Compose(ctx, p.Reader, node, "")
	if errors.Is(err, commands.ErrIncoherent) {
		np := api.NodePlan{Preview: api.Preview{Node: node}, Source: api.PlanNotComposed, ComposeError: err.Error()}
		np.Headline = headline(np, events.Weight{})
		return np, nil
	}
	if err != nil {
		return api.NodePlan{}, fmt.Errorf("plan %s: %w", node, err)
	}
	d := comp.Declaration
	np := api.NodePlan{Source: api.PlanByAgent, New: !comp.Unchanged, Warnings: d.Warnings}
	var pv wire.Preview
	noAnswer := p.NoDryRun
	if p.DryRun != nil {
		timeout := p.Timeout
		if timeout <= 0 {
			timeout = DefaultDryRunTimeout
		}
		dctx, cancel := context.WithTimeout(ctx, timeout)
		pv, err = p.DryRun.DryRun(dctx, d)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return api.NodePlan{}, fmt.Errorf("plan %s: %w", node, ctx.Err())
			}
			noAnswer = err.Error()
		}
	}
	if p.DryRun == nil || err != nil {
		if noAnswer == "" {
			noAnswer = "no agent could be asked"
		}
		last, err := LastApplied(ctx, p.Store, p.Registry, node, d)
		if err != nil {
			return api.NodePlan{}, fmt.Errorf("plan %s: %w", node, err)
		}
		obs, st := nodeplan.Declared(last.Applied)
		pv = nodeplan.PreviewOf(node, d, nodeplan.Diff(d, obs, st))
		np.Source, np.NoAnswer = api.PlanByDeclarations, noAnswer
		np.Against, np.Unapplied = last.Applied.ID, last.Unapplied()
	}
	np.Preview = previewOf(pv)
	prior := priorOf(p.Status, node)
	if np.Source == api.PlanByDeclarations && np.Against == "" {
		prior.none = true // no apply report: nothing was applied
	}
	w := planWeight(&np.Outcome, planContext(d, pv, prior.failed))
	np.Heavy = w.Heavy() && !prior.none
	np.Headline = headline(np, w)
	return np, nil
}

// planContext is what rule 7 weighs a plan of d against (events.Heavy): d's
// resources and containers, the names of containers in d or in the plan's
// steps (a removal is of a container d no longer has), and what the node's
// last apply failed.
func planContext(d declaration.Declaration, pv wire.Preview, failed map[string]bool) events.PassContext {
	c := events.PassContext{Resources: len(d.Resources), ContainerNames: map[string]bool{}, FailedBefore: failed}
	for _, r := range d.Resources {
		if r.Kind == declaration.KindContainer {
			c.Containers++
			c.ContainerNames[r.Name] = true
		}
	}
	for _, s := range pv.Steps {
		if s.Kind == declaration.KindContainer {
			c.ContainerNames[s.Name] = true
		}
	}
	return c
}

// prior is what a plan's verdict needs of the node's apply before it.
type prior struct {
	failed map[string]bool // the resources it failed
	none   bool            // the node has had no resource applied: a first deploy
}

// priorOf is node's last apply as st knows it (nil st: nothing known, so
// neither a retry nor a first deploy).
func priorOf(st *projections.Status, node string) prior {
	if st == nil {
		return prior{}
	}
	ns, err := st.Of(node)
	if err != nil {
		return prior{}
	}
	if ns.Applied == nil || ns.Applied.Report.Sent == 0 {
		return prior{none: true}
	}
	out := prior{failed: make(map[string]bool, len(ns.Applied.Report.Failed))}
	for _, f := range ns.Applied.Report.Failed {
		out.failed[f.Name] = true
	}
	return out
}

// planWeight is rule 7's weight of a plan (events.Weigh), with a retry
// counted by neither clause: a resource the node's last apply failed,
// created now, is no churn (Weigh leaves it out of the containers, and
// here it leaves the resources too, as mesh plan --help says). A first
// deploy is never heavy either (PlanNode): rule 7 is about churn on a
// running node, and a node that has had no resource applied runs nothing
// a push could churn.
func planWeight(out *events.ApplyReported, c events.PassContext) events.Weight {
	w := events.Weigh(out, c)
	for _, name := range out.Created {
		if c.FailedBefore[name] {
			w.Changed--
		}
	}
	return w
}

// headline is a plan's first line. A heavy plan says so first, in rule 7's
// words, before anyone pushes it.
func headline(np api.NodePlan, w events.Weight) string {
	node := np.Node
	switch {
	case np.Source == api.PlanNotComposed:
		return fmt.Sprintf("%s: does not compose, a push would send nothing: %s", node, np.ComposeError)
	case np.Heavy && w.ByResources():
		return fmt.Sprintf("%s: HEAVY: the push would create, replace or remove %d resource(s) of a declaration of %d, at least half of its resources: a heavy pass (rule 7)",
			node, w.Changed, w.Resources)
	case np.Heavy:
		return fmt.Sprintf("%s: HEAVY: the push would create, replace or remove %d of the declaration's %d container(s), at least half of them: a heavy pass (rule 7)",
			node, w.ContainersChanged, w.Containers)
	}
	var parts []string
	count := map[string]int{}
	for _, s := range np.Steps {
		count[s.Action]++
	}
	for _, a := range []string{"create", "replace", "update", "remove", "hold", "reject"} {
		if count[a] > 0 {
			parts = append(parts, fmt.Sprintf("%d to %s", count[a], a))
		}
	}
	if np.Hosts != "" {
		parts = append(parts, "the hosts file to update in place")
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%s: nothing changes (%s, %d unchanged)", node, np.Declaration, np.Unchanged)
	}
	return fmt.Sprintf("%s: %s, %d unchanged", node, strings.Join(parts, ", "), np.Unchanged)
}

// Last is what a plan that cannot ask the agent compares with: the
// declaration the node's last apply report applied (what its agent holds,
// as far as the mesh knows), and the one last pushed to it.
type Last struct {
	Applied declaration.Declaration // empty when the node has reported no apply
	Pushed  string                  // the id last pushed; "" when none
}

// Unapplied is the declaration pushed after the one last applied, ""
// when the last push has been applied (or there is none).
func (l Last) Unapplied() string {
	if l.Pushed != "" && l.Pushed != l.Applied.ID {
		return l.Pushed
	}
	return ""
}

// LastApplied rebuilds, from node's stream, the declaration of the node's
// last apply report, and names the declaration last pushed.
func LastApplied(ctx context.Context, store events.Store, reg *events.Registry, node string, next declaration.Declaration) (Last, error) {
	d, evs, err := lastApplied(ctx, store, reg, node, next)
	if err != nil {
		return Last{}, err
	}
	out := Last{Applied: d}
	for _, ev := range slices.Backward(evs) {
		if ev.Type == events.TypeDeclarationPushed {
			p, err := events.DecodeAs[events.DeclarationPushed](reg, ev)
			if err != nil {
				return Last{}, fmt.Errorf("read %s #%d: %w", events.NodeStream(node), ev.Version, err)
			}
			out.Pushed = p.Declaration
			break
		}
	}
	return out, nil
}

// lastApplied rebuilds the declaration node's last apply report names,
// and returns the stream read: its resources with their specs (each spec
// stands once in the stream, in the composed event that first declared
// its digest). The hosts file is not in the stream: it is taken to be
// next's when the roster's names are the same (read from the roster's
// stream for a compose naming its revision), and to differ otherwise.
// No apply yet is the empty declaration. A resource whose spec the stream
// does not hold (an event written by hand) is left out: the plan then
// creates it.
func lastApplied(ctx context.Context, store events.Store, reg *events.Registry, node string, next declaration.Declaration) (declaration.Declaration, []events.Event, error) {
	evs, err := store.ReadStream(ctx, events.NodeStream(node), 0, 0)
	if err != nil {
		return declaration.Declaration{}, nil, fmt.Errorf("read %s: %w", events.NodeStream(node), err)
	}
	want := ""
	for _, ev := range slices.Backward(evs) {
		if ev.Type != events.TypeApplyReported {
			continue
		}
		p, err := events.DecodeAs[events.ApplyReported](reg, ev)
		if err != nil {
			return declaration.Declaration{}, nil, fmt.Errorf("read %s #%d: %w", events.NodeStream(node), ev.Version, err)
		}
		want = p.Declaration
		break
	}
	if want == "" {
		return declaration.Declaration{}, evs, nil
	}
	specs := map[string]json.RawMessage{}
	var composed *events.DeclarationComposed
	book := resourceBook(store, reg)
	for _, ev := range evs {
		if ev.Type != events.TypeDeclarationComposed {
			continue
		}
		p, err := decodeComposed(ctx, book, reg, ev)
		if err != nil {
			return declaration.Declaration{}, nil, fmt.Errorf("read %s #%d: %w", events.NodeStream(node), ev.Version, err)
		}
		for dg, s := range p.Specs {
			specs[dg] = s
		}
		if p.Declaration == want {
			composed = &p
		}
	}
	if composed == nil {
		return declaration.Declaration{}, evs, nil
	}
	d := declaration.Declaration{Node: node, ID: composed.Declaration, Digest: composed.Digest}
	for _, ref := range composed.Resources {
		raw, ok := specs[ref.Digest]
		if !ok {
			continue
		}
		r, ok, err := resourceOf(ref, raw)
		if err != nil {
			return declaration.Declaration{}, nil, fmt.Errorf("spec %s of %s in %s: %w", ref.Digest, ref.Name, composed.Declaration, err)
		}
		if ok {
			d.Resources = append(d.Resources, r)
		}
	}
	// A compose naming a roster revision is stored without its names
	// (the roster is on its own stream): they are read from there, as
	// every surface does (events.RosterBook). Compared without them, every
	// hosts file differed (mesh plan after mesh up --once).
	rc, err := events.NewRosterBook(reg, store).Resolve(ctx, *composed)
	if err != nil {
		return declaration.Declaration{}, nil, fmt.Errorf("the roster of %s: %w", composed.Declaration, err)
	}
	if slices.Equal(rc.Roster, rosterNames(next)) {
		d.Hosts = next.Hosts
	}
	return d, evs, nil
}

// resourceOf is the declared resource ref with its spec raw (as a
// composed event holds it); false for a kind this build does not know.
func resourceOf(ref events.ResourceRef, raw json.RawMessage) (declaration.Resource, bool, error) {
	r := declaration.Resource{Name: ref.Name, Kind: ref.Kind, Module: ref.Module, Digest: ref.Digest}
	var target any
	switch ref.Kind {
	case declaration.KindContainer:
		r.Container = &declaration.Container{}
		target = r.Container
	case declaration.KindDirectory:
		r.Directory = &declaration.Directory{}
		target = r.Directory
	case declaration.KindFile:
		r.File = &declaration.File{}
		target = r.File
	default:
		return r, false, nil
	}
	if err := json.Unmarshal(raw, target); err != nil {
		return r, false, err
	}
	return r, true, nil
}

func rosterNames(d declaration.Declaration) []string {
	out := make([]string, 0, len(d.Roster))
	for _, r := range d.Roster {
		if len(out) == 0 || out[len(out)-1] != r.Name {
			out = append(out, r.Name)
		}
	}
	return out
}

// afterWords are the --after commands, as mesh plan's refusal names them.
const afterWords = `deploy MODULE [--digest D], revert MODULE --to TIME|POSITION, assign|take|release MODULE NODE, node adopt NODE, node set NODE KEY [VALUE], secret set NAME, or module define FILE...`

// ParseAfter reads mesh plan's --after commands, each a mesh command line
// without "mesh": "deploy MODULE [--digest D]", "revert MODULE --to
// TIME|POSITION", "assign|take|release MODULE
// NODE", "node adopt NODE", "node set NODE KEY [VALUE]" (no VALUE clears
// it), "module define FILE...", "secret set NAME" (a rotation to a value
// the plan never knows: rotate gives its commands; nil refuses it). A
// module define's files are taken from files (the caller read them:
// api.PlanRequest.Files); one not there is a rejection naming it. Anything
// else is a rejection (invalid) naming it.
func ParseAfter(lines []string, files map[string]api.ModuleDefinition, rotate func(secret string) ([]commands.Command, error)) ([]commands.Command, error) {
	var out []commands.Command
	for _, line := range lines {
		w := strings.Fields(line)
		if len(w) == 3 && w[0] == "secret" && w[1] == "set" {
			if rotate == nil {
				return nil, &commands.Rejection{Code: commands.CodeInvalid, Msg: fmt.Sprintf("--after %q: this controller keeps no secrets", line)}
			}
			cs, err := rotate(w[2])
			if err != nil {
				return nil, err
			}
			out = append(out, cs...)
			continue
		}
		if len(w) >= 3 && w[0] == "module" && w[1] == "define" {
			for _, f := range w[2:] {
				d, ok := files[f]
				if !ok {
					return nil, &commands.Rejection{Code: commands.CodeInvalid, Msg: fmt.Sprintf(
						"--after %q: module file %s was not sent with the plan (mesh plan reads it)", line, f)}
				}
				out = append(out, commands.DefineModule{Module: d.Module, Spec: d.Spec})
			}
			continue
		}
		if to, ok := revertTo(w); ok {
			m, err := commands.ParseMoment(to)
			if err != nil {
				return nil, &commands.Rejection{Code: commands.CodeInvalid, Msg: fmt.Sprintf("--after %q: --to %v", line, err)}
			}
			out = append(out, commands.RevertModule{Module: w[1], To: m})
			continue
		}
		c, ok := parseAfter(w)
		if !ok {
			return nil, &commands.Rejection{Code: commands.CodeInvalid, Msg: fmt.Sprintf("--after %q: want a command: %s", line, afterWords)}
		}
		out = append(out, c)
	}
	return out, nil
}

// CheckAfter says whether line is one of the --after commands, by its
// words alone (a module define's files are not read).
func CheckAfter(line string) error {
	w := strings.Fields(line)
	if len(w) >= 3 && w[0] == "module" && w[1] == "define" || len(w) == 3 && w[0] == "secret" && w[1] == "set" {
		return nil
	}
	if to, ok := revertTo(w); ok {
		_, err := commands.ParseMoment(to)
		return err
	}
	if _, ok := parseAfter(w); !ok {
		return fmt.Errorf("want a command: %s", afterWords)
	}
	return nil
}

// AfterFiles are the module files line names, when it is a module define
// ("module define FILE..."); none otherwise.
func AfterFiles(line string) []string {
	w := strings.Fields(line)
	if len(w) >= 3 && w[0] == "module" && w[1] == "define" {
		return w[2:]
	}
	return nil
}

// revertTo is the moment of "revert MODULE --to MOMENT" (or --to=MOMENT),
// and whether w is one.
func revertTo(w []string) (string, bool) {
	switch {
	case len(w) == 3 && w[0] == "revert" && strings.HasPrefix(w[2], "--to="):
		return strings.TrimPrefix(w[2], "--to="), true
	case len(w) == 4 && w[0] == "revert" && w[2] == "--to":
		return w[3], true
	}
	return "", false
}

func parseAfter(w []string) (commands.Command, bool) {
	switch {
	case len(w) == 2 && w[0] == "deploy":
		return commands.DeployModule{Module: w[1]}, true
	case len(w) == 3 && w[0] == "deploy" && strings.HasPrefix(w[2], "--digest="):
		return commands.DeployModule{Module: w[1], Digest: strings.TrimPrefix(w[2], "--digest=")}, true
	case len(w) == 4 && w[0] == "deploy" && w[2] == "--digest":
		return commands.DeployModule{Module: w[1], Digest: w[3]}, true
	case len(w) == 3 && w[0] == "assign":
		return commands.AssignModule{Module: w[1], Node: w[2]}, true
	case len(w) == 3 && w[0] == "take":
		return commands.TakeModule{Module: w[1], Node: w[2]}, true
	case len(w) == 3 && w[0] == "release":
		return commands.ReleaseModule{Module: w[1], Node: w[2]}, true
	case len(w) == 3 && w[0] == "node" && w[1] == "adopt":
		return commands.AdoptNode{Node: w[2]}, true
	case len(w) == 4 && w[0] == "node" && w[1] == "set":
		return commands.SetNodeSetting{Node: w[2], Key: w[3]}, true
	case len(w) == 5 && w[0] == "node" && w[1] == "set":
		return commands.SetNodeSetting{Node: w[2], Key: w[3], Value: w[4]}, true
	}
	return nil, false
}

// Plan is mesh plan: what the next push would do on each node asked (every
// node when none is), as if req.After's commands had run first; nothing is
// appended. Each node's agent is asked for a dry run over the bus when the
// controller has one; otherwise, or when a node does not answer, its plan
// is the declaration-to-declaration diff, labelled so.
func (c *Controller) Plan(ctx context.Context, req api.PlanRequest) (api.PlanResponse, error) {
	cs, err := ParseAfter(req.After, req.Files, func(name string) ([]commands.Command, error) { return c.plannedRotation(ctx, name) })
	if err != nil {
		return api.PlanResponse{}, err
	}
	if err := c.Sync(ctx); err != nil { // the status read for each node's last apply
		return api.PlanResponse{}, err
	}
	var r commands.Reader = c.handler
	if len(cs) > 0 {
		if r, err = c.handler.Hypothetical(ctx, cs); err != nil {
			return api.PlanResponse{}, err
		}
	}
	nodes := req.Nodes
	if len(nodes) == 0 {
		if nodes, err = c.handler.Nodes(ctx); err != nil {
			return api.PlanResponse{}, err
		}
	}
	p := Planning{Reader: r, Store: c.store, Registry: c.reg, Status: c.views.Status}
	if dr, ok := c.pub.(DryRunner); ok {
		p.DryRun = dr
	} else {
		p.NoDryRun = "this controller has no bus to ask it on"
	}
	out := api.PlanResponse{After: req.After, Nodes: make([]api.NodePlan, 0, len(nodes))}
	for _, node := range nodes {
		np, err := PlanNode(ctx, p, node)
		if err != nil {
			return api.PlanResponse{}, err
		}
		if req.Reached && len(req.Nodes) == 0 && !np.New && np.Source != api.PlanNotComposed {
			continue // the commands leave its declaration as it is
		}
		out.Heavy = out.Heavy || np.Heavy
		out.Nodes = append(out.Nodes, np)
	}
	return out, nil
}

// Diverges compares what a plan predicted (NodePlan.Outcome) with what the
// apply after it reported, resource by resource: the declaration, every
// resource created, replaced (with its fields), updated, removed, held
// (with its module and reason) and failed, and the counts. "" when they
// agree; otherwise each difference, planned and done.
func Diverges(planned, did events.ApplyReported) string {
	var diffs []string
	cmp := func(what string, a, b any) {
		aj, _ := json.Marshal(a)
		bj, _ := json.Marshal(b)
		if string(aj) != string(bj) {
			diffs = append(diffs, fmt.Sprintf("%s: planned %s, did %s", what, aj, bj))
		}
	}
	names := func(fs []events.Failed) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Name)
		}
		return out
	}
	cmp("declaration", planned.Declaration, did.Declaration)
	cmp("sent", planned.Sent, did.Sent)
	cmp("applied", planned.Applied, did.Applied)
	cmp("created", planned.Created, did.Created)
	cmp("replaced", planned.Replaced, did.Replaced)
	cmp("updated", planned.Updated, did.Updated)
	cmp("removed", planned.Removed, did.Removed)
	cmp("held", planned.Held, did.Held)
	cmp("failed", names(planned.Failed), names(did.Failed))
	cmp("unchanged", planned.Unchanged, did.Unchanged)
	return strings.Join(diffs, "; ")
}
