package events

import (
	"encoding/json"
	"reflect"
	"slices"
	"sync"
)

// A node's declarations repeat: most passes compose the same resources and
// the same roster as the pass before. The registry decodes a composed
// declaration's two lists through a bounded cache keyed by their bytes, so
// a list it has decoded before costs a map lookup instead of a decode with a
// string allocated per field. Decoded lists are shared between payloads,
// which is why payloads are never modified in place (see Registry.Decode);
// they are handed out clipped, so appending to one is safe.

// composedWire is DeclarationComposed with its two repeating lists left as
// bytes.
type composedWire struct {
	Node        string                     `json:"node"`
	Declaration string                     `json:"declaration"`
	Digest      string                     `json:"digest"`
	Roster      json.RawMessage            `json:"roster"`
	Resources   json.RawMessage            `json:"resources"`
	Warnings    []string                   `json:"warnings,omitempty"`
	Skipped     []Skipped                  `json:"skipped,omitempty"`
	Specs       map[string]json.RawMessage `json:"specs,omitempty"`
}

var composedType = reflect.TypeOf(DeclarationComposed{})

// internLimit bounds each cache; a full cache is emptied and fills again.
const internLimit = 4096

type internCache struct {
	mu     sync.Mutex
	roster map[string][]string
	refs   map[string][]ResourceRef
}

func newInternCache() *internCache {
	return &internCache{roster: map[string][]string{}, refs: map[string][]ResourceRef{}}
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
	return DeclarationComposed{
		Node: w.Node, Declaration: w.Declaration, Digest: w.Digest, Roster: roster, Resources: refs,
		Warnings: w.Warnings, Skipped: w.Skipped, Specs: w.Specs,
	}, nil
}

// interned decodes raw into a []T through m (guarded by c.mu). Absent and
// null lists are nil, as a direct decode makes them.
//
// The slice it returns is shared with every other decode of the same bytes,
// so it is clipped (capacity equal to length): an append by one caller then
// copies to a new array instead of writing into the spare capacity that
// every other caller's slice shares.
func interned[T any](c *internCache, m map[string][]T, raw json.RawMessage) ([]T, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	c.mu.Lock()
	v, ok := m[string(raw)]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	if err := unmarshal(raw, &v); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(m) >= internLimit {
		clear(m)
	}
	v = slices.Clip(v)
	m[string(raw)] = v
	c.mu.Unlock()
	return v, nil
}
