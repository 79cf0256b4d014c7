package pgstore

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"meshplane/events"
)

// encodeRow is the wire form of a row of columns, as the server sends it in
// binary format: what decodeRow reads.
func encodeRow(e events.Event) [][]byte {
	u64 := func(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
	return [][]byte{
		u64(e.Position), e.ID[:], []byte(e.Stream), u64(e.Version), []byte(e.Type),
		binary.BigEndian.AppendUint32(nil, uint32(int32(e.Schema))), u64(uint64(e.At.UnixNano())),
		[]byte(e.Actor), []byte(e.Causation), []byte(e.Correlation), e.Data, chainValue(e),
	}
}

// FuzzDecodeRow: decodeRow never panics on any columns; what it accepts has
// fixed-size columns of the right sizes; and an encoded event decodes to
// itself.
func FuzzDecodeRow(f *testing.F) {
	f.Add([]byte("node-novox"), []byte("apply.reported"), []byte(`{"node":"novox"}`), uint64(7), int64(1796030250123456789), 3, byte(0))
	f.Add([]byte(""), []byte(""), []byte(""), uint64(0), int64(-1), -1, byte(11))
	f.Fuzz(func(t *testing.T, stream, typ, data []byte, pos uint64, at int64, schema int, cut byte) {
		e := events.Event{
			ID: events.NewID(), Stream: string(stream), Type: string(typ), Position: pos, Version: pos / 2,
			Schema: int(int32(schema)), At: time.Unix(0, at).UTC(), Actor: "agent:novox", Data: data,
		}
		if cut%2 == 0 {
			e.Chain = events.ChainOf(events.Hash{}, e) // else NULL: a row older than the chain
		}
		raw := encodeRow(e)
		// Decoded alone, and through a names that has met the row before
		// (its strings are then the ones handed out the first time).
		shared := newNames()
		for _, n := range []*names{nil, shared, shared} {
			got, err := decodeRow(raw, n)
			if err != nil {
				t.Fatalf("decodeRow of an encoded event: %v", err)
			}
			got.Data = raw[10]
			if !got.SameContent(e) || got.Position != e.Position || got.Version != e.Version || !bytes.Equal(got.Data, e.Data) || got.Chain != e.Chain {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, e)
			}
		}
		// Damage one column (or drop the last) and decode again: no panic,
		// and the fixed-size columns of whatever is accepted are whole.
		i := int(cut) % 13
		if i == 12 {
			raw = raw[:11]
		} else {
			raw[i] = append(raw[i], cut)
		}
		if d, err := decodeRow(raw, nil); err == nil {
			for _, col := range []int{0, 1, 3, 5, 6} {
				if len(raw) != 12 || len(raw[11]) != 0 && len(raw[11]) != 32 || len(raw[col]) != map[int]int{0: 8, 1: 16, 3: 8, 5: 4, 6: 8}[col] {
					t.Fatalf("decodeRow accepted a damaged row (column %d): %+v", i, d)
				}
			}
		}
	})
}
