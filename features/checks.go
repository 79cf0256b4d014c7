package features

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"meshplane/api"
	"meshplane/controller"
	"meshplane/declaration"
	"meshplane/events"
	"meshplane/projections"
)

// view brings the projections up to the store's head before a check.
func view(ctx context.Context) (*World, error) {
	w := world(ctx)
	return w, w.mesh.CatchUp(ctx)
}

// statusOf is node's status once the projections caught up.
func statusOf(ctx context.Context, node string) (projections.NodeStatus, error) {
	w, err := view(ctx)
	if err != nil {
		return projections.NodeStatus{}, err
	}
	return w.mesh.Views.Status.Of(node)
}

// stream reads a node's stream from the store itself: checks are not
// subject to injected read faults.
func (w *World) stream(ctx context.Context, node string) ([]events.Event, error) {
	return w.store.ReadStream(ctx, events.NodeStream(node), 0, 0)
}

// latest returns the last event of node's stream whose type is in types.
func (w *World) latest(ctx context.Context, node string, types ...string) (events.Event, bool, error) {
	evs, err := w.stream(ctx, node)
	if err != nil {
		return events.Event{}, false, err
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if slices.Contains(types, evs[i].Type) {
			return evs[i], true, nil
		}
	}
	return events.Event{}, false, nil
}

// lastApply returns node's last apply report, resolved to its full form
// (a compact report names the earlier one whose held list it repeats), as
// the projections read it.
func (w *World) lastApply(ctx context.Context, node string) (events.ApplyReported, error) {
	evs, err := w.stream(ctx, node)
	if err != nil {
		return events.ApplyReported{}, err
	}
	reports := projections.NewReports()
	if r, ok := w.store.(events.IDReader); ok {
		// A held list named further back than the resolver keeps.
		reports.SetLookup(projections.StoreHeldLookup(ctx, r, w.mesh.Registry))
	}
	var last events.ApplyReported
	found := false
	for _, ev := range evs {
		if ev.Type != events.TypeApplyReported {
			continue
		}
		a, err := events.DecodeAs[events.ApplyReported](w.mesh.Registry, ev)
		if err != nil {
			return events.ApplyReported{}, err
		}
		if last, err = reports.Resolve(ev, a); err != nil {
			return events.ApplyReported{}, err
		}
		found = true
	}
	if !found {
		return events.ApplyReported{}, fmt.Errorf("node %s has reported no apply", node)
	}
	return last, nil
}

func pushFailsNaming(ctx context.Context, node, name string) error {
	w := world(ctx)
	ev, ok, err := w.latest(ctx, node, events.TypeDeclarationPushed, events.TypeDeclarationComposeFailed, events.TypeDeclarationPushFailed)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("nothing was pushed to %s, and no push failed", node)
	}
	var msg string
	switch ev.Type {
	case events.TypeDeclarationPushed:
		return fmt.Errorf("the push to %s succeeded (%s)", node, ev.Data)
	case events.TypeDeclarationComposeFailed:
		p, err := events.DecodeAs[events.DeclarationComposeFailed](w.mesh.Registry, ev)
		if err != nil {
			return err
		}
		msg = p.Error
	case events.TypeDeclarationPushFailed:
		p, err := events.DecodeAs[events.DeclarationPushFailed](w.mesh.Registry, ev)
		if err != nil {
			return err
		}
		msg = p.Error
	}
	if !strings.Contains(msg, name) {
		return fmt.Errorf("the push to %s failed with %q, which does not name %q", node, msg, name)
	}
	return nil
}

func noDeclarationWasPushed(ctx context.Context, node string) error {
	ev, ok, err := world(ctx).latest(ctx, node, events.TypeDeclarationPushed)
	if err != nil {
		return err
	}
	if ok {
		return fmt.Errorf("a declaration was pushed to %s: %s", node, ev.Data)
	}
	return nil
}

func roster(ctx context.Context, node string) ([]string, error) {
	w, err := view(ctx)
	if err != nil {
		return nil, err
	}
	d, err := w.mesh.Views.Roster.Current(node)
	if err != nil {
		return nil, err
	}
	return d.Roster, nil
}

