package events

// AppendRecord1 writes the older record format 1, for tests that read
// records stored before format 3.
var AppendRecord1 = appendRecord1

// RecordTypes is the persisted table of type codes of format 3.
var RecordTypes = recordTypes[:]
