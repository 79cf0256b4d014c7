// Package render is how the CLI shows the API's answers: tables and
// sentences for people, and JSON whose field names are the public API
// (the api package's own structs, pinned by api/testdata/fields.golden).
// Kept apart from the verbs, as kubectl keeps its printers: a verb of
// cmd/mesh parses its flags, makes one call of an api.Service and hands the
// answer to one function here (Status, NodeShow, Timeline, Why, Roster,
// RosterHistory, RosterDiff, Plan, Churn, Info, Push, CommandResult,
// Rebuild, ...), in the Format it was asked for.
//
// A read answered in part (events the projections could not fold, an
// api.Skipped) is printed as far as it goes and said: a note after the
// table (Skipped), or, where the note is not printed, in the error the
// printer returns; either way that error is ErrPartial, and the CLI exits
// 1.
//
// Every string a printer shows may have come from a node, a file or
// history, so none reaches a terminal raw (escape.go): in tables and
// sentences, newline, carriage return and tab are written \n, \r, \t, and
// every other C0 control, DEL, the C1 controls and the bidi controls
// (U+202A-U+202E, U+2066-U+2069) as \uXXXX (Escape); JSON escapes C0 as
// encoding/json does and DEL, C1 and bidi as \uXXXX too. The printers
// write only through pf and pln, which escape every string argument,
// so that no verb can forget; a test walks every printer with hostile
// strings. Text (newlines kept) is for the CLI's error messages, and
// SafeWriter for another package's report (store verify's).
//
// The package does no I/O beyond the writer it is given; it imports api,
// events and commands (what a write verb's command says when it had
// nothing to do), never cobra nor the CLI's packages.
package render
