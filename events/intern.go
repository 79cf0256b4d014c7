package events

import (
	"encoding/json"
	"reflect"
	"slices"
	"sync"
)

// A node's declarations repeat: most passes compose the same resources,
// roster and specs as the pass before. The registry decodes a composed
// declaration's two lists and its specs through a bounded cache keyed by
// their bytes, so a part it has decoded before costs a map lookup instead
// of a decode with a string allocated per field (the specs, a dozen
// values and keys a declaration, were most of a composed payload's
// allocations). Decoded parts are shared between payloads, which is why
// payloads are never modified in place (see Registry.Decode); lists are
// handed out clipped, so appending to one is safe.

// composedWire is DeclarationComposed with its repeating parts (lists and
// specs) left as bytes.
type composedWire struct {
	Node        string          `json:"node"`
	Declaration string          `json:"declaration"`
	Digest      string          `json:"digest"`
	Roster      json.RawMessage `json:"roster"`
	Resources   json.RawMessage `json:"resources"`
	Warnings    []string        `json:"warnings,omitempty"`
	Skipped     []Skipped       `json:"skipped,omitempty"`
	Specs       specsWire       `json:"specs,omitempty"`
}

// specsWire is each value a payload gives its specs, as bytes: nearly
// always one. encoding/json merges a second object for the same field
// into the map of the first, which a plain json.RawMessage (the last one
// wins) would not.
type specsWire []json.RawMessage

func (w *specsWire) UnmarshalJSON(b []byte) error {
	*w = append(*w, b) // b is the decoder's copy, ours to keep
	return nil
}

var composedType = reflect.TypeOf(DeclarationComposed{})

// internLimit bounds each cache; a full cache is emptied and fills again.
const internLimit = 4096

type internCache struct {
	mu     sync.Mutex
	roster map[string][]string
	refs   map[string][]ResourceRef
	specs  map[string]map[string]json.RawMessage
}

func newInternCache() *internCache {
	return &internCache{
		roster: map[string][]string{}, refs: map[string][]ResourceRef{},
		specs: map[string]map[string]json.RawMessage{},
	}
}

// decodeComposed decodes a declaration.composed payload as unmarshal would,
// its roster and resources through the cache.
func (c *internCache) decodeComposed(data []byte) (DeclarationComposed, error) {
	var w composedWire
	if err := unmarshal(data, &w); err != nil {
		return DeclarationComposed{}, err
	}
	roster, err := interned(c, c.roster, w.Roster)
	if err != nil {
		return DeclarationComposed{}, err
	}
	refs, err := interned(c, c.refs, w.Resources)
	if err != nil {
		return DeclarationComposed{}, err
	}
	var specs map[string]json.RawMessage
	if len(w.Specs) == 1 {
		specs, err = internedValue(c, c.specs, w.Specs[0], nil)
	} else {
		for _, raw := range w.Specs { // as encoding/json merges them
			if err = json.Unmarshal(raw, &specs); err != nil {
				break
			}
		}
	}
	if err != nil {
		return DeclarationComposed{}, err
	}
	return DeclarationComposed{
		Node: w.Node, Declaration: w.Declaration, Digest: w.Digest, Roster: roster, Resources: refs,
		Warnings: w.Warnings, Skipped: w.Skipped, Specs: specs,
	}, nil
}

// internedValue decodes raw into a V through m (guarded by c.mu), and
// keeps what keep (when not nil) makes of a new value. Absent and null
// decode to V's zero value. The value is shared with every other decode of
// the same bytes: a map is read, never written.
func internedValue[V any](c *internCache, m map[string]V, raw json.RawMessage, keep func(V) V) (V, error) {
	var v V
	if len(raw) == 0 {
		return v, nil
	}
	c.mu.Lock()
	v, ok := m[string(raw)]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	if err := unmarshal(raw, &v); err != nil {
		return v, err
	}
	if keep != nil {
		v = keep(v)
	}
	c.mu.Lock()
	if len(m) >= internLimit {
		clear(m)
	}
	m[string(raw)] = v
	c.mu.Unlock()
	return v, nil
}

// interned decodes raw into a []T through m, as internedValue does. Absent
// and null lists are nil, as a direct decode makes them.
//
// The slice it returns is shared with every other decode of the same bytes,
// so it is clipped (capacity equal to length): an append by one caller then
// copies to a new array instead of writing into the spare capacity that
// every other caller's slice shares.
func interned[T any](c *internCache, m map[string][]T, raw json.RawMessage) ([]T, error) {
	return internedValue(c, m, raw, slices.Clip[[]T])
}
