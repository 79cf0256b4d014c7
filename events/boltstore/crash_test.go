package boltstore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/events"
)

// crashEnv, when set, names the file TestCrashChild appends to.
const crashEnv = "MESHPLANE_BOLTSTORE_CRASH_CHILD"

// ack is one line of TestCrashChild's stdout: an event it was told is
// stored.
type ack struct {
	Stream   string          `json:"s"`
	Version  uint64          `json:"v"`
	Position uint64          `json:"p"`
	ID       uuid.UUID       `json:"id"`
	Data     json.RawMessage `json:"d"`
}

// crashData is the payload of the child's events: which batch an event
// belongs to, so that the parent can check each batch is whole.
type crashData struct {
	Batch string `json:"b"`
	I     int    `json:"i"`
	N     int    `json:"n"`
	Pad   string `json:"pad"`
}

// TestCrashChild is not a test: it is the child process of
// TestCrashRecovery, which runs this binary again with crashEnv set. It
// appends batches from several goroutines until it is killed, and prints
// every acknowledged event on stdout.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("the child of TestCrashRecovery; runs only when " + crashEnv + " is set")
	}
	s, err := Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	var out sync.Mutex
	var wg sync.WaitGroup
	deadline := time.Now().Add(30 * time.Second) // in case nobody kills us
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(g)))
			stream := fmt.Sprintf("crash-%d", g)
			cur, err := s.ReadStream(ctx, stream, 0, 0)
			if err != nil {
				fmt.Fprintln(os.Stderr, "child:", err)
				os.Exit(2)
			}
			version := uint64(len(cur))
			for seq := 0; time.Now().Before(deadline); seq++ {
				n := 1 + rng.IntN(8)
				batch := fmt.Sprintf("%d-%d-%d", os.Getpid(), g, seq)
				evs := make([]events.Event, n)
				for i := range evs {
					d, _ := json.Marshal(crashData{Batch: batch, I: i, N: n, Pad: strings.Repeat("x", rng.IntN(200))})
					evs[i] = events.Event{ID: events.NewID(), Type: "crash.test", Schema: 1, Data: d}
				}
				got, err := s.Append(ctx, stream, events.Exactly(version), evs...)
				if err != nil {
					fmt.Fprintln(os.Stderr, "child: append:", err)
					os.Exit(2)
				}
				version += uint64(n)
				var buf bytes.Buffer
				for _, e := range got {
					line, _ := json.Marshal(ack{e.Stream, e.Version, e.Position, e.ID, e.Data})
					buf.Write(line)
					buf.WriteByte('\n')
				}
				out.Lock()
				_, err = os.Stdout.Write(buf.Bytes())
				out.Unlock()
				if err != nil {
					os.Exit(3) // the parent is gone
				}
			}
		})
	}
	wg.Wait()
	s.Close()
}

// TestCrashRecovery kills a child appending to the store with SIGKILL in
// the middle of its stream, three times over, and checks after each kill
// that every acknowledged event is stored intact, positions are dense, no
// batch is torn, and the store takes further appends.
func TestCrashRecovery(t *testing.T) {
	if os.Getenv(crashEnv) != "" {
		t.Skip("in the child")
	}
	path := filepath.Join(t.TempDir(), "events.db")
	acked := map[uuid.UUID]ack{}
	for round := 1; round <= 3; round++ {
		got := runAndKill(t, path, 200+rand.IntN(200), round == 1)
		for _, a := range got {
			acked[a.ID] = a
		}
		t.Logf("round %d: %d events acknowledged before the kill, %d in all", round, len(got), len(acked))
		verifyAfterCrash(t, path, acked)
	}
}

// runAndKill runs the child on path, SIGKILLs it once it has acknowledged
// atLeast events, and returns every event it acknowledged. If checkLock, it
// first checks that the child's lock keeps this process out.
func runAndKill(t *testing.T, path string, atLeast int, checkLock bool) []ack {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	lines := make(chan ack)
	readErr := make(chan error, 1)
	go func() {
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil { // a last line without its newline is not an ack
				if errors.Is(err, io.EOF) {
					err = nil
				}
				readErr <- err
				close(lines)
				return
			}
			var a ack
			if err := json.Unmarshal(line, &a); err != nil {
				readErr <- fmt.Errorf("child printed %q: %w", line, err)
				close(lines)
				return
			}
			lines <- a
		}
	}()

	var got []ack
	timeout := time.After(30 * time.Second)
	for len(got) < atLeast {
		select {
		case a, ok := <-lines:
			if !ok {
				cmd.Wait()
				t.Fatalf("child stopped after %d acks: %v; stderr:\n%s", len(got), <-readErr, stderr.String())
			}
			got = append(got, a)
		case <-timeout:
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child acknowledged %d events in 30s, want %d; stderr:\n%s", len(got), atLeast, stderr.String())
		}
		if checkLock && len(got) == 1 {
			s, err := Open(path)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded while the child holds the file")
			}
			if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), path) {
				t.Errorf("Open while the child holds the file: %v, want ErrLocked naming the file", err)
			}
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatalf("kill child: %v", err)
	}
	for a := range lines { // what it printed before it died was acknowledged
		got = append(got, a)
	}
	if err := <-readErr; err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("child exited with %v, want killed; stderr:\n%s", err, stderr.String())
	}
	return got
}

func verifyAfterCrash(t *testing.T, path string, acked map[uuid.UUID]ack) {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer s.Close()
	ctx := context.Background()
	all := checkDense(t, s)
	byID := make(map[uuid.UUID]events.Event, len(all))
	batches := map[string][]events.Event{}
	for _, e := range all {
		byID[e.ID] = e
		if e.Type != "crash.test" {
			continue
		}
		var d crashData
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatalf("%s: data %q: %v", e, e.Data, err)
		}
		batches[d.Batch] = append(batches[d.Batch], e)
	}
	for id, a := range acked {
		e, ok := byID[id]
		if !ok {
			t.Errorf("acknowledged event %s (%s@%d #%d) lost", id, a.Stream, a.Version, a.Position)
			continue
		}
		if e.Stream != a.Stream || e.Version != a.Version || e.Position != a.Position || !bytes.Equal(e.Data, a.Data) {
			t.Errorf("acknowledged %s@%d #%d %s, stored %s with data %s", a.Stream, a.Version, a.Position, a.Data, e, e.Data)
		}
	}
	for name, evs := range batches {
		var d crashData
		json.Unmarshal(evs[0].Data, &d)
		if len(evs) != d.N {
			t.Errorf("batch %s torn: %d of its %d events stored", name, len(evs), d.N)
			continue
		}
		for i, e := range evs {
			if e.Position != evs[0].Position+uint64(i) || e.Version != evs[0].Version+uint64(i) {
				t.Errorf("batch %s not contiguous: %s after %s", name, e, evs[0])
			}
		}
	}
	unacked := 0
	for _, e := range all {
		if _, ok := acked[e.ID]; !ok && e.Type == "crash.test" {
			unacked++
		}
	}
	t.Logf("after the kill: %d events stored, %d acknowledged, %d stored but not (yet) acknowledged", len(all), len(acked), unacked)
	if _, err := s.Append(ctx, "crash-after", events.Any, ev("test.after", `{}`)); err != nil {
		t.Errorf("append after recovery: %v", err)
	}
}
