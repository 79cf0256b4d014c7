package sim_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"meshplane/sim"
)

func TestParseFaults(t *testing.T) {
	tests := []struct {
		spec string
		want []sim.Fault
		err  string // a part of the error; "" for none
	}{
		{spec: "", want: nil},
		{spec: " ; ", want: nil},
		{spec: "remove", want: []sim.Fault{{Kind: sim.FaultRemove, Rate: 0.01, From: 1, Every: 1}}},
		{spec: "remove:count=3,passes=5-20", want: []sim.Fault{{Kind: sim.FaultRemove, Count: 3, From: 5, To: 20, Every: 1}}},
		{spec: "reads:rate=5%,passes=10-,every=2", want: []sim.Fault{{Kind: sim.FaultReads, Rate: 0.05, From: 10, Every: 2}}},
		{spec: "lossy:rate=0.5,passes=7", want: []sim.Fault{{Kind: sim.FaultLossy, Rate: 0.5, From: 7, To: 7, Every: 1}}},
		{spec: "rollout:passes=30;cut:count=1", want: []sim.Fault{
			{Kind: sim.FaultRollout, From: 30, To: 30, Every: 1}, {Kind: sim.FaultCut, Count: 1, From: 1, Every: 1}}},
		{spec: "explode", err: `fault 1 "explode": unknown kind "explode"`},
		{spec: "remove;cut:rate", err: `fault 2 "cut:rate": "rate": want KEY=VALUE`},
		{spec: "remove:rate=0", err: "want more than 0 and at most 1"},
		{spec: "remove:rate=150%", err: "want more than 0 and at most 1"},
		{spec: "remove:rate=NaN", err: "want more than 0 and at most 1"},
		{spec: "remove:rate=x", err: `rate "x": not a number`},
		{spec: "remove:count=0", err: `count "0": want a whole number from 1`},
		{spec: "remove:rate=1%,count=2", err: "give rate or count, not both"},
		{spec: "remove:count=2,count=3", err: "count given twice"},
		{spec: "remove:passes=9-3", err: "the window ends before it starts"},
		{spec: "remove:passes=0-3", err: `"0" is not a pass`},
		{spec: "remove:passes=-", err: `"" is not a pass`},
		{spec: "remove:every=2", err: "only reads and lossy act every other pass"},
		{spec: "reads:every=3", err: `every "3": want 1 or 2`},
		{spec: "rollout:count=2", err: "takes no rate or count"},
		{spec: "remove:speed=2", err: `unknown key "speed"`},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			got, err := sim.ParseFaults(tc.spec)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, sim.ErrSpec) {
					t.Fatalf("ParseFaults(%q) = %v, %v; want an ErrSpec naming %q", tc.spec, got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseFaults(%q) = %+v, want %+v", tc.spec, got, tc.want)
			}
		})
	}
}

// TestDefaultFaultsParse checks the default SPEC reads back as itself.
func TestDefaultFaultsParse(t *testing.T) {
	for _, passes := range []int{1, 20, 100} {
		for _, f := range sim.DefaultFaults(passes) {
			got, err := sim.ParseFaults(f.String())
			if err != nil {
				t.Fatalf("%d passes: %s: %v", passes, f, err)
			}
			if len(got) != 1 || got[0].String() != f.String() {
				t.Errorf("%d passes: %s reads back as %+v", passes, f, got)
			}
		}
	}
}

// FuzzParseFaults checks that any SPEC either parses into faults that
// write back into a SPEC parsing to the same faults, or is refused with
// ErrSpec; never a panic.
func FuzzParseFaults(f *testing.F) {
	for _, s := range []string{"", "remove", "remove:count=3,passes=5-20", "reads:rate=5%,passes=10-,every=2",
		"rollout:passes=30;cut:count=1", "lossy:rate=0.5,passes=7", "join:rate=1e-3", "remove:passes=9-3", "x:=,=;;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		faults, err := sim.ParseFaults(spec)
		if err != nil {
			if !errors.Is(err, sim.ErrSpec) {
				t.Fatalf("ParseFaults(%q): %v is not ErrSpec", spec, err)
			}
			return
		}
		var parts []string
		for _, fl := range faults {
			if fl.From < 1 || (fl.To != 0 && fl.To < fl.From) || (fl.Rate < 0 || fl.Rate > 1) || fl.Count < 0 {
				t.Fatalf("ParseFaults(%q): %+v out of range", spec, fl)
			}
			parts = append(parts, fl.String())
		}
		again, err := sim.ParseFaults(strings.Join(parts, ";"))
		if err != nil {
			t.Fatalf("%q parsed, but its rewrite %q does not: %v", spec, strings.Join(parts, ";"), err)
		}
		if !reflect.DeepEqual(again, faults) {
			t.Fatalf("%q: %+v, rewritten and read back %+v", spec, faults, again)
		}
	})
}
