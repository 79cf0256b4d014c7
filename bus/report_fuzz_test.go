package bus_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	"meshplane/bus"
	"meshplane/internal/jsontest"
)

// FuzzDecodeReport holds that whatever arrives on a report subject either
// decodes into a report of the subject's node that encodes again, or is
// refused with ErrBadReport; it never panics. What gives a key twice, at
// any depth (internal/jsontest, an oracle sharing no code with the
// door's strict decoding), is refused, and so is what is not UTF-8.
func FuzzDecodeReport(f *testing.F) {
	good, err := bus.EncodeReport(report("n1", "n1/1"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add("mesh.report.n1", good)
	f.Add("mesh.report.n2", good)
	f.Add("mesh.report.n1", []byte(`{"version":1,"node":"n1","apply_id":"00000000-0000-0000-0000-000000000000"}`))
	f.Add("mesh.report.n1", []byte(`{"version":1,"node":"n1","apply_id":"01a22bc2-e0ac-7db6-b30e-93a609b41e53","applied_at":"2026-11-30T09:00:00Z","outcome":{"node":"n1","held":[{}]}}`))
	f.Add("mesh.report.n1", []byte(`{"version":1,"node":"n2","node":"n1","apply_id":"01a22bc2-e0ac-7db6-b30e-93a609b41e53","applied_at":"2026-11-30T09:00:00Z","outcome":{"node":"n1"}}`))
	f.Add("mesh.report.n1", []byte(`{"version":1,"node":"n1","apply_id":"01a22bc2-e0ac-7db6-b30e-93a609b41e53","applied_at":"2026-11-30T09:00:00Z","outcome":{"node":"n1","sent":1,"sent":0}}`))
	f.Add("mesh.report.n1", []byte(`{"version":1,"Node":"n2","node":"n1","apply_id":"01a22bc2-e0ac-7db6-b30e-93a609b41e53","applied_at":"2026-11-30T09:00:00Z","outcome":{"node":"n1"}}`))
	f.Add("mesh.report.n1", []byte(`{"version":1,"node":"n1","apply_id":"01a22bc2-e0ac-7db6-b30e-93a609b41e53","applied_at":"2026-11-30T09:00:00Z","outcome":{"node":"n1","held":[{"name":"a","na\u006de":"b"}]}}`))
	f.Add("mesh.report.n1", []byte(`{"version":1,"node":"n1","apply_id":"01a22bc2-e0ac-7db6-b30e-93a609b41e53","applied_at":"2026-11-30T09:00:00Z","outcome":{"node":"n1"},"workload":{"changes":[{"node":"n1","module":"m","container":"web","declaration":"n1/1","state":"crash-looping","at":"2026-11-30T09:00:00Z","exit_code":1,"restarts":3,"since":"2026-11-30T08:59:00Z","log":"cat: x\n"}]}}`))
	f.Add("mesh.report.n1", []byte(`{"version":1,"node":"n1","apply_id":"01a22bc2-e0ac-7db6-b30e-93a609b41e53","applied_at":"2026-11-30T09:00:00Z","outcome":{"node":"n1"},"workload":{"changes":[{"node":"n1","container":"web","state":"exited","at":"2026-11-30T09:00:00Z","exit_code":-1,"log":"\u001b[2J"}]}}`))
	f.Add("other", []byte(`{}`))
	f.Add("mesh.report.", []byte(`null`))
	f.Fuzz(func(t *testing.T, subject string, data []byte) {
		r, err := bus.DecodeReport(subject, data)
		if err == nil && json.Valid(data) {
			if dup, derr := jsontest.HasDuplicateKey(data); derr == nil && dup {
				t.Fatalf("decoded a report that gives a key twice: %s", data)
			}
		}
		if err == nil && !utf8.Valid(data) {
			t.Fatalf("decoded a report that is not UTF-8: %q", data)
		}
		if err != nil {
			if !errors.Is(err, bus.ErrBadReport) {
				t.Fatalf("error not ErrBadReport: %v", err)
			}
			return
		}
		if subject != bus.ReportSubject(r.Node) || r.Outcome.Node != r.Node {
			t.Fatalf("decoded node %q (outcome %q) from subject %q", r.Node, r.Outcome.Node, subject)
		}
		b, err := bus.EncodeReport(r)
		if err != nil {
			t.Fatalf("a decoded report does not encode: %v", err)
		}
		r2, err := bus.DecodeReport(subject, b)
		if err != nil {
			t.Fatalf("a re-encoded report does not decode: %v", err)
		}
		b2, _ := bus.EncodeReport(r2)
		if !bytes.Equal(b, b2) {
			t.Fatalf("encode is not stable:\n%s\n%s", b, b2)
		}
	})
}
