package storeverify_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"meshplane/commands/importfile"
	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/events/export"
	"meshplane/sim"
	"meshplane/storeverify"
)

// history is a data directory whose bolt store holds a simulated mesh's
// history, and its chain head.
func history(t *testing.T) (string, events.ChainHead) {
	t.Helper()
	dir := t.TempDir()
	s, err := boltstore.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := sim.New(s).Generate(ctx, sim.DefaultWorkload, 120); err != nil {
		t.Fatal(err)
	}
	head, err := s.ChainHead(ctx)
	if err != nil || head.Chain.IsZero() {
		t.Fatalf("ChainHead: %s, %v", head, err)
	}
	return dir, head
}

// TestAnchoredRewrite: one event's payload rewritten in the file, its CRC
// made again so that every read passes: verify --anchor names its position.
func TestAnchoredRewrite(t *testing.T) {
	dir, head := history(t)
	const at = 40
	db, err := bolt.Open(filepath.Join(dir, "events.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("events"))
		k := []byte{0, 0, 0, 0, 0, 0, 0, at}
		e, err := events.DecodeRecord(b.Get(k))
		if err != nil {
			return err
		}
		e.Data = bytes.Replace(e.Data, []byte(`"`), []byte(`"x`), 1)
		return b.Put(k, events.AppendRecord(nil, e))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	rep, err := storeverify.Anchored(context.Background(), "", dir, head.String())
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(rep.Err(), events.ErrChainBroken) || rep.Break.Position != at {
		t.Fatalf("verify --anchor of a rewritten record: %+v, %v", rep, rep.Err())
	}
}

// TestAnchoredTruncated: the anchor is past the store's head.
func TestAnchoredTruncated(t *testing.T) {
	dir, head := history(t)
	later := head
	later.Position += 5
	rep, err := storeverify.Anchored(context.Background(), "", dir, later.String())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Break == nil || rep.Break.Position != head.Position+1 || !strings.Contains(rep.Break.Reason, "truncated") {
		t.Fatalf("verify --anchor past the head: %+v", rep)
	}
	if _, err := storeverify.Anchored(context.Background(), "", dir, "meshplane-head 12"); !errors.Is(err, events.ErrInvalid) {
		t.Errorf("a bad anchor line: %v, want ErrInvalid", err)
	}
}

// TestExportImportKeepsTheChain: the export carries each event's chain
// value; an import into an empty store reproduces every one, and verify
// --anchor with the source's head passes on the copy.
func TestExportImportKeepsTheChain(t *testing.T) {
	ctx := context.Background()
	dir, head := history(t)
	src, err := boltstore.Open(filepath.Join(dir, "events.db"), boltstore.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	n, err := export.Write(ctx, src, 0, &b, nil)
	src.Close()
	if err != nil || uint64(n) != head.Position {
		t.Fatalf("export: %d events, %v", n, err)
	}
	file := filepath.Join(t.TempDir(), "mesh.jsonl")
	if err := writeFile(file, b.Bytes()); err != nil {
		t.Fatal(err)
	}
	copyDir := t.TempDir()
	dst, err := boltstore.Open(filepath.Join(copyDir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := importfile.Check(ctx, file, events.NewRegistry(), importfile.Store{Open: func() (events.Store, error) { return dst, nil }, None: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Bad) > 0 {
		t.Fatal(c.Bad[0])
	}
	if _, err := c.Append(ctx, nil); err != nil {
		t.Fatal(err)
	}
	c.Close()
	dst.Close()

	dst, err = boltstore.Open(filepath.Join(copyDir, "events.db"), boltstore.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	copied, err := dst.ReadAll(ctx, 0, 0)
	dst.Close()
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range bytes.Split(bytes.TrimSpace(b.Bytes()), []byte("\n")) {
		e, err := events.UnmarshalJSONLine(line)
		if err != nil {
			t.Fatal(err)
		}
		if e.Chain.IsZero() || i >= len(copied) || copied[i].Chain != e.Chain || copied[i].Position != e.Position {
			t.Fatalf("line %d: chain %s, the copy's position %d has %s", i+1, e.Chain, i+1, copied[min(i, len(copied)-1)].Chain)
		}
	}
	rep, err := storeverify.Anchored(ctx, "", copyDir, head.String())
	if err != nil || rep.Err() != nil || !rep.AnchorChecked {
		t.Fatalf("verify --anchor with the source's head on the copy: %+v, %v, %v", rep, err, rep.Err())
	}
}

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o600) }
