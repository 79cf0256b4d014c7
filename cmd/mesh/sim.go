package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"meshplane/api"
	"meshplane/controller"
	"meshplane/events"
	"meshplane/events/pgstore/pgtest"
	"meshplane/events/storeurl"
	"meshplane/projections"
	"meshplane/sim"
)

type simOptions struct {
	nodes, modules, passes, big int
	seed                        uint64
	faults, store               string
	measure                     bool
}

func (e *env) simCmd() *cobra.Command {
	var o simOptions
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "run a whole mesh in this process with faults on purpose, and score the churn detector against them",
		Long: `Run a whole mesh in this process: the real controller (its commands, compose,
store, projections and pass), simulated nodes (the in-memory runtime) and bus.
--nodes nodes and --modules modules are set up, then --passes passes run:
each is the controller's pass, the one mesh up makes every interval (every
node composed, what changed pushed, a compose failure recorded once), then an
apply on every node, while the faults of --faults are injected. The event stream stays
in the store (--store bolt: the bolt file in --data, which must hold no
events yet), so status, timeline, churn and why work on it afterwards.

The run knows the churn it injected (loops and flips, on which nodes, when),
from the faults and the operator commands, never from the events the
detector reads, and scores the churn projection against it: recall, precision, the delay from
an episode's start to its detection in passes, and the false loops on
legitimate passes (a roll-out, a moved module, a burst of assigns). Targets:
recall 1, no false loop on a legitimate pass, a delay of at most 2 passes.
Exit 1 when a target is missed.

While it runs, a progress bar on a terminal (passes/s, events/s, time left);
at the end, a summary to paste into an incident review (-o json: the same, as
JSON). --measure adds the projections' memory, a status query, a filtered
timeline page and a rebuild of the whole history.

` + sim.SpecHelp + `

--faults default is every kind at once, placed over the run's passes (at
least 20 make every window distinct); --faults none runs without faults.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q", args[0])
			}
			out, err := outputOf(cmd)
			if err != nil {
				return err
			}
			t, err := targetOf(cmd, true)
			if err != nil {
				return err
			}
			switch {
			case o.nodes < 1:
				return usagef("--nodes %d: want at least 1", o.nodes)
			case o.modules < 1:
				return usagef("--modules %d: want at least 1", o.modules)
			case o.passes < 1:
				return usagef("--passes %d: want at least 1", o.passes)
			}
			if !cmd.Flags().Changed("big") {
				o.big = o.nodes / 100
			}
			if o.big < 0 || o.big > o.nodes {
				return usagef("--big %d: want 0 to --nodes (%d)", o.big, o.nodes)
			}
			var faults []sim.Fault
			switch o.faults {
			case "default":
				faults = sim.DefaultFaults(o.passes)
			case "none", "":
			default:
				if faults, err = sim.ParseFaults(o.faults); err != nil {
					return usagef("--faults: %v", err)
				}
			}
			return e.sim(cmd.Context(), o, t.data, faults, out)
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&o.nodes, "nodes", 12, "nodes at the start")
	fs.IntVar(&o.modules, "modules", 16, "modules (3 containers and a directory each), 3 assigned to each node")
	fs.IntVar(&o.passes, "passes", 24, "passes: a push and an apply on every node")
	fs.Uint64Var(&o.seed, "seed", 1, "the seed every random choice is drawn from")
	fs.IntVar(&o.big, "big", 0, "nodes with 330 resources, as in the seeds (default: 1 in 100)")
	fs.StringVar(&o.faults, "faults", "default", "the faults `SPEC` (see above), default or none")
	fs.StringVar(&o.store, "store", "bolt", "the event store: memory, bolt (DATA/events.db, empty), postgres (a throwaway cluster, gone with the run) or postgres://URL (an empty database)")
	fs.BoolVar(&o.measure, "measure", false, "at the end, measure memory, a status query, a timeline page and a rebuild")
	addOutput(cmd)
	return cmd
}

// errTargetsMissed: the summary is printed; exit 1.
var errTargetsMissed = errors.New("the churn detector missed a target (see the summary)")

// simStore opens the run's store, which must hold no events: memory, the
// bolt file in data, a database on a throwaway PostgreSQL cluster (gone
// with the run), or the database a postgres:// URL names.
func (e *env) simStore(ctx context.Context, kind, data string) (events.Store, string, func() error, error) {
	url, name := kind, ""
	closeFn := func() error { return nil }
	switch k, err := storeurl.KindOf(kind); {
	case kind == "postgres":
		srv, err := pgtest.Start(ctx)
		if errors.Is(err, pgtest.ErrNoPostgres) {
			return nil, "", nil, fmt.Errorf("%w (install PostgreSQL, set PGTEST_BIN to its bin directory, or give --store postgres://URL)", err)
		}
		if err != nil {
			return nil, "", nil, err
		}
		if url, err = srv.CreateDatabase(ctx); err != nil {
			srv.Close()
			return nil, "", nil, err
		}
		name, closeFn = "postgres (throwaway cluster)", srv.Close
	case kind == "" || err != nil || k == storeurl.KurrentDB:
		return nil, "", nil, usagef("--store %q: want memory, bolt, postgres or postgres://URL", storeurl.Redact(kind))
	}
	opts := storeurl.Options{Data: data, Create: true}
	if name == "" {
		name = storeurl.Describe(url, opts)
	}
	st, err := storeurl.Open(ctx, url, opts)
	if err != nil {
		closeFn()
		return nil, "", nil, err
	}
	head, err := st.Head(ctx)
	if err == nil && head > 0 {
		err = fmt.Errorf("the store (%s) already holds %d events: mesh sim writes a mesh of its own, give an empty one", name, head)
	}
	if err != nil {
		st.Close()
		closeFn()
		return nil, "", nil, err
	}
	return st, name, func() error {
		err := st.Close()
		return errors.Join(err, closeFn())
	}, nil
}

func (e *env) sim(ctx context.Context, o simOptions, data string, faults []sim.Fault, out string) (err error) {
	st, name, closeStore, err := e.simStore(ctx, o.store, data)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeStore()) }()

	bar := e.progress(o.passes)
	var events int
	var elapsed time.Duration
	cfg := sim.Config{
		Nodes: o.nodes, Modules: o.modules, Passes: o.passes, Seed: o.seed, Faults: faults, Big: o.big, Clock: e.now,
		Progress: func(ps sim.PassStats) {
			if bar == nil || ps.Pass == 0 {
				return
			}
			events += ps.Events
			elapsed += ps.Took
			desc := fmt.Sprintf("pass %d/%d, %d events", ps.Pass, o.passes, events)
			if elapsed > 0 {
				desc += fmt.Sprintf(", %.0f events/s", float64(events)/elapsed.Seconds())
			}
			bar.Describe(desc)
			_ = bar.Add(1)
		},
	}
	run, err := sim.NewRun(ctx, st, cfg)
	if err != nil {
		return err
	}
	if err := run.Passes(ctx); err != nil {
		return err
	}
	if bar != nil {
		_ = bar.Finish()
		fmt.Fprintln(e.stderr)
	}
	sum := run.Summary(name)
	if o.measure {
		m, err := e.measure(ctx, st, run)
		if err != nil {
			return err
		}
		if o.store == "bolt" {
			if fi, err := os.Stat(storeurl.Path(data)); err == nil {
				m.StoreFile = fi.Size()
			}
		}
		sum.Measured = m
	}
	if out == outJSON {
		err = writeJSON(e.stdout, sum)
	} else {
		err = sum.WriteText(e.stdout)
		if err == nil && o.store == "bolt" {
			dataArg := ""
			if data != ".mesh" {
				dataArg = " --data " + data
			}
			_, err = fmt.Fprintf(e.stdout, `
where to look (every answer comes from the events left in the store):
  mesh churn%[1]s
  mesh status%[1]s
  mesh timeline%[1]s --node NODE
  mesh why%[1]s NODE RESOURCE
`, dataArg)
		}
	}
	if err != nil {
		return err
	}
	if !sum.Score.Met() {
		return errTargetsMissed
	}
	return nil
}

// progress is a progress bar on stderr when it is a terminal, else nil.
func (e *env) progress(passes int) *progressbar.ProgressBar {
	f, ok := e.stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return progressbar.NewOptions(passes,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetItsString("passes"),
		progressbar.OptionShowIts(),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
	)
}

// measure folds every projection from the store's position 0 (the rebuild
// and the memory it holds), then asks a controller over the store for the
// status of every node and a filtered timeline page.
func (e *env) measure(ctx context.Context, st events.Store, run *sim.Run) (*sim.Measured, error) {
	m := &sim.Measured{}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	views := projections.New()
	start := time.Now()
	if err := projections.NewRunner(st, events.NewRegistry(), views.All()...).CatchUp(ctx); err != nil {
		return nil, fmt.Errorf("rebuild: %w", err)
	}
	m.Rebuild = time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	if after.HeapAlloc > before.HeapAlloc {
		m.HeapBytes = after.HeapAlloc - before.HeapAlloc
	}
	nodes := run.Nodes()
	m.HeapPerNode = float64(m.HeapBytes) / float64(len(nodes))
	head, err := st.Head(ctx)
	if err != nil {
		return nil, err
	}
	m.RebuildEvents = head
	runtime.KeepAlive(views)

	c, err := controller.New(controller.Config{Store: st, Clock: e.now})
	if err != nil {
		return nil, err
	}
	if _, err := c.Status(ctx, api.StatusRequest{}); err != nil { // catches the controller up
		return nil, err
	}
	start = time.Now()
	if _, err := c.Status(ctx, api.StatusRequest{}); err != nil {
		return nil, err
	}
	m.Status = time.Since(start)
	node := nodes[len(nodes)/2]
	if t := run.Truth(); len(t) > 0 {
		node = t[0].Node
	}
	req := api.TimelineRequest{Node: node, Type: events.TypeApplyReported, Limit: 50}
	start = time.Now()
	page, err := c.Timeline(ctx, req)
	if err != nil {
		return nil, err
	}
	m.TimelinePage = time.Since(start)
	m.TimelineQuery = fmt.Sprintf("--node %s --type %s, 50 a page", node, events.TypeApplyReported)
	m.TimelineRows = len(page.Entries)
	return m, nil
}