func rosterContains(ctx context.Context, node, name string) error {
	r, err := roster(ctx, node)
	if err != nil {
		return err
	}
	if !slices.Contains(r, name) {
		return fmt.Errorf("the roster of %s is %v, without %q", node, r, name)
	}
	return nil
}

func rosterDoesNotContain(ctx context.Context, node, name string) error {
	r, err := roster(ctx, node)
	if err != nil {
		return err
	}
	if slices.Contains(r, name) {
		return fmt.Errorf("the roster of %s is %v, with %q", node, r, name)
	}
	return nil
}

func applyReportReads(ctx context.Context, node, want string) error {
	r, err := world(ctx).lastApply(ctx, node)
	if err != nil {
		return err
	}
	if got := r.Summary(); got != want {
		return fmt.Errorf("the apply report of %s reads\n  %q\nnot\n  %q", node, got, want)
	}
	return nil
}

func applyReportHolds(ctx context.Context, node, name, reason string) error {
	w, err := view(ctx)
	if err != nil {
		return err
	}
	holds, err := w.mesh.Views.Holds.Of(node)
	if err != nil {
		return err
	}
	for _, h := range holds {
		if h.Name == name {
			if h.Reason != reason {
				return fmt.Errorf("%s holds %s because\n  %q\nnot\n  %q", node, name, h.Reason, reason)
			}
			return nil
		}
	}
	return fmt.Errorf("the apply report of %s holds %v, not %q", node, holds, name)
}

func statusShowsWaitingOnTake(ctx context.Context, node, module string) error {
	w, err := view(ctx)
	if err != nil {
		return err
	}
	waiting, held, err := w.mesh.Views.Status.WaitingOnTake(node, module)
	if err != nil {
		return err
	}
	if !waiting || held == 0 {
		st, _ := w.mesh.Views.Status.Of(node)
		return fmt.Errorf("status of %s does not show %s waiting on take: %+v", node, module, st)
	}
	if ok, _ := w.mesh.Views.Status.Converged(node); ok {
		return fmt.Errorf("status of %s shows %s waiting on take, and converged too", node, module)
	}
	return nil
}

func converged(ctx context.Context, node string, want bool) error {
	w, err := view(ctx)
	if err != nil {
		return err
	}
	ok, err := w.mesh.Views.Status.Converged(node)
	if err != nil {
		return err
	}
	if ok != want {
		st, _ := w.mesh.Views.Status.Of(node)
		return fmt.Errorf("status of %s: sync %s, health %s (converged: %v, want %v)", node, st.Sync, st.Health, ok, want)
	}
	return nil
}

// statusShowsFailedCompose: node's status carries its latest compose's
// failure, whose message names what (the read, or the modules), and its
// health is failing (whatever its agent re-applied since).
func statusShowsFailedCompose(ctx context.Context, node, what string) error {
	st, err := statusOf(ctx, node)
	if err != nil {
		return err
	}
	switch f := st.ComposeFailed; {
	case f == nil:
		return fmt.Errorf("status of %s shows no failed compose (health %s, last apply %v)", node, st.Health, st.Applied != nil)
	case !strings.Contains(f.Error, what) && !strings.Contains(f.Read, what):
		return fmt.Errorf("status of %s shows a failed compose that does not name %q: read %q, %s", node, what, f.Read, f.Error)
	case st.Health != projections.HealthFailing:
		return fmt.Errorf("status of %s shows a failed compose, and health %s, not %s", node, st.Health, projections.HealthFailing)
	}
	return nil
}

// statusShowsPending: module is assigned to node and absent from its
// applied declaration, pending, with a reason that contains because.
func statusShowsPending(ctx context.Context, node, module, because string) error {
	st, err := statusOf(ctx, node)
	if err != nil {
		return err
	}
	ms, ok := st.Modules[module]
	switch {
	case !ok:
		return fmt.Errorf("status of %s has no module %s: %+v", node, module, st.Modules)
	case ms.State != projections.ModulePending:
		return fmt.Errorf("status of %s shows %s %s, not %s", node, module, ms.State, projections.ModulePending)
	case !strings.Contains(ms.Reason, because):
		return fmt.Errorf("status of %s shows %s pending because %q, which does not say %q", node, module, ms.Reason, because)
	}
	return nil
}

