package events

// AppendRecordPlain appends e in the old record format 1 (no checksum), for
// tests that stores written before the checksum still read.
var AppendRecordPlain = appendRecord1

// RecordTypes is the persisted table of type codes of format 3.
var RecordTypes = recordTypes[:]
