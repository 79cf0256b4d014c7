// Package features is meshplane's scenario step library: every step of
// docs/scenario-steps.md, word for word, over an in-process mesh (package sim) that runs
// the same commands, store, projections and agent code as `mesh up`. The
// feature files beside it are run by `go test ./features/...` and by
// `mesh scenario run FILE...`.
//
// Each scenario gets its own World (carried by the context godog hands every
// step, never a package global): an empty store, an empty simulated runtime
// per node, and no faults. Given and When steps act only through commands
// (and, for the world outside the mesh, the simulated runtime); Then steps
// read projections or the event stream, never internal state.
package features

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/cucumber/godog"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/events"
	"meshplane/events/storeurl"
	"meshplane/sim"
)

// Stores the scenarios can run on.
const (
	StoreMemory   = "memory"
	StoreBolt     = "bolt"
	StorePostgres = "postgres" // through Options.OpenStore
	StoreESDB     = "esdb"     // through Options.OpenStore
)

// Options configure the step library.
type Options struct {
	// Store is "memory" (the default), "bolt", or "postgres" or "esdb",
	// which OpenStore opens.
	Store string
	// OpenStore opens a new, empty store for one scenario, and returns the
	// function that closes and removes it. Required for the stores the
	// step library does not open itself (postgres, esdb): it keeps their
	// servers and clients out of this package.
	OpenStore func() (events.Store, func(), error)
	// TempDir makes a directory for a scenario's bolt file; os.MkdirTemp
	// when nil.
	TempDir func() (string, error)
}

// World is one scenario's mesh and what its steps remember.
type World struct {
	mesh    *sim.Mesh
	store   events.Store
	cleanup func()
	modules map[string]*events.ModuleSpec // as the scenario has defined them
	before  []byte                        // the projections before a rebuild
	plans   map[string]api.NodePlan       // the last plan per node
	moments map[string]uint64             // store positions kept by name (revert_steps.go)
}

type worldKey struct{}

func world(ctx context.Context) *World { return ctx.Value(worldKey{}).(*World) }

