package events

import (
	"errors"
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"novox", true},
		{"g14", true},
		{"route-proxy", true},
		{"0", true},
		{strings.Repeat("a", 63), true},
		{"", false},
		{strings.Repeat("a", 64), false},
		{"x..y", false},
		{"a.b", false},
		{"a_b", false},
		{"Novox", false},
		{"-a", false},
		{"a-", false},
		{"Bad Name/../x", false},
		{"a\x00b", false},
		{"é", false},
	} {
		err := CheckName("node", tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("CheckName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrBadName) {
			t.Errorf("CheckName(%q) = %v, not ErrBadName", tc.name, err)
		}
	}
}

func TestApplyReportedCheck(t *testing.T) {
	good := ApplyReported{Node: "n1", Declaration: "n1/1", Sent: 5, Applied: 4, Unchanged: 1,
		Created: []string{"a"}, Replaced: []Replaced{{Name: "b"}}, Updated: []Replaced{{Name: "c"}},
		Held: []Held{{Name: "d", Module: "m"}}, Removed: []string{"old"}}
	for _, tc := range []struct {
		name  string
		edit  func(*ApplyReported)
		field string // "" when it checks
	}{
		{"as the agent builds it", func(*ApplyReported) {}, ""},
		{"written by hand, sent not said", func(r *ApplyReported) { r.Sent = 0 }, ""},
		{"compact", func(r *ApplyReported) { r.Held, r.HeldSince = nil, "0190a9c2-52c7-7b62-9e35-3a1f5d6e7f80" }, ""},
		{"held_since no apply id", func(r *ApplyReported) { r.Held, r.HeldSince = nil, "not-a-uuid" }, "held_since"},
		{"counts of the largest int", func(r *ApplyReported) {
			r.Sent, r.Applied, r.Unchanged = math.MaxInt64, math.MaxInt64, math.MaxInt64-3
		}, "sent"},
		{"unchanged over the bound, sent not said", func(r *ApplyReported) {
			r.Sent, r.Applied, r.Unchanged = 0, MaxReportCount+4, MaxReportCount+1
		}, "applied"},
		{"more failed than sent", func(r *ApplyReported) {
			r.Failed = []Failed{{Name: "x", Error: "e"}, {Name: "y", Error: "e"}}
		}, "failed"},
		{"a name of 1 MiB", func(r *ApplyReported) { r.Created = []string{strings.Repeat("x", 1<<20)} }, "created[0]"},
		{"an empty name", func(r *ApplyReported) { r.Removed = []string{""} }, "removed[0]"},
		{"a field name too long", func(r *ApplyReported) {
			r.Replaced = []Replaced{{Name: "b", Fields: []string{strings.Repeat("f", MaxReportName+1)}}}
		}, "replaced[0].fields[0]"},
		{"a message of 5 KiB", func(r *ApplyReported) {
			r.Sent = 6
			r.Failed = []Failed{{Name: "e", Error: strings.Repeat("m", 5<<10)}}
		}, "failed[0].error"},
		{"a message at its bound", func(r *ApplyReported) {
			r.Sent = 6
			r.Failed = []Failed{{Name: "e", Error: strings.Repeat("m", MaxReportMessage)}}
		}, ""},
		{"a hold's reason too long", func(r *ApplyReported) {
			r.Held = []Held{{Name: "d", Module: "m", Reason: strings.Repeat("r", MaxReportMessage+1)}}
		}, "held[0].reason"},
		{"a NUL in a name", func(r *ApplyReported) { r.Created = []string{"a\x00b"} }, "created[0]"},
		{"not UTF-8", func(r *ApplyReported) { r.Declaration = "n1/\xff" }, "declaration"},
		{"unchanged below zero", func(r *ApplyReported) { r.Unchanged = -1; r.Applied = 2 }, "unchanged"},
		{"sent below zero", func(r *ApplyReported) { r.Sent = -1 }, "sent"},
		{"applied below zero", func(r *ApplyReported) { r.Applied = -1 }, "applied"},
		{"applied disagrees with the lists", func(r *ApplyReported) { r.Applied = 7 }, "applied"},
		{"more applied and held than sent", func(r *ApplyReported) { r.Sent = 4 }, "applied"},
		{"held and held_since", func(r *ApplyReported) { r.HeldSince = "0190a9c2-52c7-7b62-9e35-3a1f5d6e7f80" }, "held_since"},
	} {
		r := good
		tc.edit(&r)
		err := r.CheckForm()
		if err == nil {
			err = r.CheckCounts()
		}
		var ie *InvalidError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.field != "" && (!errors.As(err, &ie) || ie.Field != tc.field):
			t.Errorf("%s: %v, want a refusal of %s", tc.name, err, tc.field)
		case err != nil && strings.Contains(err.Error(), "bytes, over the limit of") && !errors.Is(err, ErrTooLong):
			t.Errorf("%s: %v, not ErrTooLong", tc.name, err)
		}
	}
}

// TestBoundText: what an agent sends of a long message is what the door
// takes (reportText's rules), cut on a rune boundary.
func TestBoundText(t *testing.T) {
	for _, s := range []string{"", "short", strings.Repeat("é", MaxReportMessage), "bad \xff\x00 bytes" + strings.Repeat("x", MaxReportMessage)} {
		b := BoundText(s, MaxReportMessage)
		if err := reportText("error", b, MaxReportMessage); err != nil {
			t.Errorf("BoundText(%d bytes) = %d bytes: %v", len(s), len(b), err)
		}
		if len(s) <= MaxReportMessage && utf8.ValidString(s) && !strings.Contains(s, "\x00") && b != s {
			t.Errorf("BoundText(%q) = %q, want it unchanged", s, b)
		}
	}
}
