package controllerd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/controllerd"
	"meshplane/projections"
)

// syncBuffer is a log a test reads while the daemon writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runOn runs a controller on data until the returned stop, with its log
// in lb, and returns a client of its API.
func runOn(t *testing.T, data string, lb *syncBuffer) (*httpapi.Client, func()) {
	t.Helper()
	ready := make(chan controllerd.Ready, 1)
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cfg := controllerd.Config{
		Data: data, Listen: "127.0.0.1:0", BusListen: "127.0.0.1:0", Interval: time.Hour,
		Logger: slog.New(slog.NewTextHandler(lb, nil)), Ready: func(rd controllerd.Ready) { ready <- rd },
	}
	go func() { done <- controllerd.Run(ctx, cfg) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("controllerd.Run: %v", err)
			}
		case <-time.After(40 * time.Second):
			t.Error("controllerd.Run did not stop within 40s")
		}
	}
	t.Cleanup(stop)
	select {
	case rd := <-ready:
		c, err := httpapi.NewClient(rd.APIURL, rd.Token)
		if err != nil {
			t.Fatal(err)
		}
		return c, stop
	case err := <-done:
		t.Fatalf("controllerd.Run: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("controllerd.Run did not serve within 30s")
	}
	return nil, stop
}

// restartAnswers is what must not change across a restart: the node list
// and the whole timeline, as JSON.
func restartAnswers(t *testing.T, c *httpapi.Client) string {
	t.Helper()
	ctx := context.Background()
	nl, err := c.NodeList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := c.Timeline(ctx, api.TimelineRequest{Limit: api.MaxTimelineLimit, Forward: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal([]any{nl, tl.Entries})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var resumedLine = regexp.MustCompile(`resumed from a checkpoint" checkpoint=(\d+) position=(\d+) folded=(\d+)`)

// TestDaemonRestartResumesFromACheckpoint: a controller restarted on its
// data directory resumes from the newest checkpoint it kept in
// DATA/checkpoints/controller and folds only the events after it; a
// damaged newest checkpoint is passed over with a logged note and the next
// older one used. The answers are those before the restart each time.
func TestDaemonRestartResumesFromACheckpoint(t *testing.T) {
	old := controllerd.CheckpointPolicy
	controllerd.CheckpointPolicy = projections.KeepPolicy{Every: 4, MinGap: 1}
	defer func() { controllerd.CheckpointPolicy = old }()
	data := t.TempDir()
	var first syncBuffer
	c, stop := runOn(t, data, &first)
	for i := range 12 {
		if _, err := c.RegisterNodes(context.Background(), api.RegisterNodesRequest{Operator: "tester", Nodes: []string{fmt.Sprintf("n%02d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	answers := restartAnswers(t, c)
	stop()

	for _, tc := range []struct {
		name    string
		damaged bool
	}{{"as kept", false}, {"the newest damaged", true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(data, controllerd.CheckpointDir)
			held, err := projections.DirCheckpoints(dir).List()
			if err != nil || len(held) < 2 {
				t.Fatalf("checkpoints in %s: %v, %v", dir, held, err)
			}
			want := held[len(held)-1].Position
			if tc.damaged {
				f := filepath.Join(dir, fmt.Sprintf("%020d.snap", want))
				if err := os.WriteFile(f, []byte("MESHSNAP not a snapshot"), 0o600); err != nil {
					t.Fatal(err)
				}
				want = held[len(held)-2].Position
			}
			var lb syncBuffer
			c, stop := runOn(t, data, &lb)
			defer stop()
			m := resumedLine.FindStringSubmatch(lb.String())
			if m == nil {
				t.Fatalf("no resume logged:\n%s", lb.String())
			}
			from, _ := strconv.ParseUint(m[1], 10, 64)
			pos, _ := strconv.ParseUint(m[2], 10, 64)
			folded, _ := strconv.ParseUint(m[3], 10, 64)
			if from != want || folded != pos-from || pos < from {
				t.Errorf("resumed from %d, at %d, folding %d; want from %d, folding only what came after", from, pos, folded, want)
			}
			if passed := bytes.Contains([]byte(lb.String()), []byte("passed over")); passed != tc.damaged {
				t.Errorf("a checkpoint passed over: %v, want %v; log:\n%s", passed, tc.damaged, lb.String())
			}
			if got := restartAnswers(t, c); got != answers {
				t.Errorf("answers after the restart differ:\n got %.400s\nwant %.400s", got, answers)
			}
		})
	}
}
