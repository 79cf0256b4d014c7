package sim_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"meshplane/commands"
	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/projections"
	"meshplane/sim"
)

// idlePasses is how many idle passes BenchmarkIdlePass measures:
// MESH_IDLE_PASSES, or 10,000 (issue 6's target).
func idlePasses(b *testing.B) int {
	if s := os.Getenv("MESH_IDLE_PASSES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("MESH_IDLE_PASSES=%q: want a positive number", s)
		}
		return n
	}
	return 10_000
}

// seedNode sets up node "novox" as seed 002 found it: adopted, with 330
// resources applied (ten taken modules of 11 containers, 11 directories and
// 11 files) and 16 held for two modules assigned and not taken whose data is
// found on disk (route-proxy: 10 directories and 3 containers mounting them;
// photos: 2 and 1), 346 declared.
func seedNode(ctx context.Context, m *sim.Mesh) error {
	const node = "novox"
	n, err := m.AddNode(ctx, node)
	if err != nil {
		return err
	}
	do := []commands.Command{
		commands.AdoptNode{Node: node},
		commands.SetNodeSetting{Node: node, Key: events.SettingPrivateAddress, Value: "10.1.0.3"},
		commands.SetNodeSetting{Node: node, Key: events.SettingPortPrefix + "store", Value: "6852"},
	}
	for i := 0; i < 10; i++ {
		mod := fmt.Sprintf("app-%02d", i)
		spec := events.ModuleSpec{Routes: []string{mod + ".novox.be"}}
		for j := 0; j < 11; j++ {
			dir := fmt.Sprintf("/var/lib/%s/d%02d", mod, j)
			spec.Directories = append(spec.Directories, events.DirectorySpec{Path: dir, Mode: "0750"})
			spec.Files = append(spec.Files, events.FileSpec{Path: dir + "/app.conf", Content: fmt.Sprintf("name = %s-%d\n", mod, j)})
			spec.Containers = append(spec.Containers, events.ContainerSpec{
				Name: fmt.Sprintf("%s-c%02d", mod, j), Image: fmt.Sprintf("registry.example/%s/c%d:1", mod, j),
				Env: map[string]string{"MODULE": mod}, Mounts: []events.Mount{{Source: dir, Target: "/data"}},
			})
		}
		do = append(do, commands.DefineModule{Module: mod, Spec: spec},
			commands.AssignModule{Module: mod, Node: node}, commands.TakeModule{Module: mod, Node: node})
	}
	// Found on disk with another mode than declared, so that they are held
	// under the hold rule of this build and under seed 002's (every found
	// directory held, matching or not).
	held := []struct {
		mod        string
		dirs       []string
		containers map[string]string // name → the found path it mounts
	}{
		{"route-proxy", []string{"/var/lib/route-proxy/ca", "/var/lib/route-proxy/acme", "/var/lib/route-proxy/config",
			"/var/lib/route-proxy/logs", "/var/lib/route-proxy/sites", "/var/lib/route-proxy/certs", "/var/lib/route-proxy/keys",
			"/var/lib/route-proxy/cache", "/var/lib/route-proxy/state", "/var/lib/route-proxy/www"},
			map[string]string{"proxy": "/var/lib/route-proxy/config", "ca": "/var/lib/route-proxy/ca", "acme": "/var/lib/route-proxy/acme"}},
		{"photos", []string{"/var/lib/photos", "/var/lib/photos-cache"}, map[string]string{"photos": "/var/lib/photos"}},
	}
	for _, h := range held {
		spec := events.ModuleSpec{Routes: []string{h.mod + ".novox.be"}}
		for _, d := range h.dirs {
			spec.Directories = append(spec.Directories, events.DirectorySpec{Path: d, Mode: "0700"})
			if err := n.Runtime.MakeDirectory(d, 0o755); err != nil {
				return err
			}
		}
		for name, src := range h.containers {
			spec.Containers = append(spec.Containers, events.ContainerSpec{
				Name: name, Image: "registry.example/" + h.mod + "/" + name + ":1", Mounts: []events.Mount{{Source: src}},
			})
		}
		do = append(do, commands.DefineModule{Module: h.mod, Spec: spec}, commands.AssignModule{Module: h.mod, Node: node})
	}
	for _, c := range do {
		if err := m.Do(ctx, c); err != nil {
			return fmt.Errorf("%T: %w", c, err)
		}
	}
	return nil
}