// healthIs: node's health is want (converged, waiting-on-take, failing,
// churning, unknown).
func healthIs(ctx context.Context, node, want string) error {
	st, err := statusOf(ctx, node)
	if err != nil {
		return err
	}
	if st.Health != want {
		return fmt.Errorf("health of %s is %s (sync %s), not %s", node, st.Health, st.Sync, want)
	}
	return nil
}

func statusIsConverged(ctx context.Context, node string) error    { return converged(ctx, node, true) }
func statusIsNotConverged(ctx context.Context, node string) error { return converged(ctx, node, false) }

func resourcesWereReplaced(ctx context.Context, n int, node string) error {
	r, err := world(ctx).lastApply(ctx, node)
	if err != nil {
		return err
	}
	if len(r.Replaced) != n {
		return fmt.Errorf("%d resource(s) were replaced on %s in the last pass, not %d: %+v", len(r.Replaced), node, n, r.Replaced)
	}
	return nil
}

func containerWasNotReplaced(ctx context.Context, container, node string) error {
	w, err := view(ctx)
	if err != nil {
		return err
	}
	touches, err := w.mesh.Views.Timeline.Why(node, container)
	if err != nil {
		return err
	}
	created := false
	for _, t := range touches {
		switch t.Action {
		case "created":
			if created {
				return fmt.Errorf("container %s on %s was created again at position %d (%s)", container, node, t.Entry.Position, t.Entry.Summary)
			}
			created = true
		case "replaced", "removed":
			return fmt.Errorf("container %s on %s was %s at position %d (%v)", container, node, t.Action, t.Entry.Position, t.Fields)
		}
	}
	if !created {
		return fmt.Errorf("container %s on %s was never created", container, node)
	}
	return nil
}

// appliedContainer returns the container spec of the declaration the node
// last applied: its digest from that declaration's composed event, its spec
// from the composed event that first declared that digest.
func appliedContainer(ctx context.Context, node, container string) (*declaration.Container, error) {
	w := world(ctx)
	r, err := w.lastApply(ctx, node)
	if err != nil {
		return nil, err
	}
	for _, f := range r.Failed {
		if f.Name == container {
			return nil, fmt.Errorf("container %s failed on %s: %s", container, node, f.Error)
		}
	}
	for _, h := range r.Held {
		if h.Name == container {
			return nil, fmt.Errorf("container %s is held on %s: %s", container, node, h.Reason)
		}
	}
	evs, err := w.stream(ctx, node)
	if err != nil {
		return nil, err
	}
	digest := ""
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type != events.TypeDeclarationComposed {
			continue
		}
		p, err := events.DecodeAs[events.DeclarationComposed](w.mesh.Registry, evs[i])
		if err != nil {
			return nil, err
		}
		if digest == "" {
			if p.Declaration != r.Declaration {
				continue
			}
			if p.ByReference() {
				// Its resources are those of the declaration it names, as
				// every reader resolves them (events.ResourcesOf).
				ir, ok := w.store.(events.IDReader)
				if !ok {
					return nil, fmt.Errorf("declaration %s of %s is stored by reference, and the store does not read by id", p.Declaration, node)
				}
				if p.Resources, err = events.ResourcesOf(ctx, ir, w.mesh.Registry, evs[i].Stream, p.ResourcesSince); err != nil {
					return nil, err
				}
			}
			for _, ref := range p.Resources {
				if ref.Name == container && ref.Kind == declaration.KindContainer {
					digest = ref.Digest
				}
			}
			if digest == "" {
				return nil, fmt.Errorf("declaration %s applied on %s has no container %q", r.Declaration, node, container)
			}
		}
		if spec, ok := p.Specs[digest]; ok {
			var c declaration.Container
			if err := json.Unmarshal(spec, &c); err != nil {
				return nil, fmt.Errorf("spec %s of %s: %w", digest, container, err)
			}
			return &c, nil
		}
	}
	if digest == "" {
		return nil, fmt.Errorf("node %s applied %s, whose composed event is not in its stream", node, r.Declaration)
	}
	return nil, fmt.Errorf("no composed event on %s carries the spec %s of %s", node, digest, container)
}

