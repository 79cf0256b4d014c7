package projections

// declIndex finds a node's composed declarations by id, as a map from id to
// the latest declaration of that id would, more cheaply for the way a
// stream asks: nearly every push and apply names one of the last few
// declarations composed for its node. So it keeps the declarations in
// composed order, looks through the last declLookBack first, and only
// indexes older ones in a map when a lookup needs it.
//
// Invariant: byID maps each id among ids[:indexed] to the index of its last
// occurrence there.
type declIndex[V any] struct {
	ids     []string
	vals    []V
	byID    map[string]int
	indexed int
	// trimmed says older declarations were left out (a snapshot keeps only
	// the latest, see snapKeep); missed, that a lookup while trimmed found
	// nothing, so the state may differ from a rebuild's (Set.Incomplete).
	trimmed, missed bool
}

// declLookBack is how many of the latest declarations a lookup compares
// before it turns to the map.
const declLookBack = 8

func (x *declIndex[V]) add(id string, v V) {
	x.ids = append(x.ids, id)
	x.vals = append(x.vals, v)
}

// get returns the latest declaration of id, indexing older declarations if
// it must. It modifies x: call it while folding, under the write lock.
func (x *declIndex[V]) get(id string) (V, bool) {
	v, ok := x.lookup(id)
	if !ok && x.trimmed {
		x.missed = true
	}
	return v, ok
}

func (x *declIndex[V]) lookup(id string) (V, bool) {
	if v, ok, done := x.recent(id); done {
		return v, ok
	}
	if x.byID == nil {
		x.byID = map[string]int{}
	}
	for ; x.indexed < len(x.ids); x.indexed++ {
		x.byID[x.ids[x.indexed]] = x.indexed
	}
	if i, ok := x.byID[id]; ok {
		return x.vals[i], true
	}
	var zero V
	return zero, false
}

// peek is get without indexing, for queries under a read lock: what the
// map does not cover yet it searches.
func (x *declIndex[V]) peek(id string) (V, bool) {
	if v, ok, done := x.recent(id); done {
		return v, ok
	}
	for i := len(x.ids) - declLookBack - 1; i >= x.indexed; i-- {
		if x.ids[i] == id {
			return x.vals[i], true
		}
	}
	if i, ok := x.byID[id]; ok {
		return x.vals[i], true
	}
	var zero V
	return zero, false
}

// recent looks through the latest declarations. done is true when it found
// id, or when there is nothing older to look through.
func (x *declIndex[V]) recent(id string) (v V, ok, done bool) {
	n := len(x.ids)
	for i := n - 1; i >= 0 && i >= n-declLookBack; i-- {
		if x.ids[i] == id {
			return x.vals[i], true, true
		}
	}
	return v, false, n <= declLookBack
}
