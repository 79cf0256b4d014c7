package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"meshplane/events"
)

func FuzzDecodeEntry(f *testing.F) {
	good := entry{Seq: 3, Report: Report{
		Outcome: events.ApplyReported{
			Node: "novox", Declaration: "novox/3", Sent: 4, Applied: 3,
			Held:    []events.Held{{Name: "ca", Module: "route-proxy", Reason: "would mount /x, found on this adopted node; not run until route-proxy is taken"}},
			ApplyID: "01927c1e-7a4b-7c3d-8e5f-0123456789ab",
		},
		AppliedAt: time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC), Attempts: 2, LastError: "nats: connection closed",
	}}
	b, err := encodeEntry(good)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:len(b)-18]) // the JSON of a version-2 entry, without its checksum line
	f.Add(append(bytes.Clone(b[:len(b)-18]), "crc32c 00000000\n"...))
	f.Add([]byte(`{"version":1,"seq":1,"report":{"outcome":{"node":"n","declaration":"n/1","apply_id":"00000000-0000-0000-0000-000000000000"}}}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`{} {}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEntry(b)
		if err != nil {
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("decode error %v does not wrap ErrDamaged", err)
			}
			return
		}
		// What decodes re-encodes to something that decodes to the same.
		b2, err := encodeEntry(e)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		e2, err := decodeEntry(b2)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", b2, err)
		}
		if !reflect.DeepEqual(normal(t, e), normal(t, e2)) {
			t.Fatalf("round trip changed the entry:\n%+v\n%+v", e, e2)
		}
	})
}

// normal compares entries by their JSON, where nil and empty lists and
// time zones are one, and so are the format versions (a version-1 entry
// is written again as version 2).
func normal(t *testing.T, e entry) string {
	e.Version = 0
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDecodeEntryRefuses(t *testing.T) {
	tests := []struct{ name, in string }{
		{"not JSON", `{half`},
		{"two values", `{"version":1} {}`},
		{"version 2 without its checksum", `{"version":2,"seq":1,"report":{"outcome":{"node":"n","declaration":"n/1","apply_id":"01927c1e-7a4b-7c3d-8e5f-0123456789ab"}}}`},
		{"another version", `{"version":3,"seq":1,"report":{"outcome":{"node":"n","declaration":"n/1","apply_id":"01927c1e-7a4b-7c3d-8e5f-0123456789ab"}}}`},
		{"a checksum that fails", "{\"version\":2,\"seq\":1,\"report\":{\"outcome\":{\"node\":\"n\",\"declaration\":\"n/1\",\"apply_id\":\"01927c1e-7a4b-7c3d-8e5f-0123456789ab\"}}}\ncrc32c 00000000\n"},
		{"version 1 with a checksum", string(seal([]byte("{\"version\":1,\"seq\":1,\"report\":{\"outcome\":{\"node\":\"n\",\"declaration\":\"n/1\",\"apply_id\":\"01927c1e-7a4b-7c3d-8e5f-0123456789ab\"}}}\n")))},
		{"a bad checksum line", "{\"version\":2}\ncrc32c zz\n"},
		{"no seq", `{"version":1,"report":{"outcome":{"node":"n","declaration":"n/1","apply_id":"01927c1e-7a4b-7c3d-8e5f-0123456789ab"}}}`},
		{"no node", `{"version":1,"seq":1,"report":{"outcome":{"declaration":"n/1","apply_id":"01927c1e-7a4b-7c3d-8e5f-0123456789ab"}}}`},
		{"nil apply id", `{"version":1,"seq":1,"report":{"outcome":{"node":"n","declaration":"n/1","apply_id":"00000000-0000-0000-0000-000000000000"}}}`},
		{"negative attempts", `{"version":1,"seq":1,"report":{"attempts":-1,"outcome":{"node":"n","declaration":"n/1","apply_id":"01927c1e-7a4b-7c3d-8e5f-0123456789ab"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := decodeEntry([]byte(tt.in)); !errors.Is(err, ErrDamaged) {
				t.Fatalf("decode: %v, want ErrDamaged", err)
			}
		})
	}
}

// FuzzDecodeState: whatever a legacy state.json holds, decodeState never
// panics, and refuses with ErrDamaged what is not a state; what it accepts
// is moved into the log on open and loads back the same.
func FuzzDecodeState(f *testing.F) {
	b, err := json.MarshalIndent(storedState{Version: entryVersion, Made: []string{"/srv/a", "/srv/b"}, Last: Last{Declaration: "novox/3",
		HeldIn: "0193a6c1-7b2e-7c00-8000-000000000009", Held: []events.Held{{Name: "ca", Module: "route-proxy", Reason: "found"}}}}, "", "  ")
	if err != nil {
		f.Fatal(err)
	}
	good := seal(append(b, '\n'))
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add([]byte(`{"version":1,"made":["/srv/b","/srv/a"]}`))
	f.Add([]byte(`{"version":2,"made":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := decodeState(b)
		if err != nil {
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("decode error %v does not wrap ErrDamaged", err)
			}
			return
		}
		m := &memFiles{m: map[string][]byte{statePrefix: bytes.Clone(b)}}
		o, err := openOutbox(m, "memory", nil)
		if err != nil {
			t.Fatal(err)
		}
		back, err := o.LoadState()
		if err != nil || !reflect.DeepEqual(normalState(t, back), normalState(t, st)) || o.PassedOver() != 0 {
			t.Fatalf("read %+v, loaded %+v (%v)", st, back, err)
		}
		if _, err := m.get(statePrefix); err == nil {
			t.Fatal("state.json left beside the log")
		}
	})
}

func normalState(t *testing.T, s State) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// FuzzDecodeRecord: whatever a line of the log holds, decodeRecord never
// panics and refuses with ErrDamaged what is not a record; what it accepts
// re-encodes to a line that decodes to the same.
func FuzzDecodeRecord(f *testing.F) {
	rep := Report{Outcome: events.ApplyReported{Node: "novox", Declaration: "novox/3", Sent: 4, Applied: 3,
		Held:    []events.Held{{Name: "ca", Module: "route-proxy", Reason: "found"}},
		ApplyID: "01927c1e-7a4b-7c3d-8e5f-0123456789ab"}, AppliedAt: time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC), Attempts: 2, LastError: "nats: connection closed"}
	for _, r := range []record{
		{Op: opLog, Next: 4},
		{Op: opPut, Seq: 3, Report: &rep, State: &logState{Made: []string{"/srv/a"}, Last: Last{Declaration: "novox/3"}}},
		{Op: opState, State: &logState{Made: []string{}}},
		{Op: opAck, Seq: 3},
		{Op: opFail, Seq: 3, Attempts: 1, LastError: "down"},
	} {
		b, err := encodeRecord(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:len(b)-1])
		f.Add(b[:len(b)-5])
	}
	f.Add([]byte(`{"version":3,"op":"ack"} crc32c 00000000`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := decodeRecord(line)
		if err != nil {
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("decode error %v does not wrap ErrDamaged", err)
			}
			return
		}
		b, err := encodeRecord(r)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		r2, err := decodeRecord(b[:len(b)-1])
		if err != nil {
			t.Fatalf("re-decode of %s: %v", b, err)
		}
		j1, _ := json.Marshal(r)
		j2, _ := json.Marshal(r2)
		if !bytes.Equal(j1, j2) {
			t.Fatalf("round trip changed the record:\n%s\n%s", j1, j2)
		}
	})
}

