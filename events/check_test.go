package events

import (
	"errors"
	"strings"
	"testing"
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
		{"compact", func(r *ApplyReported) { r.Held, r.HeldSince = nil, "0190" }, ""},
		{"unchanged below zero", func(r *ApplyReported) { r.Unchanged = -1; r.Applied = 2 }, "unchanged"},
		{"sent below zero", func(r *ApplyReported) { r.Sent = -1 }, "sent"},
		{"applied below zero", func(r *ApplyReported) { r.Applied = -1 }, "applied"},
		{"applied disagrees with the lists", func(r *ApplyReported) { r.Applied = 7 }, "applied"},
		{"more applied and held than sent", func(r *ApplyReported) { r.Sent = 4 }, "applied"},
		{"held and held_since", func(r *ApplyReported) { r.HeldSince = "0190" }, "held_since"},
	} {
		r := good
		tc.edit(&r)
		err := r.Check()
		var ie *InvalidError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.field != "" && (!errors.As(err, &ie) || ie.Field != tc.field):
			t.Errorf("%s: %v, want a refusal of %s", tc.name, err, tc.field)
		}
	}
}
