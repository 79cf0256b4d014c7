package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"meshplane/api"
	"meshplane/controller"
	"meshplane/events"
	"meshplane/events/pgstore/pgscratch"
	"meshplane/events/storeurl"
	"meshplane/internal/usage"
	"meshplane/projections"
)

// ErrStore is the error of a store Options.Store does not name: mesh sim
// runs on memory, bolt, postgres or a postgres:// URL.
var ErrStore = errors.New("want memory, bolt, postgres or postgres://URL")

// Options are a whole run of mesh sim, as Execute makes it.
type Options struct {
	// Config is the run. Execute sets its Progress when Bar is set.
	Config
	// Store is where the run's events stay (mesh sim --store): memory,
	// bolt (the bolt file in Data), postgres (a database on a throwaway
	// PostgreSQL cluster, gone with the run) or a postgres:// URL. It must
	// hold no events.
	Store string
	// Data is the data directory holding the bolt file.
	Data string
	// Measure adds the costs of Measure to the summary, and the bolt
	// file's size on a bolt store.
	Measure bool
	// Bar, when set, is told every pass done (progressbar's ProgressBar
	// is one), and finished after the last.
	Bar Bar
}

// Bar is a progress bar Execute moves on by one a pass.
type Bar interface {
	Describe(string)
	Add(int) error
	Finish() error
}

// Execute runs mesh sim: it opens the store (OpenStore), sets the mesh up,
// runs its passes and summarizes them, with what Measure measures when
// o.Measure. A store it cannot open, or the wrong kind (ErrStore), is an
// error before any pass runs. Whether the score met its targets is the
// summary's (Score.Met).
func Execute(ctx context.Context, o Options) (sum Summary, err error) {
	st, name, closeStore, err := OpenStore(ctx, o.Store, o.Data)
	if err != nil {
		return Summary{}, err
	}
	defer func() { err = errors.Join(err, closeStore()) }()

	cfg := o.Config
	if o.Bar != nil {
		cfg.Progress = describe(o.Bar, o.Passes)
	}
	run, err := NewRun(ctx, st, cfg)
	if err != nil {
		return Summary{}, err
	}
	if err := run.Passes(ctx); err != nil {
		return Summary{}, err
	}
	if o.Bar != nil {
		_ = o.Bar.Finish()
	}
	sum = run.Summary(name)
	if o.Measure {
		m, err := Measure(ctx, st, run, o.Clock)
		if err != nil {
			return Summary{}, err
		}
		if o.Store == string(storeurl.Bolt) {
			if fi, err := os.Stat(storeurl.Path(o.Data)); err == nil {
				m.StoreFile = fi.Size()
			}
		}
		sum.Measured = m
	}
	return sum, nil
}

// describe moves bar on after every pass (not the set-up, pass 0), saying
// the pass, the events so far and their rate.
func describe(bar Bar, passes int) func(PassStats) {
	var events int
	var elapsed time.Duration
	return func(ps PassStats) {
		if ps.Pass == 0 {
			return
		}
		events += ps.Events
		elapsed += ps.Took
		desc := fmt.Sprintf("pass %d/%d, %d events", ps.Pass, passes, events)
		if elapsed > 0 {
			desc += fmt.Sprintf(", %.0f events/s", float64(events)/elapsed.Seconds())
		}
		bar.Describe(desc)
		_ = bar.Add(1)
	}
}

// OpenStore opens the store of a run, which must hold no events: memory,
// the bolt file in data, a database on a throwaway PostgreSQL cluster
// (gone with the run), or the database a postgres:// URL names. It returns
// the store, its name for the summary, and the function that closes it
// (and stops the cluster). Any other kind is an error wrapping ErrStore.
func OpenStore(ctx context.Context, kind, data string) (events.Store, string, func() error, error) {
	url, name := kind, ""
	closeFn := func() error { return nil }
	switch k, err := storeurl.KindOf(kind); {
	case kind == "postgres":
		srv, err := pgscratch.Start(ctx)
		if errors.Is(err, pgscratch.ErrNoPostgres) {
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
		return nil, "", nil, fmt.Errorf("--store %q: %w", storeurl.Redact(kind), ErrStore)
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

// Measure folds every projection from the store's position 0 (the rebuild
// and the memory it holds), then asks a controller over the store (clock
// stamping its answers; nil: time.Now) for the status of every node and a
// filtered timeline page.
func Measure(ctx context.Context, st events.Store, run *Run, clock func() time.Time) (*Measured, error) {
	m := &Measured{}
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

	c, err := controller.New(controller.Config{Store: st, Clock: clock})
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

// Check refuses Options out of range, naming the flag (bad usage,
// usage.Err).
func (o Options) Check() error {
	bad := usage.Errorf
	switch {
	case o.Nodes < 1:
		return bad("--nodes %d: want at least 1", o.Nodes)
	case o.Modules < 1:
		return bad("--modules %d: want at least 1", o.Modules)
	case o.Passes < 1:
		return bad("--passes %d: want at least 1", o.Passes)
	case o.Big < 0 || o.Big > o.Nodes:
		return bad("--big %d: want 0 to --nodes (%d)", o.Big, o.Nodes)
	}
	return nil
}

// WhereToLook says, after a run whose events stay in the bolt store of
// data, the verbs that read them.
func WhereToLook(w io.Writer, data string) error {
	arg := ""
	if data != ".mesh" {
		arg = " --data " + data
	}
	_, err := fmt.Fprintf(w, `
where to look (every answer comes from the events left in the store):
  mesh churn%[1]s
  mesh status%[1]s
  mesh timeline%[1]s --node NODE
  mesh why%[1]s NODE RESOURCE
`, arg)
	return err
}