func containerHasEnvironment(ctx context.Context, container, node, env string) error {
	c, err := appliedContainer(ctx, node, container)
	if err != nil {
		return err
	}
	if !slices.Contains(c.Env, env) {
		return fmt.Errorf("container %s on %s has environment %v, without %q", container, node, c.Env, env)
	}
	return nil
}

func containerRunsImage(ctx context.Context, container, node, image string) error {
	c, err := appliedContainer(ctx, node, container)
	if err != nil {
		return err
	}
	if c.Image != image {
		return fmt.Errorf("container %s on %s runs %q, not %q", container, node, c.Image, image)
	}
	return nil
}

func churnLoopDetected(ctx context.Context, node string) error {
	w, err := view(ctx)
	if err != nil {
		return err
	}
	if !w.mesh.Views.Churn.Active(node) {
		return fmt.Errorf("no churn loop is active on %s; episodes: %+v", node, w.mesh.Views.Churn.Episodes(node))
	}
	return nil
}

func noChurnDetected(ctx context.Context, node string) error {
	w, err := view(ctx)
	if err != nil {
		return err
	}
	if w.mesh.Views.Churn.Active(node) {
		ep, _ := w.mesh.Views.Churn.Current(node)
		return fmt.Errorf("a churn loop is active on %s: %+v", node, ep)
	}
	return nil
}

func projectionsEqualBefore(ctx context.Context) error {
	w, err := view(ctx)
	if err != nil {
		return err
	}
	if w.before == nil {
		return fmt.Errorf("the projections were not rebuilt in this scenario")
	}
	after, err := json.Marshal(w.mesh.Views)
	if err != nil {
		return err
	}
	if !bytes.Equal(after, w.before) {
		return fmt.Errorf("the projections differ after the rebuild:\nbefore %s\nafter  %s", w.before, after)
	}
	return nil
}

func eventStreamHas(ctx context.Context, n int, typ, node string) error {
	evs, err := world(ctx).stream(ctx, node)
	if err != nil {
		return err
	}
	got := 0
	for _, ev := range evs {
		if ev.Type == typ {
			got++
		}
	}
	if got != n {
		return fmt.Errorf("the event stream has %d %q events for %s, not %d", got, typ, node, n)
	}
	return nil
}

func timelineOfModuleReads(ctx context.Context, module, words string) error {
	w, err := view(ctx)
	if err != nil {
		return err
	}
	var lines []string
	for _, en := range w.mesh.Views.Timeline.Query(projections.Filter{Module: module}) {
		if strings.Contains(en.Summary, words) {
			return nil
		}
		lines = append(lines, en.Summary)
	}
	return fmt.Errorf("no entry of module %s's timeline reads %q:\n  %s", module, words, strings.Join(lines, "\n  "))
}

// whyNames checks that why connects the last replacement of container on
// node to what is behind it: the deploy and the build (seed 002).
func whyNames(ctx context.Context, container, node, words string) error {
	w, err := view(ctx)
	if err != nil {
		return err
	}
	touches, err := w.mesh.Views.Timeline.Why(node, container)
	if err != nil {
		return err
	}
	for i := len(touches) - 1; i >= 0; i-- {
		t := touches[i]
		if t.Action != projections.ActionReplaced {
			continue
		}
		var lines []string
		behind, err := w.mesh.Views.Timeline.DeployBehind(node, container, t.Entry.Position)
		if err != nil {
			return err
		}
		for _, en := range behind {
			if strings.Contains(en.Summary, words) {
				return nil
			}
			lines = append(lines, en.Summary)
		}
		// The binding behind each value it was given, as `mesh why` words
		// it (issue 35).
		bound, err := bindingsBehind(ctx, w, node, container, t.Entry.Position)
		if err != nil {
			return err
		}
		for _, b := range bound {
			if strings.Contains(b, words) {
				return nil
			}
			lines = append(lines, b)
		}
		return fmt.Errorf("why %s on %s was replaced (at #%d) names no %q; behind it:\n  %s", container, node, t.Entry.Position, words, strings.Join(lines, "\n  "))
	}
	return fmt.Errorf("container %s on %s was never replaced", container, node)
}

