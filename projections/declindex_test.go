package projections

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// declIndex answers as a plain map from id to the latest value would,
// whatever the order of adds, gets and peeks.
func TestDeclIndexActsAsAMap(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed))
		var x declIndex[int]
		want := map[string]int{}
		ids := 1 + rng.IntN(40)
		for step := 0; step < 300; step++ {
			id := fmt.Sprintf("novox/%d", rng.IntN(ids))
			switch rng.IntN(3) {
			case 0:
				x.add(id, step)
				want[id] = step
			case 1:
				got, ok := x.get(id)
				if w, wok := want[id]; ok != wok || got != w {
					t.Fatalf("seed %d step %d: get(%s) = %d, %v; want %d, %v", seed, step, id, got, ok, w, wok)
				}
			case 2:
				got, ok := x.peek(id)
				if w, wok := want[id]; ok != wok || got != w {
					t.Fatalf("seed %d step %d: peek(%s) = %d, %v; want %d, %v", seed, step, id, got, ok, w, wok)
				}
			}
		}
	}
}
