package events

// AppendRecordPlain appends e in the old record format 1 (no checksum), for
// tests that stores written before the checksum still read.
func AppendRecordPlain(b []byte, e Event) []byte { return appendBody(b, RecordFormatPlain, e) }
