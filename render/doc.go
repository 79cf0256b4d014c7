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
// The package does no I/O beyond the writer it is given; it imports api,
// events and commands (what a write verb's command says when it had
// nothing to do), never cobra nor the CLI's packages.
package render