// storeBytes is what events take in a boltstore, counted: each record
// (events.AppendRecord, format 3) and its index entries (the events key, 8
// bytes; the stream bucket's version → position, 16; the ids bucket's id →
// position, 24). bbolt's page overhead is not in it (see fileBytes).
// format1 is the records' size in format 1, as stores wrote them before.
func storeBytes(evs []events.Event) (records, indexes, format1 int) {
	var buf []byte
	for _, ev := range evs {
		buf = events.AppendRecord(buf[:0], ev)
		records += len(buf)
		indexes += 8 + 16 + 24
		format1 += record1Size(ev)
	}
	return records, indexes, format1
}

// record1Size is the length of ev's record in format 1 (events/record.go):
// the format byte, the id, three uvarints, a varint, five strings and the
// data, each string and the data after its uvarint length.
func record1Size(ev events.Event) int {
	var scratch [binary.MaxVarintLen64]byte
	uv := func(v uint64) int { return binary.PutUvarint(scratch[:], v) }
	n := 1 + 16 + uv(ev.Version) + uv(ev.Position) + uv(uint64(ev.Schema)) + binary.PutVarint(scratch[:], ev.At.UnixNano())
	for _, s := range []string{ev.Stream, ev.Type, ev.Actor, ev.Causation, ev.Correlation} {
		n += uv(uint64(len(s))) + len(s)
	}
	return n + uv(uint64(len(ev.Data))) + len(ev.Data)
}

// fileBytes is the size of the bbolt file at path and the bytes bbolt's
// pages hold in use (leaf and branch, elements' headers included, summed
// over every bucket). The store may be open (it holds bbolt's lock): its
// pages are read from a copy, taken between commits.
func fileBytes(b *testing.B, path string) (size, inuse int64) {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	cp := filepath.Join(b.TempDir(), "copy.db")
	if err := os.WriteFile(cp, data, 0o600); err != nil {
		b.Fatal(err)
	}
	size = int64(len(data))
	db, err := bolt.Open(cp, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	defer os.Remove(cp)
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(_ []byte, bk *bolt.Bucket) error {
			st := bk.Stats()
			inuse += int64(st.LeafInuse + st.BranchInuse)
			return nil
		})
	})
	if err != nil {
		b.Fatal(err)
	}
	return size, inuse
}

