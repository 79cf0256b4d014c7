package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/controller"
	"meshplane/controllerd"
	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/projections"
)

// BenchmarkRestartQuietDays is issue 23 item 3's target end to end: a
// controller restarted on the history of MESH_RESTART_NODES nodes
// (default 10,000) reporting every 5 minutes for MESH_RESTART_DAYS days
// (default 30), in a bolt store on disk, serving its first answer
// (Status of every node) after resuming from its checkpoints on disk (the
// daemon's DirCheckpoints and CheckpointPolicy), beside a replay from 0 of
// the same store in the same run. The replay is a controller with an
// empty checkpoint directory, as a first start after an upgrade is: it
// keeps its checkpoints while it folds, which the resume then uses.
//
// The history is each node's set-up (registered, assigned, composed,
// pushed, applied; one node in ten holding a resource) and then its quiet
// reports, one a tick. The generator appends a node's reports an hour at a
// time (12 events an Append, 2,048 writers): positions run node by node
// within each hour, not tick by tick, which costs a fold the same and
// lets bolt write 30 days in minutes instead of hours (one event an Append
// dirties a stream's page per event: 20,000 events/s).
//
// MESH_RESTART_DIR keeps the store and checkpoints there instead of a
// temporary directory, laid out as a data directory (DIR/events.db,
// DIR/checkpoints/controller), and a store already holding the whole
// history is used as it is, so a second run measures without generating
// again, and scripts/bench-restart.sh times mesh up on it.
//
//	MESH_RESTART_DIR=/var/tmp/restart go test -run '^$' -bench RestartQuietDays -benchtime 1x -timeout 120m ./controller/
func BenchmarkRestartQuietDays(b *testing.B) {
	ctx := context.Background()
	nodes, days := int(envUint("MESH_RESTART_NODES", 10000)), int(envUint("MESH_RESTART_DAYS", 30))
	dir := os.Getenv("MESH_RESTART_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	h := quietHistory{nodes: nodes, hours: days * 24, t0: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
	st, err := boltstore.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	head, err := st.Head(ctx)
	if err != nil {
		b.Fatal(err)
	}
	switch want := h.events(); head {
	case want:
		b.Logf("the store already holds the history: %d events", head)
	case 0:
		start := time.Now()
		if err := h.write(ctx, st); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		b.Logf("generated %d events of %d nodes and %d days in %s (%.0f events/s)", want, nodes, days, took.Round(time.Second), float64(want)/took.Seconds())
	default:
		b.Fatalf("the store in %s holds %d events, neither none nor this history's %d: give another MESH_RESTART_DIR", dir, head, want)
	}
	if fi, err := os.Stat(st.Path()); err == nil {
		b.ReportMetric(float64(fi.Size())/1e9, "store-GB")
	}
	head = h.events()
	b.ReportMetric(float64(head)/1e6, "history-Mevents")

	ckdir := filepath.Join(dir, controllerd.CheckpointDir) // so mesh up --data DIR resumes from them
	keeper := func() *projections.Keeper {
		return projections.NewKeeper(projections.DirCheckpoints(ckdir), projections.KeepPolicy{}, func(n string) { b.Log("checkpoints: " + n) })
	}
	// first is a controller's start to its first answer: the status of
	// every node, as JSON.
	first := func(resume bool) (string, time.Duration, uint64) {
		runtime.GC()
		start := time.Now()
		c, err := controller.New(controller.Config{Store: st, Checkpoints: keeper()})
		if err != nil {
			b.Fatal(err)
		}
		var from uint64
		if resume {
			if from, err = c.Resume(ctx); err != nil || from == 0 {
				b.Fatalf("resume: from %d, %v", from, err)
			}
		}
		got, err := c.Status(ctx, api.StatusRequest{})
		took := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		// The bus's revocation list, which the daemon starts the bus
		// with: from the resumed projections (their checkpoint carries it).
		rstart := time.Now()
		if _, err := c.Revocations(ctx); err != nil {
			b.Fatal(err)
		}
		b.Logf("resume=%v: the revocation list in %s", resume, time.Since(rstart).Round(time.Microsecond))
		if len(got.Nodes) != nodes {
			b.Fatalf("status: %d nodes, want %d", len(got.Nodes), nodes)
		}
		js, err := json.Marshal(got)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.Logf("resume=%v: first answer in %s (from checkpoint %d), live heap %d MB", resume, took.Round(time.Millisecond), from, ms.HeapAlloc>>20)
		runtime.KeepAlive(c)
		return string(js), took, from
	}
	for b.Loop() {
		if err := os.RemoveAll(ckdir); err != nil {
			b.Fatal(err)
		}
		replayed, replay, _ := first(false)
		held, err := projections.DirCheckpoints(ckdir).List()
		if err != nil || len(held) == 0 {
			b.Fatalf("the replay kept no checkpoint: %d, %v", len(held), err)
		}
		var bytes int64
		for _, c := range held {
			bytes += c.Bytes
		}
		newest := held[len(held)-1]
		b.Logf("the replay kept %d checkpoints (%d MB), the newest %d MB at %d of %d", len(held), bytes>>20, newest.Bytes>>20, newest.Position, head)
		resumed, resume, from := first(true)
		if resumed != replayed {
			b.Fatal("the resumed controller's status differs from the replayed one's")
		}
		b.ReportMetric(replay.Seconds(), "replay-first-answer-s")
		b.ReportMetric(resume.Seconds(), "resume-first-answer-s")
		b.ReportMetric(resume.Seconds()/replay.Seconds(), "resume/replay")
		b.ReportMetric(float64(head-from), "resume-folded-events")
		b.ReportMetric(float64(newest.Bytes)/1e6, "ckpt-MB")
		// What the daemon's start read for the list before the checkpoints
		// carried it: the whole store.
		start := time.Now()
		if _, err := controller.ScanRevocations(ctx, st, events.NewRegistry(), 0, map[string]time.Time{}); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "whole-store-revocation-scan-s")
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	b.ReportMetric(float64(ru.Maxrss)/1e6, "peak-rss-GB")
}

// quietHistory is the history BenchmarkRestartQuietDays restarts on.
type quietHistory struct {
	nodes, hours int
	t0           time.Time
}

const (
	quietTick    = 5 * time.Minute
	quietPerHour = int(time.Hour / quietTick)
	setupEvents  = 5
)

func (h quietHistory) events() uint64 {
	return uint64(h.nodes) * uint64(setupEvents+h.hours*quietPerHour)
}

func (h quietHistory) node(i int) string { return fmt.Sprintf("n%05d", i) }

// write appends the history to st: every node's set-up, then an hour of
// every node's quiet reports at a time.
func (h quietHistory) write(ctx context.Context, st events.Store) error {
	reg := events.NewRegistry()
	mk := func(stream string, p events.Payload, at time.Time, actor, corr string) events.Event {
		ev, err := reg.New(stream, p, events.Meta{ID: events.NewID(), At: at, Actor: actor, Correlation: corr})
		if err != nil {
			panic(err) // the payloads below are the vocabulary's
		}
		return ev
	}
	quiet := make([]events.Event, h.nodes) // each node's quiet report, encoded once
	err := h.each(ctx, st, func(i int) (string, []events.Event) {
		n := h.node(i)
		decl, digest, corr := "d-"+n, "sha256:"+n, "c-"+n
		res := make([]events.ResourceRef, 3)
		for k := range res {
			res[k] = events.ResourceRef{Name: fmt.Sprintf("m-%d", k), Kind: "container", Module: "m", Digest: fmt.Sprintf("sha256:%s-%d", n, k)}
		}
		apply := mk("", events.ApplyReported{
			Node: n, Declaration: decl, Sent: 3, Applied: 3, Created: []string{res[0].Name, res[1].Name, res[2].Name}, Digest: digest,
		}, h.t0, "agent:"+n, corr)
		q := events.ApplyReported{Node: n, Declaration: decl, Sent: 3, Applied: 3, Unchanged: 3}
		if i%10 == 0 {
			a := events.ApplyReported{Node: n, Declaration: decl, Sent: 3, Applied: 2, Created: []string{res[0].Name, res[1].Name},
				Held: []events.Held{{Name: res[2].Name, Module: "m", Reason: "adopted: not taken"}}, Digest: digest, ApplyID: events.NewID().String()}
			apply = mk("", a, h.t0, "agent:"+n, corr)
			q.HeldSince = a.ApplyID
		}
		quiet[i] = mk(events.NodeStream(n), q, time.Time{}, "agent:"+n, corr)
		return events.NodeStream(n), []events.Event{
			mk("", events.NodeRegistered{Node: n}, h.t0, "operator:jo", corr),
			mk("", events.ModuleAssigned{Module: "m", Node: n}, h.t0, "operator:jo", corr),
			mk("", events.DeclarationComposed{Node: n, Declaration: decl, Digest: digest, Roster: []string{"forge", "ca", "web"}, Resources: res}, h.t0, "controller", corr),
			mk("", events.DeclarationPushed{Node: n, Declaration: decl, Digest: digest, Resources: 3}, h.t0, "controller", corr),
			apply,
		}
	})
	if err != nil {
		return err
	}
	for hour := range h.hours {
		err := h.each(ctx, st, func(i int) (string, []events.Event) {
			evs := make([]events.Event, quietPerHour)
			for k := range evs {
				evs[k] = quiet[i]
				evs[k].ID, evs[k].At = events.NewID(), h.t0.Add(time.Duration(hour*quietPerHour+k+1)*quietTick)
			}
			return quiet[i].Stream, evs
		})
		if err != nil {
			return fmt.Errorf("hour %d: %w", hour, err)
		}
	}
	return nil
}

// each appends what mk gives for every node, from 2,048 writers.
func (h quietHistory) each(ctx context.Context, st events.Store, mk func(i int) (string, []events.Event)) error {
	work := make(chan int)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 2048 {
		wg.Go(func() {
			for i := range work {
				stream, evs := mk(i)
				if _, err := st.Append(ctx, stream, events.Any, evs...); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := range h.nodes {
		work <- i
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}
