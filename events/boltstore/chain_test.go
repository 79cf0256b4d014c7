package boltstore

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"meshplane/events"
)

// chainFixture is a closed store file of 10 events on two streams, and its
// chain head.
func chainFixture(t *testing.T) (string, events.ChainHead) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, stream := range []string{"node-a", "node-b"} {
		if _, err := s.Append(ctx, stream, events.NoStream, evN(5, stream)...); err != nil {
			t.Fatal(err)
		}
	}
	head, err := s.ChainHead(ctx)
	if err != nil || head.Position != 10 || head.Chain.IsZero() {
		t.Fatalf("ChainHead: %s, %v", head, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path, head
}

// tamper changes the closed file at path as someone with the file and
// this package's source could: fn gets the buckets and every stored event.
func tamper(t *testing.T, path string, fn func(evb, chain, meta *bolt.Bucket, all []events.Event) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		evb := tx.Bucket(bucketEvents)
		var all []events.Event
		c := evb.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			e, err := events.DecodeRecord(v)
			if err != nil {
				return err
			}
			all = append(all, e)
		}
		return fn(evb, tx.Bucket(bucketChain), tx.Bucket(bucketMeta), all)
	}); err != nil {
		t.Fatal(err)
	}
}

// putRecord writes e at its position, with a checksum that matches.
func putRecord(evb *bolt.Bucket, e events.Event) error {
	return evb.Put(u64key(e.Position), events.AppendRecord(nil, e))
}

