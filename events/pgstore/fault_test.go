package pgstore

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/commands"
	"meshplane/declaration"
	"meshplane/events"
	"meshplane/events/pgstore/pgtest"
)

// TestServerRestart stops the real server (pg_ctl stop -m fast) and starts
// it again while a writer appends and a subscriber follows. While it is
// down, appends fail at once with an error naming the store and the stream;
// after it is back they succeed; every acknowledged event is stored; the
// subscription, which never ended, saw every stored event once, in order.
func TestServerRestart(t *testing.T) {
	own := pgtest.StartT(t) // stopping the shared cluster would break the other tests
	ctx := testCtx(t, 3*time.Minute)
	url, err := own.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var subRetries atomic.Int64
	s := openURL(t, url, WithPollInterval(100*time.Millisecond), WithRetryHook(func(op string, err error) {
		if op == "subscribe" {
			subRetries.Add(1)
		}
	}))
	subCtx, stopSub := context.WithCancel(ctx)
	defer stopSub()
	sub := follow(subCtx, s)

	// The writer appends one event at a time until told to stop, recording
	// what was acknowledged and the errors it got.
	var (
		mu      sync.Mutex
		acked   []uuid.UUID
		failed  []error
		phase   = "before"
		okAfter int
	)
	stopWriting := make(chan struct{})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for {
			select {
			case <-stopWriting:
				return
			case <-time.After(5 * time.Millisecond):
			}
			got, err := s.Append(ctx, "node-novox", events.Any, event("test.through-restart"))
			mu.Lock()
			if err != nil {
				failed = append(failed, err)
			} else {
				acked = append(acked, got[0].ID)
				if phase == "after" {
					okAfter++
				}
			}
			mu.Unlock()
		}
	}()
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	locked := func(f func() bool) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return f() }
	}
	waitUntil("appends before the stop", locked(func() bool { return len(acked) >= 20 }))

	if err := own.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	failedBefore := len(failed)
	mu.Unlock()
	waitUntil("appends to fail while down", locked(func() bool { return len(failed) >= failedBefore+5 }))
	// Reads fail too, at once, naming what they read.
	if _, err := s.ReadStream(ctx, "node-novox", 0, 0); err == nil || !strings.HasPrefix(err.Error(), "pgstore: read node-novox: ") {
		t.Errorf("ReadStream while down: %v, want an error naming the store and the stream", err)
	}
	if _, err := s.Head(ctx); err == nil {
		t.Error("Head while down succeeded")
	}
	time.Sleep(500 * time.Millisecond) // let the subscription retry a few times
	if err := own.Start(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	phase = "after"
	mu.Unlock()
	waitUntil("appends to succeed after the restart", locked(func() bool { return okAfter >= 20 }))
	close(stopWriting)
	<-writerDone

	mu.Lock()
	defer mu.Unlock()
	for _, err := range failed {
		if !strings.HasPrefix(err.Error(), "pgstore: append node-novox: ") {
			t.Errorf("append while down failed with %q, which does not name the store and the stream", err)
		}
	}
	t.Logf("%d appends acknowledged, %d failed; first failure: %v", len(acked), len(failed), failed[0])

	all, err := s.ReadAll(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[uuid.UUID]bool{}
	for _, e := range all {
		stored[e.ID] = true
	}
	for _, id := range acked {
		if !stored[id] {
			t.Errorf("acknowledged event %s lost in the restart", id)
		}
	}
	sub.waitCount(t, len(all), time.Minute)
	stopSub()
	if err := <-sub.done; !errors.Is(err, context.Canceled) {
		t.Errorf("subscription ended with %v, want it to run through the restart", err)
	}
	checkFollowed(t, "the subscription", sub, all)
	t.Logf("the subscription retried %d reads during the outage", subRetries.Load())
}

// TestComposeDuringOutage: seed 000 against a real database. A push whose
// compose must read the store while the server is down fails with an error
// naming the node and the read (and saying the failure could not be
// recorded either), sends nothing, and writes nothing; once the server is
// back, the same push composes, sends and records.
func TestComposeDuringOutage(t *testing.T) {
	own := pgtest.StartT(t)
	ctx := testCtx(t, 3*time.Minute)
	url, err := own.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := openURL(t, url)
	h := commands.NewHandler(s, events.NewRegistry())
	for _, c := range []commands.Command{
		commands.RegisterNode{Node: "novox"}, commands.RegisterNode{Node: "g14"},
		commands.DefineModule{Module: "searxng", Spec: events.ModuleSpec{Routes: []string{"searxng.zurag.be"},
			Containers: []events.ContainerSpec{{Name: "searxng", Image: "searxng:1"}}}},
		commands.AssignModule{Module: "searxng", Node: "g14"},
	} {
		if _, err := h.Execute(ctx, "operator:test", c); err != nil {
			t.Fatalf("%T: %v", c, err)
		}
	}
	var sent []declaration.Declaration
	send := func(_ context.Context, d declaration.Declaration) error { sent = append(sent, d); return nil }
	head, err := s.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}

	if err := own.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	_, _, err = h.PushNode(ctx, "novox", nil, commands.LastPush{}, send)
	var re *commands.ReadError
	if !errors.As(err, &re) {
		t.Fatalf("push while the server is down: %v, want a *commands.ReadError", err)
	}
	if re.Node != "novox" || re.Read == "" || !strings.Contains(err.Error(), "compose novox: read "+re.Read) {
		t.Errorf("push while down: %q (node %q, read %q), want it to name node novox and the read", err, re.Node, re.Read)
	}
	if !strings.Contains(err.Error(), "pgstore: ") || !strings.Contains(err.Error(), "recording the failure failed") {
		t.Errorf("push while down: %q, want the store's error and that recording the failure failed", err)
	}
	if len(sent) != 0 {
		t.Fatalf("a declaration was sent while its compose could not read: %v", sent)
	}

	if err := own.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if h2, err := s.Head(ctx); err != nil || h2 != head {
		t.Fatalf("after the outage the head is %d (%v), want %d: the failed push wrote something", h2, err, head)
	}
	var d declaration.Declaration
	deadline := time.Now().Add(time.Minute)
	for _, d, err = h.PushNode(ctx, "novox", nil, commands.LastPush{}, send); err != nil; _, d, err = h.PushNode(ctx, "novox", nil, commands.LastPush{}, send) {
		if time.Now().After(deadline) {
			t.Fatalf("push after the restart: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // the pool's broken connections go on the first use
	}
	if len(sent) != 1 || sent[0].ID != d.ID || len(d.Roster) != 1 || d.Roster[0].Node != "g14" {
		t.Fatalf("after the restart: sent %v, declaration %+v; want one declaration routing searxng to g14", sent, d)
	}
	evs, err := s.ReadStream(ctx, "node-novox", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	if got, want := strings.Join(types, " "), "node.registered declaration.composed declaration.pushed"; got != want {
		t.Errorf("node-novox after the outage and a push:\n got %s\nwant %s", got, want)
	}
}
