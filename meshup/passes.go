package meshup

import (
	"context"
	"fmt"
	"io"
	"time"

	"meshplane/commands"
	"meshplane/events/storeurl"
	"meshplane/projections"
	"meshplane/render"
	"meshplane/sim"
)

// PassesConfig is what Passes runs: `mesh up --passes N`.
type PassesConfig struct {
	// Data is the data directory: the bolt store DATA/events.db (made if
	// missing) and DATA/data-id.
	Data string
	// File and Modules are the mesh file and the module files to set up.
	File    File
	Modules []commands.DefineModule
	// Passes is how many passes (push, then apply) each node gets.
	Passes int
	// Check, if set, checks the set-up before the store is opened (mesh
	// up: against an empty mesh when the store does not exist yet, so that
	// a refusal leaves no store behind); a refusal is Refused's.
	Check func(ctx context.Context, cs []commands.Command) error
	// Clock stamps what is written (sim.WithClock).
	Clock func() time.Time
	// Out is told what is done as it is done: the store, the set-up, one
	// line per node and pass.
	Out io.Writer
}

// Passes is the in-process run of `mesh up --passes N`: every node of the
// mesh file simulated in this process (package sim), no bus, no API. It
// builds the file's images, sets up the file and the modules on the bolt
// store in Data (Execute: all or nothing, work already done appends
// nothing, so it can run again over the same data), makes each node's
// found: directories, runs Passes passes of push and apply on each node,
// and returns each node's status afterwards, in the file's order. The
// store is closed when it returns.
func Passes(ctx context.Context, cfg PassesConfig) ([]projections.NodeStatus, error) {
	mf, w := cfg.File, cfg.Out
	id, saveID, err := DataID(cfg.Data)
	if err != nil {
		return nil, err
	}
	builds, err := BuildImages(ctx, mf, id, w)
	if err != nil {
		return nil, err
	}
	cs := SetUp(cfg.Modules, mf, RecordBuilds(builds))
	if cfg.Check != nil {
		if err := cfg.Check(ctx, cs); err != nil {
			return nil, Refused(err)
		}
	}
	store, err := storeurl.Open(ctx, string(storeurl.Bolt), storeurl.Options{Data: cfg.Data, Create: true})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	if _, err := saveID(); err != nil {
		return nil, err
	}
	m := sim.New(store, sim.WithClock(cfg.Clock))
	fmt.Fprintf(w, "meshplane: event store %s\n", storeurl.Path(cfg.Data))

	done, err := Execute(ctx, m.Handler, sim.Actor, cs)
	if err != nil {
		return nil, err
	}
	for _, n := range mf.Nodes {
		node, err := m.Node(n.Name)
		if err != nil {
			return nil, err
		}
		for _, dir := range n.Found {
			if err := node.Runtime.MakeDirectory(dir, 0o755); err != nil {
				return nil, err
			}
		}
	}
	if done > 0 {
		fmt.Fprintf(w, "set-up: %d of %d command(s) found their work already done, nothing to do\n", done, len(cs))
	}
	fmt.Fprintf(w, "defined %d module(s); %d simulated node(s)\n\n", len(cfg.Modules), len(mf.Nodes))

	for i := 0; i < cfg.Passes; i++ {
		for _, n := range mf.Nodes {
			r, applied, err := m.Pass(ctx, n.Name)
			if err != nil {
				return nil, err
			}
			switch {
			case applied:
				fmt.Fprintf(w, "pass %d  %-8s %s  %s\n", i+1, n.Name, r.Outcome.Declaration, render.Escape(r.Summary()))
			default:
				fmt.Fprintf(w, "pass %d  %-8s nothing pushed yet\n", i+1, n.Name)
			}
		}
	}
	fmt.Fprintln(w)
	if err := m.CatchUp(ctx); err != nil {
		return nil, err
	}
	sts := make([]projections.NodeStatus, 0, len(mf.Nodes))
	for _, n := range mf.Nodes {
		st, err := m.Views.Status.Of(n.Name)
		if err != nil {
			return nil, err
		}
		sts = append(sts, st)
	}
	return sts, nil
}