func (w *World) plan(node string) (api.NodePlan, error) {
	np, ok := w.plans[node]
	if !ok {
		return api.NodePlan{}, fmt.Errorf("the mesh was not planned for %s in this scenario", node)
	}
	return np, nil
}

// planStep returns the plan's step for resource name, if it has one.
func planStep(np api.NodePlan, name string) (api.PreviewStep, bool) {
	for _, s := range np.Steps {
		if s.Name == name {
			return s, true
		}
	}
	return api.PreviewStep{}, false
}

func planSteps(np api.NodePlan) string {
	var b strings.Builder
	b.WriteString(np.Headline)
	for _, s := range np.Steps {
		fmt.Fprintf(&b, "\n  %s %s %v: %s", s.Action, s.Name, s.Fields, s.Reason)
	}
	return b.String()
}

func planReplaces(ctx context.Context, node, name, field string) error {
	np, err := world(ctx).plan(node)
	if err != nil {
		return err
	}
	s, ok := planStep(np, name)
	if !ok || s.Action != "replace" {
		return fmt.Errorf("the plan for %s does not replace %s:\n%s", node, name, planSteps(np))
	}
	for _, f := range s.Fields {
		if strings.Contains(f, field) {
			return nil
		}
	}
	// "env.STORE_ADDR: 10.1.0.3:5432 → 10.1.0.3:6852": a field with what
	// it was and what it becomes.
	var changes []string
	for _, c := range s.Changes {
		changes = append(changes, fmt.Sprintf("%s: %s → %s", c.Field, c.From, c.To))
		if changes[len(changes)-1] == field {
			return nil
		}
	}
	return fmt.Errorf("the plan for %s replaces %s because of %v (%s), none of which is %q", node, name, s.Fields, strings.Join(changes, "; "), field)
}

func planHolds(ctx context.Context, node, name string) error {
	np, err := world(ctx).plan(node)
	if err != nil {
		return err
	}
	if np.Source != api.PlanByAgent {
		return fmt.Errorf("the plan for %s was not made by its agent (%s: %s): holds are known only there", node, np.Source, np.NoAnswer)
	}
	if s, ok := planStep(np, name); !ok || s.Action != "hold" {
		return fmt.Errorf("the plan for %s does not hold %s:\n%s", node, name, planSteps(np))
	}
	return nil
}

func planChangesNothing(ctx context.Context, node string) error {
	np, err := world(ctx).plan(node)
	if err != nil {
		return err
	}
	if len(np.Steps) > 0 || np.Hosts != "" || np.Source == api.PlanNotComposed {
		return fmt.Errorf("the plan for %s changes something:\n%s", node, planSteps(np))
	}
	return nil
}

func planIsHeavy(ctx context.Context, node string) error {
	np, err := world(ctx).plan(node)
	if err != nil {
		return err
	}
	if !np.Heavy || !strings.Contains(np.Headline, "HEAVY") {
		return fmt.Errorf("the plan for %s is not heavy:\n%s", node, planSteps(np))
	}
	return nil
}

func planIsNotHeavy(ctx context.Context, node string) error {
	np, err := world(ctx).plan(node)
	if err != nil {
		return err
	}
	if np.Heavy {
		return fmt.Errorf("the plan for %s is heavy:\n%s", node, planSteps(np))
	}
	return nil
}

func planWithoutAgent(ctx context.Context, node string) error {
	np, err := world(ctx).plan(node)
	if err != nil {
		return err
	}
	if np.Source != api.PlanByDeclarations || np.NoAnswer == "" {
		return fmt.Errorf("the plan for %s was made by %s", node, np.Source)
	}
	return nil
}

// lastPassDidWhatThePlanSaid holds plan and pass together, resource by
// resource: the declaration, and every resource created, replaced (with
// its fields), updated, removed, held (with its reason) and failed, and
// the counts.
func lastPassDidWhatThePlanSaid(ctx context.Context, node string) error {
	w := world(ctx)
	np, err := w.plan(node)
	if err != nil {
		return err
	}
	got, err := w.lastApply(ctx, node)
	if err != nil {
		return err
	}
	if d := controller.Diverges(np.Outcome, got); d != "" {
		return fmt.Errorf("the last pass on %s did not do what the plan said: %s", node, d)
	}
	return nil
}
