package projections

import (
	"reflect"
	"testing"
)

// TestSwapStateCoversEveryField fails when a projection grows a field that
// swapState does not exchange: add it there, then here.
func TestSwapStateCoversEveryField(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want []string // every field: the lock, links, and those swapState exchanges
	}{
		{Churn{}, []string{"mu", "nodes", "assigned"}},
		{Roster{}, []string{"mu", "nodes"}},
		{Status{}, []string{"mu", "churn", "nodes", "reports"}},
		{Holds{}, []string{"mu", "nodes", "reports"}},
		{Timeline{}, []string{"mu", "chunks", "n", "runs", "byNode", "byType", "byModule", "byResource", "ordered",
			"flushed", "lastAt", "maxAt", "lag", "decls", "last", "hist", "heldAt", "churn", "reports", "composed", "applies", "heads", "prev", "behind"}},
	} {
		typ := reflect.TypeOf(tc.v)
		t.Run(typ.Name(), func(t *testing.T) {
			var got []string
			for i := range typ.NumField() {
				got = append(got, typ.Field(i).Name)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("fields %v, swapState knows %v: exchange the new ones in swapState", got, tc.want)
			}
			for _, w := range tc.want {
				if _, ok := typ.FieldByName(w); !ok {
					t.Errorf("no field %s: swapState is out of date", w)
				}
			}
		})
	}
}