// Initialize registers every step and the per-scenario set-up on sc.
func Initialize(sc *godog.ScenarioContext, opts Options) {
	sc.Before(func(ctx context.Context, s *godog.Scenario) (context.Context, error) {
		w, err := newWorld(opts)
		if err != nil {
			return ctx, err
		}
		return context.WithValue(ctx, worldKey{}, w), nil
	})
	sc.After(func(ctx context.Context, s *godog.Scenario, err error) (context.Context, error) {
		if w, ok := ctx.Value(worldKey{}).(*World); ok && w.cleanup != nil {
			w.cleanup()
		}
		return ctx, nil
	})

	// Given: set-up, through real commands.
	sc.Step(`^a mesh with nodes "([^"]*)"$`, aMeshWithNodes)
	sc.Step(`^node "([^"]*)" is adopted$`, nodeIsAdopted)
	sc.Step(`^node "([^"]*)" has port "([^"]*)" set to (\d+)$`, nodeHasPort)
	sc.Step(`^node "([^"]*)" has private address "([^"]*)"$`, nodeHasPrivateAddress)
	sc.Step(`^node "([^"]*)" holds the artifact store on port (\d+)$`, nodeHoldsArtifactStore)
	sc.Step(`^module "([^"]*)" with containers "([^"]*)"$`, moduleWithContainers)
	sc.Step(`^module "([^"]*)" container "([^"]*)" mounts "([^"]*)"$`, containerMounts)
	sc.Step(`^module "([^"]*)" routes name "([^"]*)"$`, moduleRoutesName)
	sc.Step(`^module "([^"]*)" writes file "([^"]*)" with "([^"]*)"$`, moduleWritesFile)
	sc.Step(`^module "([^"]*)" container "([^"]*)" reads port "([^"]*)" of its node as "([^"]*)"$`, containerReadsPort)
	sc.Step(`^module "([^"]*)" container "([^"]*)" runs artifact "([^"]*)" at digest "([^"]*)"$`, containerRunsArtifact)
	sc.Step(`^module "([^"]*)" container "([^"]*)" runs artifact "([^"]*)" with no build yet$`, containerRunsArtifactNoBuild)
	sc.Step(`^module "([^"]*)" upgrades by roll-out$`, moduleUpgradesByRollOut)
	sc.Step(`^module "([^"]*)" does not compose$`, moduleDoesNotCompose)
	sc.Step(`^directory "([^"]*)" exists on node "([^"]*)"$`, directoryExistsOnNode)

	// When: actions.
	sc.Step(`^module "([^"]*)" is assigned to "([^"]*)"$`, moduleIsAssigned)
	sc.Step(`^module "([^"]*)" is taken on "([^"]*)"$`, moduleIsTaken)
	sc.Step(`^module "([^"]*)" is released from "([^"]*)"$`, moduleIsReleased)
	sc.Step(`^the mesh is pushed to "([^"]*)"$`, meshIsPushedTo)
	sc.Step(`^the mesh is pushed to every node$`, meshIsPushedToEveryNode)
	sc.Step(`^node "([^"]*)" applies its latest declaration$`, nodeApplies)
	sc.Step(`^(\d+) passes run on "([^"]*)"$`, passesRun)
	sc.Step(`^the store fails reads of node "([^"]*)"$`, storeFailsReads)
	sc.Step(`^the store fails reads of node "([^"]*)" on every other pass$`, storeFailsReadsEveryOtherPass)
	sc.Step(`^the store recovers$`, storeRecovers)
	sc.Step(`^the bus to "([^"]*)" is cut$`, busIsCut)
	sc.Step(`^the bus to "([^"]*)" is restored$`, busIsRestored)
	sc.Step(`^the projections are rebuilt from the event stream$`, projectionsAreRebuilt)
	sc.Step(`^something outside the mesh removes every container on "([^"]*)" after each apply$`, outsideRemovesContainers)
	sc.Step(`^the event stream receives:$`, eventStreamReceives)
	sc.Step(`^a build of "([^"]*)" at digest "([^"]*)" is recorded$`, buildIsRecorded)
	sc.Step(`^module "([^"]*)" is deployed$`, moduleIsDeployed)
	sc.Step(`^module "([^"]*)" is deployed at digest "([^"]*)"$`, moduleIsDeployedAt)
	sc.Step(`^module "([^"]*)" container "([^"]*)" mounts "([^"]*)" instead of "([^"]*)"$`, containerMountsInstead)
	sc.Step(`^the mesh is planned for "([^"]*)"$`, meshIsPlanned)
	sc.Step(`^the mesh is planned for "([^"]*)" after module "([^"]*)" is deployed$`, meshIsPlannedAfterDeploy)

	// Then: checks, on projections and the event stream.
	sc.Step(`^the push to "([^"]*)" fails naming "([^"]*)"$`, pushFailsNaming)
	sc.Step(`^no declaration was pushed to "([^"]*)"$`, noDeclarationWasPushed)
	sc.Step(`^the roster of "([^"]*)" contains "([^"]*)"$`, rosterContains)
	sc.Step(`^the roster of "([^"]*)" does not contain "([^"]*)"$`, rosterDoesNotContain)
	sc.Step(`^the apply report of "([^"]*)" reads "([^"]*)"$`, applyReportReads)
	sc.Step(`^the apply report of "([^"]*)" holds "([^"]*)" because "([^"]*)"$`, applyReportHolds)
	sc.Step(`^status of "([^"]*)" shows "([^"]*)" waiting on take$`, statusShowsWaitingOnTake)
	sc.Step(`^status of "([^"]*)" is converged$`, statusIsConverged)
	sc.Step(`^status of "([^"]*)" is not converged$`, statusIsNotConverged)
	sc.Step(`^status of "([^"]*)" shows a failed compose naming "([^"]*)"$`, statusShowsFailedCompose)
	sc.Step(`^status of "([^"]*)" shows "([^"]*)" pending because "([^"]*)"$`, statusShowsPending)
	sc.Step(`^the health of "([^"]*)" is "([^"]*)"$`, healthIs)
	sc.Step(`^(\d+) resources? (?:were|was) replaced on "([^"]*)" in the last pass$`, resourcesWereReplaced)
	sc.Step(`^container "([^"]*)" on "([^"]*)" was not replaced$`, containerWasNotReplaced)
	sc.Step(`^container "([^"]*)" on "([^"]*)" has environment "([^"]*)"$`, containerHasEnvironment)
	sc.Step(`^container "([^"]*)" on "([^"]*)" runs image "([^"]*)"$`, containerRunsImage)
	sc.Step(`^a churn loop is detected on "([^"]*)"$`, churnLoopDetected)
	sc.Step(`^no churn is detected on "([^"]*)"$`, noChurnDetected)
	sc.Step(`^the projections equal those before the rebuild$`, projectionsEqualBefore)
	sc.Step(`^the event stream has (\d+) "([^"]*)" events for "([^"]*)"$`, eventStreamHas)
	sc.Step(`^the timeline of module "([^"]*)" reads "([^"]*)"$`, timelineOfModuleReads)
	sc.Step(`^why container "([^"]*)" on "([^"]*)" was last replaced names "([^"]*)"$`, whyNames)
	sc.Step(`^the plan for "([^"]*)" replaces "([^"]*)" because "([^"]*)"$`, planReplaces)
	sc.Step(`^the plan for "([^"]*)" holds "([^"]*)"$`, planHolds)
	sc.Step(`^the plan for "([^"]*)" changes nothing$`, planChangesNothing)
	sc.Step(`^the plan for "([^"]*)" is heavy$`, planIsHeavy)
	sc.Step(`^the plan for "([^"]*)" is not heavy$`, planIsNotHeavy)
	sc.Step(`^the plan for "([^"]*)" was made without its agent$`, planWithoutAgent)
	sc.Step(`^the last pass on "([^"]*)" did what the plan said$`, lastPassDidWhatThePlanSaid)
	revertSteps(sc)
	publishSteps(sc)
	bindingSteps(sc)
	workloadSteps(sc)
	rolloutSteps(sc)
}

