package projections_test

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/projections"
	"meshplane/sim"
)

// FuzzLoadSnapshot hands LoadSnapshot snapshot bodies with a good header
// and checksum, so the decoder and the checks behind the checksum are what
// is fuzzed: it loads or refuses with ErrSnapshot, and a loaded set folds on
// and answers without panicking.
func FuzzLoadSnapshot(f *testing.F) {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	if err := sim.New(store).Generate(ctx, sim.DefaultWorkload, 300); err != nil {
		f.Fatal(err)
	}
	dir := f.TempDir()
	good := filepath.Join(dir, "good.snap")
	set := projections.New()
	r := projections.NewRunner(store, events.NewRegistry(), set.All()...)
	if err := r.CatchUpTo(ctx, 250); err != nil {
		f.Fatal(err)
	}
	if err := projections.SaveSnapshot(ctx, good, r, set); err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(good)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b[20 : len(b)-4])
	f.Add([]byte(`{"Position":0}`))
	f.Add([]byte(`{"Position":0,"Churn":{"Nodes":{"a":{"Active":3}}},"Roster":{},"Status":{},"Holds":{},"Timeline":{}}`))
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	f.Fuzz(func(t *testing.T, body []byte) {
		buf := append([]byte("MESHSNAP"), b[8:12]...) // this build's version

		buf = binary.BigEndian.AppendUint64(buf, uint64(len(body)))
		buf = append(buf, body...)
		buf = binary.BigEndian.AppendUint32(buf, crc32.Checksum(body, castagnoli))
		path := filepath.Join(t.TempDir(), "f.snap")
		if err := os.WriteFile(path, buf, 0o600); err != nil {
			t.Fatal(err)
		}
		set := projections.New()
		r := projections.NewRunner(store, events.NewRegistry(), set.All()...)
		if _, err := projections.LoadSnapshot(ctx, path, r, set); err != nil {
			if !errors.Is(err, projections.ErrSnapshot) {
				t.Fatalf("load: %v, want ErrSnapshot", err)
			}
			if strings.Contains(err.Error(), "format version") {
				t.Fatalf("load: %v: the fuzzer writes another version than this build's", err)
			}
			return
		}
		if err := r.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := set.MarshalJSON(); err != nil {
			t.Fatal(err)
		}
		for _, n := range set.Status.Nodes() {
			set.Status.Of(n)
			set.Holds.Of(n)
			set.Roster.History(n)
			set.Timeline.Query(projections.Filter{Node: n, Limit: 5})
		}
	})
}
