package events_test

import (
	"hash/crc32"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/storetest"
)

// BenchmarkRecord measures what the checksum costs a record: encoding and
// decoding the storetest benchmark's apply.reported event in format 1 (no
// checksum) and format 3 (compact names and a CRC-32C, Castagnoli, checked on
// decode).
func BenchmarkRecord(b *testing.B) {
	e := events.Event{
		ID: events.NewID(), Stream: "node-novox", Type: events.TypeApplyReported, Schema: 1,
		Version: 1234, Position: 98765, At: time.Date(2026, 9, 29, 22, 46, 0, 123456789, time.UTC),
		Actor: "agent:novox", Correlation: "push-42", Data: storetest.BenchPayload,
	}
	b.Run("crc32c-only", func(b *testing.B) {
		rec := events.AppendRecord(nil, e)
		table := crc32.MakeTable(crc32.Castagnoli)
		b.SetBytes(int64(len(rec)))
		var sum uint32
		for range b.N {
			sum += crc32.Checksum(rec, table)
		}
		_ = sum
	})
	for _, f := range []struct {
		name   string
		append func([]byte, events.Event) []byte
	}{
		{"plain", events.AppendRecordPlain},
		{"checked", events.AppendRecord},
	} {
		rec := f.append(nil, e)
		b.Run("encode/"+f.name, func(b *testing.B) {
			b.SetBytes(int64(len(rec)))
			b.ReportAllocs()
			buf := make([]byte, 0, 2*len(rec))
			for range b.N {
				buf = f.append(buf[:0], e)
			}
		})
		b.Run("decode/"+f.name, func(b *testing.B) {
			b.SetBytes(int64(len(rec)))
			b.ReportAllocs()
			for range b.N {
				if _, err := events.DecodeRecord(rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