func newWorld(opts Options) (*World, error) {
	w := &World{modules: map[string]*events.ModuleSpec{}, plans: map[string]api.NodePlan{}}
	switch opts.Store {
	case "", StoreMemory:
		s, err := storeurl.Open(context.Background(), string(storeurl.Memory), storeurl.Options{})
		if err != nil {
			return nil, fmt.Errorf("scenario store: %w", err)
		}
		w.store = s
		w.cleanup = func() { s.Close() }
	case StoreBolt:
		mk := opts.TempDir
		if mk == nil {
			mk = func() (string, error) { return os.MkdirTemp("", "meshplane-scenario-") }
		}
		dir, err := mk()
		if err != nil {
			return nil, fmt.Errorf("scenario store: %w", err)
		}
		s, err := storeurl.Open(context.Background(), string(storeurl.Bolt), storeurl.Options{Data: dir, Create: true})
		if err != nil {
			return nil, fmt.Errorf("scenario store: %w", err)
		}
		w.store = s
		w.cleanup = func() { s.Close(); os.RemoveAll(dir) }
	case StorePostgres, StoreESDB:
		if opts.OpenStore == nil {
			return nil, fmt.Errorf("scenario store %s: no OpenStore given to open it", opts.Store)
		}
		s, cleanup, err := opts.OpenStore()
		if err != nil {
			return nil, fmt.Errorf("scenario store %s: %w", opts.Store, err)
		}
		w.store, w.cleanup = s, cleanup
	default:
		return nil, fmt.Errorf("unknown store %q (want %s, %s, %s or %s)", opts.Store, StoreMemory, StoreBolt, StorePostgres, StoreESDB)
	}
	w.mesh = sim.New(w.store)
	return w, nil
}

