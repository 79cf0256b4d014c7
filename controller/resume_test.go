package controller_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/google/uuid"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"meshplane/api"
	"meshplane/controller"
	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/projections"
	"meshplane/sim"
)

// countingStore counts the events its bulk reads hand over (a read of one
// event is a checkpoint's check of its position, not a fold).
type countingStore struct {
	events.Store
	mu   sync.Mutex
	read int
	low  uint64 // the lowest position a bulk read handed over (0: none)
}

// ReadByID reads through the store it counts for (events.IDReader): a
// resumed runner looks up by id what its checkpoint does not hold (a
// declaration stored by reference names one carried before it).
func (s *countingStore) ReadByID(ctx context.Context, id uuid.UUID) (events.Event, error) {
	return s.Store.(events.IDReader).ReadByID(ctx, id)
}

func (s *countingStore) ReadAll(ctx context.Context, after uint64, limit int) ([]events.Event, error) {
	evs, err := s.Store.ReadAll(ctx, after, limit)
	if limit != 1 && len(evs) > 0 {
		s.mu.Lock()
		s.read += len(evs)
		if s.low == 0 || evs[0].Position < s.low {
			s.low = evs[0].Position
		}
		s.mu.Unlock()
	}
	return evs, err
}

func (s *countingStore) counts() (int, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.read, s.low
}

// logBuffer is a logger whose lines a test reads.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// restartPolicy keeps a checkpoint every 500 events.
var restartPolicy = projections.KeepPolicy{Every: 500, MinGap: 1}