// BenchmarkIdlePass measures what an idle pass (nothing changed) of a node
// like seed 002's (330 resources applied, 16 held) adds to a boltstore,
// counting every byte of records and index entries, beside the growth of
// the bbolt file and of its pages in use:
//
//   - after: this build, through the real commands, agent and store; each
//     pass composes (unchanged: nothing appended), re-sends the stored
//     declaration (nothing appended) and applies (one compact
//     apply.reported);
//   - before: what the code before issue 6 appended on each idle pass, with
//     the same payloads as this run's declaration and report: a full
//     declaration.composed (a new id), a declaration.pushed, and an
//     apply.reported in full (every list, the held list, digest and apply
//     id), each its own append, as Push and RecordApply made them.
//
// One iteration makes idlePasses passes of each; run it with -benchtime=1x.
func BenchmarkIdlePass(b *testing.B) {
	passes := idlePasses(b)
	ctx := context.Background()
	for b.Loop() {
		dir := b.TempDir()
		// after
		path := filepath.Join(dir, "after.db")
		store, err := boltstore.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		m := sim.New(store)
		if err := seedNode(ctx, m); err != nil {
			b.Fatal(err)
		}
		var first events.Event
		for i := 0; i < 2; i++ { // the first pass creates; the second holds again, as every later one
			r, _, err := m.Pass(ctx, "novox")
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("pass %d: %s", i+1, r.Summary())
		}
		head, err := store.Head(ctx)
		if err != nil {
			b.Fatal(err)
		}
		all, err := store.ReadStream(ctx, events.NodeStream("novox"), 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		reg := events.NewRegistry()
		reports := projections.NewReports()
		var report events.ApplyReported // the last, resolved to its full form
		for _, ev := range all {
			switch ev.Type {
			case events.TypeDeclarationComposed:
				first = ev
			case events.TypeApplyReported:
				if report, err = reports.Resolve(ev, mustApply(b, reg, ev)); err != nil {
					b.Fatal(err)
				}
			}
		}
		size0, inuse0 := fileBytes(b, path)
		start := time.Now()
		for i := 0; i < passes; i++ {
			if _, _, err := m.Pass(ctx, "novox"); err != nil {
				b.Fatal(err)
			}
		}
		took := time.Since(start)
		added, err := store.ReadAll(ctx, head, 0)
		if err != nil {
			b.Fatal(err)
		}
		if err := store.Close(); err != nil {
			b.Fatal(err)
		}
		size1, inuse1 := fileBytes(b, path)
		rec, idx, rec1 := storeBytes(added)
		per := func(n int64) float64 { return float64(n) / float64(passes) }
		b.ReportMetric(float64(len(added))/float64(passes), "after-events/pass")
		b.ReportMetric(per(int64(rec+idx)), "after-B/pass")
		b.ReportMetric(per(int64(rec)), "after-record-B/pass")
		b.ReportMetric(per(int64(rec1+idx)), "after-fmt1-B/pass")
		b.ReportMetric(per(inuse1-inuse0), "after-inuse-B/pass")
		b.ReportMetric(per(size1-size0), "after-file-B/pass")
		b.ReportMetric(float64(took.Microseconds())/float64(passes), "after-µs/pass")
		b.Logf("after: %d passes, %d events, %d record bytes (%d in format 1) + %d index bytes; pages in use %d → %d, file %d → %d bytes; one record: %d bytes, payload %s",
			passes, len(added), rec, rec1, idx, inuse0, inuse1, size0, size1, len(events.AppendRecord(nil, added[len(added)-1])), added[len(added)-1].Data)

		// before
		composed, err := events.DecodeAs[events.DeclarationComposed](reg, first)
		if err != nil {
			b.Fatal(err)
		}
		composed.Specs = nil // an unchanged declaration carried no specs
		path = filepath.Join(dir, "before.db")
		if store, err = boltstore.Open(path); err != nil {
			b.Fatal(err)
		}
		size0, inuse0 = fileBytes(b, path)
		clock := sim.NewClock(first.At)
		stream := events.NodeStream("novox")
		var oldN, oldRec, oldIdx, oldRec1 int
		var onePass []int // the record sizes of the first pass
		for i := 0; i < passes; i++ {
			corr := uuid.Must(uuid.NewV7()).String()
			c := composed
			c.Declaration = fmt.Sprintf("novox/%d", i+2)
			pushed := events.DeclarationPushed{Node: "novox", Declaration: c.Declaration, Digest: c.Digest, Resources: len(c.Resources)}
			id := uuid.Must(uuid.NewV7())
			a := report
			a.Declaration, a.ApplyID = c.Declaration, id.String()
			a.Created, a.Replaced, a.Removed, a.Failed = []string{}, []events.Replaced{}, []string{}, []events.Failed{}
			for _, x := range []struct {
				p     events.Payload
				id    uuid.UUID
				actor string
			}{{c, uuid.Must(uuid.NewV7()), "controller"}, {pushed, uuid.Must(uuid.NewV7()), "controller"}, {a, id, "agent:novox"}} {
				ev, err := reg.New(stream, x.p, events.Meta{ID: x.id, At: clock.Now(), Actor: x.actor, Correlation: corr})
				if err != nil {
					b.Fatal(err)
				}
				stored, err := store.Append(ctx, stream, events.Any, ev)
				if err != nil {
					b.Fatal(err)
				}
				r, x, r1 := storeBytes(stored)
				oldN, oldRec, oldIdx, oldRec1 = oldN+len(stored), oldRec+r, oldIdx+x, oldRec1+r1
				if i == 0 {
					onePass = append(onePass, r1)
				}
			}
		}
		if err := store.Close(); err != nil {
			b.Fatal(err)
		}
		size1, inuse1 = fileBytes(b, path)
		rec, idx = oldRec, oldIdx
		b.ReportMetric(per(int64(oldRec1+idx)), "before-B/pass")
		b.ReportMetric(per(int64(oldRec1)), "before-record-B/pass")
		b.ReportMetric(per(int64(rec+idx)), "before-fmt3-B/pass")
		b.ReportMetric(per(inuse1-inuse0), "before-inuse-B/pass")
		b.ReportMetric(per(size1-size0), "before-file-B/pass")
		b.Logf("before: %d passes, %d events, %d record bytes in format 1 (%d in format 3) + %d index bytes; pages in use %d → %d, file %d → %d bytes (format 3 records); format-1 records of one pass: %d, %d, %d bytes",
			passes, oldN, oldRec1, rec, idx, inuse0, inuse1, size0, size1, onePass[0], onePass[1], onePass[2])
	}
}

func mustApply(b *testing.B, reg *events.Registry, ev events.Event) events.ApplyReported {
	b.Helper()
	a, err := events.DecodeAs[events.ApplyReported](reg, ev)
	if err != nil {
		b.Fatal(err)
	}
	return a
}