func list(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// --- Given ---

func aMeshWithNodes(ctx context.Context, names string) error {
	w := world(ctx)
	for _, n := range list(names) {
		if _, err := w.mesh.AddNode(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

func nodeIsAdopted(ctx context.Context, node string) error {
	return world(ctx).mesh.Do(ctx, commands.AdoptNode{Node: node})
}

func nodeHasPort(ctx context.Context, node, port string, value int) error {
	return world(ctx).mesh.Do(ctx, commands.SetNodeSetting{Node: node, Key: events.SettingPortPrefix + port, Value: strconv.Itoa(value)})
}

func nodeHasPrivateAddress(ctx context.Context, node, addr string) error {
	return world(ctx).mesh.Do(ctx, commands.SetNodeSetting{Node: node, Key: events.SettingPrivateAddress, Value: addr})
}

func nodeHoldsArtifactStore(ctx context.Context, node string, port int) error {
	return world(ctx).mesh.Do(ctx, commands.SetNodeSetting{Node: node, Key: events.SettingArtifactStore, Value: strconv.Itoa(port)})
}

// define (re)defines a module after edit changes the scenario's copy of it.
func (w *World) define(ctx context.Context, module string, edit func(*events.ModuleSpec) error) error {
	spec, ok := w.modules[module]
	if !ok {
		spec = &events.ModuleSpec{}
		w.modules[module] = spec
	}
	if err := edit(spec); err != nil {
		return err
	}
	return w.mesh.Do(ctx, commands.DefineModule{Module: module, Spec: *spec})
}

func (w *World) container(spec *events.ModuleSpec, module, name string) (*events.ContainerSpec, error) {
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i], nil
		}
	}
	return nil, fmt.Errorf("module %s has no container %q (declare it with: module %q with containers %q)", module, name, module, name)
}

// scenarioImage is the image a scenario container runs unless told otherwise.
func scenarioImage(module, container string) string {
	return "scenario.invalid/" + module + "/" + container + ":1"
}

func moduleWithContainers(ctx context.Context, module, names string) error {
	return world(ctx).define(ctx, module, func(s *events.ModuleSpec) error {
		for _, n := range list(names) {
			if slices.ContainsFunc(s.Containers, func(c events.ContainerSpec) bool { return c.Name == n }) {
				continue
			}
			s.Containers = append(s.Containers, events.ContainerSpec{Name: n, Image: scenarioImage(module, n)})
		}
		return nil
	})
}

func containerMounts(ctx context.Context, module, container, path string) error {
	w := world(ctx)
	return w.define(ctx, module, func(s *events.ModuleSpec) error {
		c, err := w.container(s, module, container)
		if err != nil {
			return err
		}
		c.Mounts = append(c.Mounts, events.Mount{Source: path})
		return nil
	})
}

func moduleWritesFile(ctx context.Context, module, path, content string) error {
	return world(ctx).define(ctx, module, func(s *events.ModuleSpec) error {
		s.Files = append(s.Files, events.FileSpec{Path: path, Content: content})
		return nil
	})
}

func moduleRoutesName(ctx context.Context, module, name string) error {
	return world(ctx).define(ctx, module, func(s *events.ModuleSpec) error {
		if !slices.Contains(s.Routes, name) {
			s.Routes = append(s.Routes, name)
		}
		return nil
	})
}

func containerReadsPort(ctx context.Context, module, container, port, env string) error {
	w := world(ctx)
	return w.define(ctx, module, func(s *events.ModuleSpec) error {
		c, err := w.container(s, module, container)
		if err != nil {
			return err
		}
		c.Ports = append(c.Ports, events.PortRead{Port: port, Env: env})
		return nil
	})
}

func containerRunsArtifact(ctx context.Context, module, container, artifact, digest string) error {
	w := world(ctx)
	err := w.define(ctx, module, func(s *events.ModuleSpec) error {
		c, err := w.container(s, module, container)
		if err != nil {
			return err
		}
		c.Image, c.Artifact = "", artifact
		return nil
	})
	if err != nil {
		return err
	}
	// The step states what the container runs: the build is recorded and
	// deployed (a no-op when recording it deployed it already).
	if err := w.mesh.Do(ctx, commands.RecordArtifact{Module: module, Name: artifact, Digest: digest}); err != nil {
		return err
	}
	return w.mesh.Do(ctx, commands.DeployModule{Module: module, Digest: digest})
}

// containerRunsArtifactNoBuild defines the container as running artifact,
// of which no build is recorded: the module does not compose until one is
// (and deployed).
func containerRunsArtifactNoBuild(ctx context.Context, module, container, artifact string) error {
	w := world(ctx)
	return w.define(ctx, module, func(s *events.ModuleSpec) error {
		c, err := w.container(s, module, container)
		if err != nil {
			return err
		}
		c.Image, c.Artifact = "", artifact
		return nil
	})
}

func moduleUpgradesByRollOut(ctx context.Context, module string) error {
	return world(ctx).define(ctx, module, func(s *events.ModuleSpec) error {
		s.Upgrade = events.UpgradeRollOut
		return nil
	})
}

// artifactModule is the module whose container runs artifact, as the
// scenario defined it; else the artifact's first segment ("forge/web":
// forge).
func (w *World) artifactModule(artifact string) string {
	for _, name := range slices.Sorted(maps.Keys(w.modules)) {
		for _, c := range w.modules[name].Containers {
			if c.Artifact == artifact {
				return name
			}
		}
	}
	module, _, _ := strings.Cut(artifact, "/")
	return module
}

func buildIsRecorded(ctx context.Context, artifact, digest string) error {
	w := world(ctx)
	return w.mesh.Do(ctx, commands.RecordArtifact{Module: w.artifactModule(artifact), Name: artifact, Digest: digest})
}

func moduleIsDeployed(ctx context.Context, module string) error {
	return world(ctx).mesh.Do(ctx, commands.DeployModule{Module: module})
}

func moduleIsDeployedAt(ctx context.Context, module, digest string) error {
	return world(ctx).mesh.Do(ctx, commands.DeployModule{Module: module, Digest: digest})
}

func containerMountsInstead(ctx context.Context, module, container, path, old string) error {
	w := world(ctx)
	return w.define(ctx, module, func(s *events.ModuleSpec) error {
		c, err := w.container(s, module, container)
		if err != nil {
			return err
		}
		// The data moves on the host; the container still finds it where
		// it did (the /var/lib move of seed 002).
		for i, m := range c.Mounts {
			if m.Source == old {
				if m.Target == "" {
					c.Mounts[i].Target = old
				}
				c.Mounts[i].Source = path
				return nil
			}
		}
		return fmt.Errorf("module %s container %s mounts no %q", module, container, old)
	})
}

// moduleDoesNotCompose defines a module whose set does not compose on any
// node: it claims one container name twice, which define accepts (a module
// set's coherence is a statement about the node it is assigned to) and
// compose refuses.
func moduleDoesNotCompose(ctx context.Context, module string) error {
	return world(ctx).define(ctx, module, func(s *events.ModuleSpec) error {
		s.Containers = append(s.Containers,
			events.ContainerSpec{Name: module, Image: scenarioImage(module, "a")},
			events.ContainerSpec{Name: module, Image: scenarioImage(module, "b")})
		return nil
	})
}

func directoryExistsOnNode(ctx context.Context, path, node string) error {
	n, err := world(ctx).mesh.Node(node)
	if err != nil {
		return err
	}
	return n.Runtime.MakeDirectory(path, 0o755)
}

// --- When ---

func moduleIsAssigned(ctx context.Context, module, node string) error {
	return world(ctx).mesh.Do(ctx, commands.AssignModule{Module: module, Node: node})
}

func moduleIsTaken(ctx context.Context, module, node string) error {
	return world(ctx).mesh.Do(ctx, commands.TakeModule{Module: module, Node: node})
}

func moduleIsReleased(ctx context.Context, module, node string) error {
	return world(ctx).mesh.Do(ctx, commands.ReleaseModule{Module: module, Node: node})
}

// push pushes to node. A push that fails is recorded in the stream, where
// Then steps read it; only a failure to run the push at all fails the step.
func push(ctx context.Context, node string) error {
	if err := world(ctx).mesh.Push(ctx, node); err != nil && !sim.Recorded(err) {
		return err
	}
	return nil
}

func meshIsPushedTo(ctx context.Context, node string) error { return push(ctx, node) }

func meshIsPushedToEveryNode(ctx context.Context) error {
	nodes, err := world(ctx).mesh.Handler.Nodes(ctx)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if err := push(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

func nodeApplies(ctx context.Context, node string) error {
	_, applied, err := world(ctx).mesh.Apply(ctx, node)
	if err != nil {
		return err
	}
	if !applied {
		return fmt.Errorf("node %s has received no declaration to apply", node)
	}
	return nil
}

func passesRun(ctx context.Context, n int, node string) error {
	for i := 0; i < n; i++ {
		if _, _, err := world(ctx).mesh.Pass(ctx, node); err != nil {
			return fmt.Errorf("pass %d of %d: %w", i+1, n, err)
		}
	}
	return nil
}

func storeFailsReads(ctx context.Context, node string) error {
	world(ctx).mesh.Store.FailReads(node, false)
	return nil
}

func storeFailsReadsEveryOtherPass(ctx context.Context, node string) error {
	world(ctx).mesh.Store.FailReads(node, true)
	return nil
}

func storeRecovers(ctx context.Context) error {
	world(ctx).mesh.Store.Recover()
	return nil
}

func busIsCut(ctx context.Context, node string) error { return world(ctx).mesh.CutBus(node) }

func busIsRestored(ctx context.Context, node string) error {
	return world(ctx).mesh.RestoreBus(ctx, node)
}

func projectionsAreRebuilt(ctx context.Context) error {
	w := world(ctx)
	if err := w.mesh.CatchUp(ctx); err != nil {
		return err
	}
	before, err := json.Marshal(w.mesh.Views)
	if err != nil {
		return err
	}
	w.before = before
	return w.mesh.Runner.Rebuild(ctx)
}

func outsideRemovesContainers(ctx context.Context, node string) error {
	return world(ctx).mesh.RemoveContainersAfterApply(node)
}

func eventStreamReceives(ctx context.Context, doc *godog.DocString) error {
	var lines [][]byte
	for _, l := range strings.Split(doc.Content, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, []byte(l))
		}
	}
	return world(ctx).mesh.AppendJSONLines(ctx, lines)
}

// plan plans node as `mesh plan` does (controller.PlanNode: the same
// compose, and the node's agent's dry run, answered in process over the
// simulated bus), through r, and keeps the plan for the Then steps. A plan
// appends nothing: the step fails if the store grew.
func plan(ctx context.Context, node string, after ...commands.Command) error {
	w := world(ctx)
	before, err := w.store.ReadAll(ctx, 0, 0)
	if err != nil {
		return err
	}
	var r commands.Reader = w.mesh.Handler
	if len(after) > 0 {
		if r, err = w.mesh.Handler.Hypothetical(ctx, after); err != nil {
			return err
		}
	}
	np, err := controller.PlanNode(ctx, controller.Planning{
		Reader: r, Store: w.mesh.Store, Registry: w.mesh.Registry, DryRun: w.mesh,
	}, node)
	if err != nil {
		return err
	}
	after2, err := w.store.ReadAll(ctx, 0, 0)
	if err != nil {
		return err
	}
	if len(after2) != len(before) {
		return fmt.Errorf("planning %s appended %d event(s)", node, len(after2)-len(before))
	}
	w.plans[node] = np
	return nil
}

func meshIsPlanned(ctx context.Context, node string) error { return plan(ctx, node) }

func meshIsPlannedAfterDeploy(ctx context.Context, node, module string) error {
	return plan(ctx, node, commands.DeployModule{Module: module})
}
