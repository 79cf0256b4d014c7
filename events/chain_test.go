package events_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/events"
)

// chained returns n events at positions 1..n with their chain values.
func chained(n int) []events.Event {
	out := make([]events.Event, n)
	var prev events.Hash
	for i := range out {
		e := events.Event{
			ID: uuid.MustParse("01920000-0000-7000-8000-00000000000" + string(rune('0'+i))), Stream: "node-novox",
			Version: uint64(i + 1), Position: uint64(i + 1), Type: events.TypeNodeRegistered, Schema: 1,
			At: time.Date(2026, 9, 29, 22, 46, i, 5, time.UTC), Actor: "controller", Data: json.RawMessage(`{"node":"novox"}`),
		}
		e.Chain = events.ChainOf(prev, e)
		prev = e.Chain
		out[i] = e
	}
	return out
}

// TestChainPinned: the chain is a persisted format; these values are what
// every store has written, and must stay so.
func TestChainPinned(t *testing.T) {
	evs := chained(2)
	rec := events.AppendRecord(nil, evs[0])
	if got, want := events.ChainRecord(events.Hash{}, rec), evs[0].Chain; got != want {
		t.Errorf("ChainRecord of the record %s, ChainOf %s", got, want)
	}
	for i, pinned := range []string{
		"sha256:668bcfb96256524fe3b92f9036ba7bfc0e952b19e95148a0f6af5671f2380356",
		"sha256:945b438a067e9959aac72e426fec728b41734e7fa06d812bfe2c1e97b598a79a",
	} {
		if got := evs[i].Chain.String(); got != pinned {
			t.Errorf("chain value of position %d: %s, pinned %s", i+1, got, pinned)
		}
		if h, err := events.ParseHash(pinned); err != nil || h != evs[i].Chain {
			t.Errorf("ParseHash(%s): %s, %v", pinned, h, err)
		}
	}
}

func TestChainHeadLine(t *testing.T) {
	evs := chained(3)
	h := events.ChainHead{Position: 3, Chain: evs[2].Chain, At: evs[2].At}
	line := h.String()
	if !strings.HasPrefix(line, "meshplane-head position=3 chain=sha256:") || !strings.HasSuffix(line, " at=2026-09-29T22:46:02.000000005Z") {
		t.Errorf("line %q", line)
	}
	got, err := events.ParseChainHead("  " + line + "\n")
	if err != nil || got.Position != h.Position || got.Chain != h.Chain || !got.At.Equal(h.At) {
		t.Errorf("ParseChainHead(%q) = %s, %v", line, got, err)
	}
	empty := events.ChainHead{}.String()
	if got, err := events.ParseChainHead(empty); err != nil || got != (events.ChainHead{}) {
		t.Errorf("ParseChainHead(%q) = %s, %v", empty, got, err)
	}
	for _, bad := range []string{
		"", "meshplane-head", strings.Replace(line, "position=3", "position=-1", 1),
		strings.Replace(line, "chain=sha256:", "chain=md5:", 1), strings.Replace(line, "at=", "time=", 1),
		strings.Replace(line, "chain=sha256:", "chain=sha256:A", 1), line + " extra",
		strings.ToUpper(line[:20]) + line[20:], strings.Replace(line, "2026-09-29T", "2026-09-29 ", 1),
	} {
		if _, err := events.ParseChainHead(bad); !errors.Is(err, events.ErrInvalid) {
			t.Errorf("ParseChainHead(%q): %v, want ErrInvalid", bad, err)
		}
	}
}

func TestChainVerifier(t *testing.T) {
	evs := chained(6)
	head := events.ChainHead{Position: 6, Chain: evs[5].Chain, At: evs[5].At}
	run := func(evs []events.Event, anchor *events.ChainHead) events.ChainReport {
		v := events.NewChainVerifier(anchor)
		for _, e := range evs {
			v.Add(e)
		}
		return v.Report()
	}
	if r := run(evs, &head); r.Err() != nil || !r.AnchorChecked || r.Start != 1 || r.Checked != 6 || r.Head.Chain != head.Chain {
		t.Fatalf("intact: %+v", r)
	}
	// The chain starts where it starts: unchained records before it.
	old := append([]events.Event(nil), evs...)
	old[0].Chain, old[1].Chain = events.Hash{}, events.Hash{}
	var prev events.Hash
	for i := 2; i < len(old); i++ {
		old[i].Chain = events.ChainOf(prev, old[i])
		prev = old[i].Chain
	}
	if r := run(old, nil); r.Err() != nil || r.Start != 3 {
		t.Errorf("chain starting at 3: %+v", r)
	}
	cases := []struct {
		name   string
		evs    func() []events.Event
		anchor *events.ChainHead
		pos    uint64
	}{
		{"changed", func() []events.Event {
			c := append([]events.Event(nil), evs...)
			c[3].Data = json.RawMessage(`{"node":"g14"}`)
			return c
		}, &head, 4},
		{"removed", func() []events.Event {
			c := append(append([]events.Event(nil), evs[:2]...), evs[3:]...)
			for i := 2; i < len(c); i++ {
				c[i].Position--
			}
			return c
		}, &head, 3},
		{"gap", func() []events.Event { return append(append([]events.Event(nil), evs[:2]...), evs[3:]...) }, nil, 3},
		{"reordered", func() []events.Event {
			c := append([]events.Event(nil), evs...)
			c[1], c[2] = c[2], c[1]
			c[1].Position, c[2].Position = 2, 3
			return c
		}, &head, 2},
		{"truncated", func() []events.Event { return evs[:4] }, &head, 5},
		{"no value after the start", func() []events.Event {
			c := append([]events.Event(nil), evs...)
			c[4].Chain = events.Hash{}
			return c
		}, nil, 5},
		{"other anchor", func() []events.Event { return evs }, &events.ChainHead{Position: 4, Chain: evs[2].Chain}, 4},
	}
	for _, tc := range cases {
		r := run(tc.evs(), tc.anchor)
		if r.Break == nil || r.Break.Position != tc.pos || !errors.Is(r.Err(), events.ErrChainBroken) {
			t.Errorf("%s: %+v, want a break at %d", tc.name, r, tc.pos)
		}
	}
}

func TestJSONLineChain(t *testing.T) {
	e := chained(1)[0]
	line, err := events.MarshalJSONLine(e)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(line), `,"chain":"`+e.Chain.String()+`"}`) {
		t.Errorf("line %s", line)
	}
	got, err := events.UnmarshalJSONLine(line)
	if err != nil || got.Chain != e.Chain || !got.SameContent(e) {
		t.Errorf("UnmarshalJSONLine: %+v, %v", got, err)
	}
	e.Chain = events.Hash{}
	line, _ = events.MarshalJSONLine(e)
	if strings.Contains(string(line), "chain") {
		t.Errorf("an unchained event's line carries a chain: %s", line)
	}
	if b, _ := json.Marshal(chained(1)[0]); strings.Contains(string(b), "chain") {
		t.Errorf("the envelope's JSON carries the chain: %s", b)
	}
}
