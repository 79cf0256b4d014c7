package export_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/export"
	"meshplane/events/memstore"
)

// filled is a memory store holding n events over three streams.
func filled(t *testing.T, n int) *memstore.Store {
	t.Helper()
	s := memstore.New()
	t.Cleanup(func() { s.Close() })
	at := time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC)
	for i := range n {
		ev := events.Event{ID: events.NewID(), Type: events.TypeNodeRegistered, Schema: 1, At: at.Add(time.Duration(i) * time.Second),
			Data: []byte(fmt.Sprintf(`{"node":"n%d"}`, i%3))}
		if _, err := s.Append(context.Background(), fmt.Sprintf("node-n%d", i%3), events.Any, ev); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// Write writes the events after since, one line each in position order,
// each line decoding to the event the store holds; progress hears the
// total first and reaches it.
func TestWrite(t *testing.T) {
	ctx := context.Background()
	const n = 2*export.Page + 17 // more than one page
	s := filled(t, n)
	all, err := s.ReadAll(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, since := range []uint64{0, 1, export.Page, n - 1, n, n + 5} {
		t.Run(fmt.Sprint(since), func(t *testing.T) {
			var b bytes.Buffer
			var calls [][2]uint64
			got, err := export.Write(ctx, s, since, &b, func(done, total uint64) { calls = append(calls, [2]uint64{done, total}) })
			want := n - int(min(since, n))
			if err != nil || got != want {
				t.Fatalf("wrote %d (%v), want %d", got, err, want)
			}
			lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			if want == 0 {
				lines = nil
			}
			if len(lines) != want {
				t.Fatalf("%d lines, want %d", len(lines), want)
			}
			for i, l := range lines {
				ev, err := events.UnmarshalJSONLine([]byte(l))
				if w := all[int(since)+i]; err != nil || ev.ID != w.ID || ev.Position != w.Position || !bytes.Equal(ev.Data, w.Data) {
					t.Fatalf("line %d: %v (%v), want %v", i+1, ev, err, w)
				}
			}
			if len(calls) == 0 || calls[0] != [2]uint64{0, uint64(want)} || calls[len(calls)-1] != [2]uint64{uint64(want), uint64(want)} {
				t.Errorf("progress %v, want from 0 to %d of %d", calls, want, want)
			}
		})
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, fmt.Errorf("disk full") }

// A write that fails is the export's failure.
func TestWriteFails(t *testing.T) {
	s := filled(t, 3)
	if _, err := export.Write(context.Background(), s, 0, failingWriter{}, nil); err == nil || !strings.Contains(err.Error(), "export: write: disk full") {
		t.Errorf("a failing writer: %v", err)
	}
}