// FuzzOpenLog: whatever bytes outbox.log holds, the outbox opens; every
// damaged record is passed over and the log copied aside whole; what it
// keeps are sound reports in strictly increasing seq; and the log it
// rewrote reopens to the same reports and state with nothing to pass over.
func FuzzOpenLog(f *testing.F) {
	o := NewMemOutbox()
	rep := Report{Outcome: events.ApplyReported{Node: "novox", Declaration: "novox/1", ApplyID: "01927c1e-7a4b-7c3d-8e5f-0123456789ab"}}
	if err := o.Keep(rep, State{Made: []string{"/srv/a"}}); err != nil {
		f.Fatal(err)
	}
	rep.Outcome.ApplyID, rep.Outcome.Declaration = "01927c1e-7a4b-7c3d-8e5f-0123456789ac", "novox/2"
	if err := o.Keep(rep, State{Made: []string{"/srv/a", "/srv/b"}}); err != nil {
		f.Fatal(err)
	}
	if _, err := o.Flush(context.Background(), func(context.Context, Report) error { return errors.New("down") }); err == nil {
		f.Fatal("a failing delivery succeeded")
	}
	good, err := o.files.get(logName)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m := &memFiles{m: map[string][]byte{logName: bytes.Clone(b)}}
		o, err := openOutbox(m, "memory", []OutboxOption{OutboxLogger(slog.New(slog.DiscardHandler))})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		v := readLog(b)
		if o.PassedOver() != len(v.damage) {
			t.Fatalf("%d passed over, %d damaged", o.PassedOver(), len(v.damage))
		}
		if aside, err := m.get(logName + damagedSuffix); (len(v.damage) > 0) != (err == nil) || (err == nil && !bytes.Equal(aside, b)) {
			t.Fatalf("damaged %d, copy aside: %v", len(v.damage), err)
		}
		p, _ := o.Pending()
		var last uint64
		for i, r := range p {
			if checkReport(r) != nil || o.pending[i].Seq <= last || o.pending[i].Seq >= o.next {
				t.Fatalf("kept %+v at seq %d (next %d)", r, o.pending[i].Seq, o.next)
			}
			last = o.pending[i].Seq
		}
		st, _ := o.LoadState()
		again, err := o.Reopen()
		if err != nil || again.PassedOver() != 0 {
			t.Fatalf("reopen: %v, %d passed over", err, again.PassedOver())
		}
		p2, _ := again.Pending()
		st2, _ := again.LoadState()
		if !reflect.DeepEqual(normalReports(t, p), normalReports(t, p2)) || normalState(t, st) != normalState(t, st2) {
			t.Fatalf("reopened to other reports or state")
		}
	})
}

func normalReports(t *testing.T, rs []Report) string {
	b, err := json.Marshal(rs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