// verifyChain reads the store at path and checks its chain against anchor.
func verifyChain(t *testing.T, path string, anchor events.ChainHead) events.ChainReport {
	t.Helper()
	s, err := Open(path, ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	all, err := s.ReadAll(context.Background(), 0, 0)
	if err != nil {
		t.Fatalf("ReadAll of the tampered file: %v (its records all pass their checksums)", err)
	}
	v := events.NewChainVerifier(&anchor)
	for _, e := range all {
		v.Add(e)
	}
	return v.Report()
}

// wantBreak fails t unless r breaks at pos with a reason containing word.
func wantBreak(t *testing.T, r events.ChainReport, pos uint64, word string) {
	t.Helper()
	if r.Break == nil {
		t.Fatalf("verify passed a tampered history: %+v", r)
	}
	if r.Break.Position != pos || !strings.Contains(r.Break.Reason, word) {
		t.Errorf("verify: break at %d (%s), want at %d, saying %q", r.Break.Position, r.Break.Reason, pos, word)
	}
}

// TestChainIntact: an untouched file verifies against its head.
func TestChainIntact(t *testing.T) {
	path, head := chainFixture(t)
	if r := verifyChain(t, path, head); r.Err() != nil || !r.AnchorChecked || r.Start != 1 || r.Checked != 10 {
		t.Fatalf("verify of an intact file: %+v, %v", r, r.Err())
	}
	verifyClean(t, path)
}

// TestChainRewrittenPayload: one event's payload rewritten and its CRC
// recomputed, so every read passes its checksum: the chain names it, and
// so does Verify.
func TestChainRewrittenPayload(t *testing.T) {
	path, head := chainFixture(t)
	tamper(t, path, func(evb, _, _ *bolt.Bucket, all []events.Event) error {
		e := all[6]
		e.Data = []byte(`{"tag":"node-b","i":9}`)
		return putRecord(evb, e)
	})
	wantBreak(t, verifyChain(t, path, head), 7, "does not match its chain value")
	rep, err := Verify(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || !strings.Contains(strings.Join(rep.Damage, "\n"), "position 7: the record does not match its chain value") {
		t.Errorf("Verify of a rewritten record: %v", rep.Damage)
	}
}

// TestChainRemovedEvent: event 4 removed and those after it moved down one
// position, their chain values with them: the chain names position 4.
func TestChainRemovedEvent(t *testing.T) {
	path, head := chainFixture(t)
	tamper(t, path, func(evb, chain, meta *bolt.Bucket, all []events.Event) error {
		for i := 4; i < len(all); i++ {
			e := all[i]
			e.Position--
			if err := putRecord(evb, e); err != nil {
				return err
			}
			// Moved with its checksum made again, as the record's is.
			var h events.Hash
			copy(h[:], chain.Get(u64key(e.Position+1)))
			if err := chain.Put(u64key(e.Position), appendChainValue(nil, e.Position, h)); err != nil {
				return err
			}
		}
		if err := evb.Delete(u64key(10)); err != nil {
			return err
		}
		if err := chain.Delete(u64key(10)); err != nil {
			return err
		}
		return meta.Put(metaHead, u64key(9))
	})
	wantBreak(t, verifyChain(t, path, head), 4, "does not match its chain value")
}

// TestChainReordered: events 5 and 6 swapped, each keeping the chain
// value of its new place: the chain names position 5.
func TestChainReordered(t *testing.T) {
	path, head := chainFixture(t)
	tamper(t, path, func(evb, _, _ *bolt.Bucket, all []events.Event) error {
		a, b := all[4], all[5]
		a.Position, b.Position = b.Position, a.Position
		if err := putRecord(evb, a); err != nil {
			return err
		}
		return putRecord(evb, b)
	})
	wantBreak(t, verifyChain(t, path, head), 5, "does not match its chain value")
}

// TestChainTruncated: the newest three events removed, chain and head
// with them. The chain left is consistent; only the anchor sees it, and
// verify names the first position missing.
func TestChainTruncated(t *testing.T) {
	path, head := chainFixture(t)
	tamper(t, path, func(evb, chain, meta *bolt.Bucket, _ []events.Event) error {
		for p := uint64(8); p <= 10; p++ {
			if err := evb.Delete(u64key(p)); err != nil {
				return err
			}
			if err := chain.Delete(u64key(p)); err != nil {
				return err
			}
		}
		return meta.Put(metaHead, u64key(7))
	})
	r := verifyChain(t, path, head)
	wantBreak(t, r, 8, "truncated")
	if v := events.NewChainVerifier(nil); true {
		// Without the anchor the shorter history proves itself: the case
		// a chain alone cannot see.
		s, err := Open(path, ReadOnly())
		if err != nil {
			t.Fatal(err)
		}
		all, err := s.ReadAll(context.Background(), 0, 0)
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range all {
			v.Add(e)
		}
		if r := v.Report(); r.Err() != nil || r.Checked != 7 {
			t.Errorf("verify of the truncated file without an anchor: %+v", r)
		}
	}
}

// TestChainRecomputed: a payload rewritten and every chain value from it
// on recomputed, so the chain is consistent: the anchor's value differs,
// and verify names the anchor's position.
func TestChainRecomputed(t *testing.T) {
	path, head := chainFixture(t)
	tamper(t, path, func(evb, chain, _ *bolt.Bucket, all []events.Event) error {
		all[2].Data = []byte(`{"tag":"node-a","i":7}`)
		var prev events.Hash
		for _, e := range all {
			if err := putRecord(evb, e); err != nil {
				return err
			}
			prev = events.ChainOf(prev, e)
			if err := chain.Put(u64key(e.Position), appendChainValue(nil, e.Position, prev)); err != nil {
				return err
			}
		}
		return nil
	})
	wantBreak(t, verifyChain(t, path, head), 10, "anchor says")
}

// TestChainUpgrade: a layout-2 file (made before the chain) opened for
// writing becomes layout 3, its chain starting after its head; its older
// records keep their format and carry no chain value.
func TestChainUpgrade(t *testing.T) {
	path, _ := chainFixture(t)
	tamper(t, path, func(_, _, meta *bolt.Bucket, _ []events.Event) error {
		if err := meta.Delete(metaChainStart); err != nil {
			return err
		}
		return meta.Put(metaLayout, u64key(layoutChecksummed))
	})
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketChain) }); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if h, err := s.ChainHead(ctx); err != nil || h.Position != 10 || !h.Chain.IsZero() {
		t.Errorf("ChainHead of an upgraded file before an append: %s, %v", h, err)
	}
	if _, err := s.Append(ctx, "node-c", events.NoStream, evN(2, "c")...); err != nil {
		t.Fatal(err)
	}
	all, err := s.ReadAll(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	head, err := s.ChainHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, e := range all[:10] {
		if !e.Chain.IsZero() {
			t.Errorf("position %d, older than the chain, has a chain value", e.Position)
		}
	}
	v := events.NewChainVerifier(&head)
	for _, e := range all {
		v.Add(e)
	}
	if r := v.Report(); r.Err() != nil || r.Start != 11 || !r.AnchorChecked {
		t.Errorf("verify of an upgraded file: %+v, %v", r, r.Err())
	}
	rep, err := Verify(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Layout != layoutChained || rep.ChainStart != 11 || rep.Chained != 2 {
		t.Errorf("Verify of an upgraded file: %+v", rep)
	}
}