// history is a simulated history of about n events with a token recorded
// first, folded by a controller keeping its checkpoints in dir; it returns
// the store and the controller's readAnswers.
func history(t *testing.T, n uint64, dir string) (*memstore.Store, readAnswers) {
	t.Helper()
	ctx := context.Background()
	store := memstore.New()
	t.Cleanup(func() { store.Close() })
	c, err := controller.New(controller.Config{Store: store, Checkpoints: projections.NewKeeper(projections.DirCheckpoints(dir), restartPolicy, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RecordToken(ctx, "ops", "s3cret-token-of-ops", "tester"); err != nil {
		t.Fatal(err)
	}
	if err := sim.New(store).Generate(ctx, sim.DefaultWorkload, n); err != nil {
		t.Fatal(err)
	}
	head, _ := store.Head(ctx)
	foldInSteps(t, c.Runner(), head)
	return store, answersOf(t, c)
}

// foldInSteps folds r to head in steps of 250 events, as a running
// controller folds: a checkpoint is kept at the end of a step (a
// catch-up's page) when one is due.
func foldInSteps(t *testing.T, r *projections.Runner, head uint64) {
	t.Helper()
	for p := uint64(0); p < head; p += 250 {
		if err := r.CatchUpTo(context.Background(), min(p+250, head)); err != nil {
			t.Fatal(err)
		}
	}
}

// readAnswers is what the tests compare between a controller folded from 0
// and one resumed: every read, as JSON.
type readAnswers map[string]string

func answersOf(t *testing.T, c *controller.Controller) readAnswers {
	t.Helper()
	ctx := context.Background()
	out := readAnswers{}
	put := func(name string, v any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = string(b)
	}
	node, res := sim.NodeName(0), "mod-000-c0"
	st, err := c.Status(ctx, api.StatusRequest{})
	put("status", st, err)
	nl, err := c.NodeList(ctx)
	put("node list", nl, err)
	ch, err := c.Churn(ctx, api.ChurnRequest{})
	put("churn", ch, err)
	ns, err := c.NodeShow(ctx, node)
	put("node show", ns, err)
	tl, err := c.QueryTimeline(ctx, api.TimelineRequest{})
	put("timeline", tl, err)
	first, err := c.Timeline(ctx, api.TimelineRequest{Limit: 50, Forward: true})
	put("timeline first page", first, err)
	last, err := c.Timeline(ctx, api.TimelineRequest{Limit: 50, Node: node})
	put("timeline last page of a node", last, err)
	why, err := c.Why(ctx, api.WhyRequest{Node: node, Resource: res})
	put("why", why, err)
	rh, err := c.RosterHistory(ctx, node)
	put("roster history", rh, err)
	tk, err := c.Tokens(ctx)
	put("tokens", tk, err)
	return out
}

func (a readAnswers) same(t *testing.T, b readAnswers, what string) {
	t.Helper()
	for k, v := range a {
		if b[k] != v {
			t.Errorf("%s: %s differs from the fold from 0:\n got %.300s\nwant %.300s", what, k, b[k], v)
		}
	}
}

// resumeOn is a controller over a counting view of store resuming from the
// checkpoints in dir, its log in lb.
func resumeOn(t *testing.T, store events.Store, dir string, lb *logBuffer) (*controller.Controller, *countingStore, uint64) {
	t.Helper()
	cs := &countingStore{Store: store}
	c, err := controller.New(controller.Config{Store: cs, Logger: lb.logger(),
		Checkpoints: projections.NewKeeper(projections.DirCheckpoints(dir), restartPolicy, func(n string) { lb.logger().Warn("controller: checkpoints: " + n) })})
	if err != nil {
		t.Fatal(err)
	}
	from, err := c.Resume(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if from != c.ResumedFrom() {
		t.Errorf("Resume said %d, ResumedFrom %d", from, c.ResumedFrom())
	}
	return c, cs, from
}

// readOnlyAfter checks that cs handed over exactly the events after the
// checkpoint at from, up to head, and none before it.
func readOnlyAfter(t *testing.T, cs *countingStore, from, head uint64, when string) {
	t.Helper()
	if read, low := cs.counts(); uint64(read) != head-from || (read > 0 && low != from+1) {
		t.Errorf("%s the resumed controller read %d events from position %d; want the %d after the checkpoint at %d", when, read, low, head-from, from)
	}
}

func positionsIn(t *testing.T, dir string) []uint64 {
	t.Helper()
	l, err := projections.DirCheckpoints(dir).List()
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	for _, c := range l {
		out = append(out, c.Position)
	}
	return out
}

// TestResumeFoldsOnlyWhatCameAfter: a controller started on the
// checkpoints another one kept resumes from the newest, folds only the
// events after it before its first answer (the timeline before it, Why and
// roster history from a fold of their own, made on first use), and readAnswers
// every read as the fold from 0 does.
func TestResumeFoldsOnlyWhatCameAfter(t *testing.T) {
	dir := t.TempDir()
	store, want := history(t, 6000, dir)
	ctx := context.Background()
	head, _ := store.Head(ctx)
	held := positionsIn(t, dir)
	if len(held) < 2 {
		t.Fatalf("%d checkpoints kept over %d events", len(held), head)
	}
	var lb logBuffer
	c, cs, from := resumeOn(t, store, dir, &lb)
	if newest := held[len(held)-1]; from != newest {
		t.Fatalf("resumed from %d, the newest checkpoint is %d", from, newest)
	}
	if _, err := c.Status(ctx, api.StatusRequest{}); err != nil {
		t.Fatal(err)
	}
	readOnlyAfter(t, cs, from, head, "before its first answer")
	want.same(t, answersOf(t, c), "resumed")
	if strings.Contains(lb.String(), "passed over") {
		t.Errorf("a checkpoint was passed over: %s", lb.String())
	}
}

// TestResumePassesOverWhatDoesNotMatch: the newest checkpoint damaged, of
// another store, or of another history holding the same event at its
// position (only the hash chain tells), is passed over with a logged note
// and the next older one used; with none usable the controller folds from
// 0. The readAnswers are the same each time.
func TestResumePassesOverWhatDoesNotMatch(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, want := history(t, 3000, dir)
	head, _ := store.Head(ctx)
	held := positionsIn(t, dir)
	if len(held) < 3 {
		t.Fatalf("%d checkpoints kept", len(held))
	}
	newest := held[len(held)-1]
	file := func(d string, pos uint64) string { return filepath.Join(d, fmt.Sprintf("%020d.snap", pos)) }

	// Another store: a history of its own, whose checkpoint at a position
	// this store holds too.
	otherDir := t.TempDir()
	history(t, 3000, otherDir)
	other := positionsIn(t, otherDir)

	// Another history with the same event at the checkpoint's position: a
	// copy of the store whose first event is stamped a second later.
	evs, err := store.ReadAll(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	copied := memstore.New()
	defer copied.Close()
	for i, ev := range evs {
		ev.Version, ev.Position, ev.Chain = 0, 0, events.Hash{}
		if i == 0 {
			ev.At = ev.At.Add(1e9)
		}
		if _, err := copied.Append(ctx, ev.Stream, events.Any, ev); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct {
		name  string
		store events.Store
		spoil func(t *testing.T, d string)
		note  string
		from  uint64
	}{
		{"damaged", store, func(t *testing.T, d string) {
			f := file(d, newest)
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 0xff
			if err := os.WriteFile(f, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "checksum mismatch", held[len(held)-2]},
		{"another store", store, func(t *testing.T, d string) {
			pos := other[len(other)-1]
			if pos > head {
				pos = other[len(other)-2]
			}
			b, err := os.ReadFile(file(otherDir, pos))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, filepath.Base(file(otherDir, pos))), b, 0o600); err != nil {
				t.Fatal(err)
			}
			if pos < newest {
				// Newer than this store's own: remove those after it.
				for _, p := range held {
					if p > pos {
						os.Remove(file(d, p))
					}
				}
			}
		}, "another history", 0},
		{"another history, the same event", copied, nil, "hash chain", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			for _, p := range held {
				b, err := os.ReadFile(file(dir, p))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(d, filepath.Base(file(dir, p))), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tc.spoil != nil {
				tc.spoil(t, d)
			}
			var lb logBuffer
			c, _, from := resumeOn(t, tc.store, d, &lb)
			if !strings.Contains(lb.String(), "passed over") || !strings.Contains(lb.String(), tc.note) {
				t.Errorf("no note of the checkpoint passed over (%q); log:\n%s", tc.note, lb.String())
			}
			if tc.from != 0 && from != tc.from {
				t.Errorf("resumed from %d, want the next older checkpoint %d", from, tc.from)
			}
			if tc.name == "another store" && from == 0 {
				t.Error("no checkpoint of this store used after the other's was passed over")
			}
			if tc.store == copied {
				if from != 0 {
					t.Errorf("resumed from %d on another history", from)
				}
				return // its readAnswers differ by the first event's time
			}
			want.same(t, answersOf(t, c), tc.name)
		})
	}
}

func jsonNum(n uint64) string { return strconv.FormatUint(n, 10) }

// TestResumedAtAndDiffUseTheCheckpoints: after a restart, a past moment
// and a diff fold from the checkpoints on disk (a few events), and answer
// as the controller folded from 0 does.
func TestResumedAtAndDiffUseTheCheckpoints(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, _ := history(t, 3000, dir)
	held := positionsIn(t, dir)
	if len(held) < 2 {
		t.Fatalf("%d checkpoints kept", len(held))
	}
	moment := held[0] + 7
	whole, err := controller.New(controller.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	wantAt, err := whole.At(ctx, api.At{Position: moment})
	if err != nil {
		t.Fatal(err)
	}
	wantSt, err := wantAt.Status(ctx, api.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	wantDiff, err := whole.Diff(ctx, api.DiffRequest{From: jsonNum(moment), To: jsonNum(held[1] + 3)})
	if err != nil {
		t.Fatal(err)
	}

	var lb logBuffer
	c, cs, from := resumeOn(t, store, dir, &lb)
	if from == 0 {
		t.Fatal("did not resume")
	}
	before, _ := cs.counts()
	at, err := c.At(ctx, api.At{Position: moment})
	if err != nil {
		t.Fatal(err)
	}
	st, err := at.Status(ctx, api.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := cs.counts()
	if got := after - before; got != 7 {
		t.Errorf("status at %d read %d events; want the 7 after the checkpoint at %d", moment, got, held[0])
	}
	if a, b := mustJSON(t, st), mustJSON(t, wantSt); a != b {
		t.Errorf("status at %d differs from the fold from 0:\n got %.300s\nwant %.300s", moment, a, b)
	}
	d, err := c.Diff(ctx, api.DiffRequest{From: jsonNum(moment), To: jsonNum(held[1] + 3)})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := mustJSON(t, d), mustJSON(t, wantDiff); a != b {
		t.Errorf("diff differs from the fold from 0:\n got %.300s\nwant %.300s", a, b)
	}
	if diffRead, _ := cs.counts(); diffRead-after >= int(held[1]) {
		t.Errorf("the diff read %d events: not from the checkpoints", diffRead-after)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRebuildAfterResume: a rebuild of a resumed controller compares what
// a checkpoint keeps of each projection (its live ones never held what the
// checkpoint leaves out), finds every one the same, and answers every read
// as the fold from 0 does after it, as before it.
func TestRebuildAfterResume(t *testing.T) {
	dir := t.TempDir()
	store, want := history(t, 6000, dir)
	held := positionsIn(t, dir)
	if len(held) < 2 {
		t.Fatalf("%d checkpoints kept", len(held))
	}
	// The newest gone: the resume folds the events after the one before.
	if err := projections.DirCheckpoints(dir).Remove(held[len(held)-1]); err != nil {
		t.Fatal(err)
	}
	var lb logBuffer
	c, _, from := resumeOn(t, store, dir, &lb)
	if from != held[len(held)-2] {
		t.Fatalf("resumed from %d, want %d", from, held[len(held)-2])
	}
	want.same(t, answersOf(t, c), "resumed")
	res, err := c.Rebuild(context.Background(), api.RebuildRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Projections) != len(projections.Names()) {
		t.Fatalf("compared %d projections, want %d", len(res.Projections), len(projections.Names()))
	}
	for _, p := range res.Projections {
		if !p.Same || !p.Kept || p.NewBytes == 0 {
			t.Errorf("%s: %+v, want the same in what a checkpoint keeps", p.Name, p)
		}
	}
	want.same(t, answersOf(t, c), "rebuilt after a resume")
	if strings.Contains(lb.String(), "differs") {
		t.Errorf("the rebuild logged a difference: %s", lb.String())
	}
}

// TestResumeKeepsTheRevocationList: the bus's revocation list is in the
// controller's checkpoints, so a resumed controller gives it (as a fold
// from 0 does) having read only the events after its checkpoint; a
// checkpoint that carries a token table but no list (an older build's) is
// passed over, never taken for an empty list.
func TestResumeKeepsTheRevocationList(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := memstore.New()
	defer store.Close()
	keeper := projections.NewKeeper(projections.DirCheckpoints(dir), restartPolicy, nil)
	c, err := controller.New(controller.Config{Store: store, Checkpoints: keeper})
	if err != nil {
		t.Fatal(err)
	}
	c.SetMinter(&fakeMinter{})
	tr, err := c.JoinToken(ctx, api.JoinTokenRequest{Operator: "ana", Node: "n4"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Join(ctx, api.JoinRequest{Token: tr.Token, PublicKey: "U" + strings.Repeat("Z", 55)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Revoke(ctx, api.RevokeRequest{Operator: "ana", Node: "n4"}); err != nil {
		t.Fatal(err)
	}
	if err := sim.New(store).Generate(ctx, sim.DefaultWorkload, 3000); err != nil {
		t.Fatal(err)
	}
	head, _ := store.Head(ctx)
	foldInSteps(t, c.Runner(), head)
	want, err := c.Revocations(ctx)
	if err != nil || len(want) != 1 {
		t.Fatalf("the list folded from 0: %v, %v; want the joined key", want, err)
	}

	var lb logBuffer
	resumed, cs, from := resumeOn(t, store, dir, &lb)
	if from == 0 {
		t.Fatalf("no checkpoint used: %s", lb.String())
	}
	got, err := resumed.Revocations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if mustJSON(t, got) != mustJSON(t, want) {
		t.Errorf("the resumed list is %v, want %v", got, want)
	}
	readOnlyAfter(t, cs, from, head, "for its revocation list")

	// An older build's checkpoints: a token table, no list.
	old := t.TempDir()
	set := projections.New()
	r := projections.NewRunner(store, events.NewRegistry(), set.All()...)
	r.KeepWith(projections.NewKeeper(projections.DirCheckpoints(old), restartPolicy, nil), set,
		func() (json.RawMessage, error) { return json.RawMessage(`{"tokens":[]}`), nil })
	foldInSteps(t, r, head)
	if len(positionsIn(t, old)) == 0 {
		t.Fatal("the older build kept no checkpoint")
	}
	var olb logBuffer
	again, _, from := resumeOn(t, store, old, &olb)
	if from != 0 || !strings.Contains(olb.String(), "no token table or revocation list") {
		t.Errorf("resumed from %d of a checkpoint without a revocation list; log: %s", from, olb.String())
	}
	if got, err := again.Revocations(ctx); err != nil || mustJSON(t, got) != mustJSON(t, want) {
		t.Errorf("after the fold from 0 the list is %v, %v; want %v", got, err, want)
	}
}
