package events

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
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
//
// Most of a composed payload is its tail: from the roster on (roster,
// resources, specs), which the encoder writes after the node, the
// declaration and the digest, and which a node's next pass repeats byte for
// byte. The cache keeps whole tails too (see decodeSplit): a payload whose
// tail it has met costs a lookup and the decode of its first 150 bytes.

// composedWire is DeclarationComposed with its repeating parts (lists and
// specs) left as bytes.
type composedWire struct {
	Node        string    `json:"node"`
	Declaration string    `json:"declaration"`
	Digest      string    `json:"digest"`
	RosterRev   uint64    `json:"roster_revision"`
	Roster      rawList   `json:"roster"`
	Resources   rawList   `json:"resources"`
	Warnings    []string  `json:"warnings,omitempty"`
	Skipped     []Skipped `json:"skipped,omitempty"`
	Bindings    []Bound   `json:"bindings,omitempty"`
	Specs       rawList   `json:"specs,omitempty"`
	Since       string    `json:"resources_since,omitempty"`
	Unknown     string    `json:"resources_unknown,omitempty"`
}

// rawList is each value a payload gives one field, as bytes: nearly always
// one. A payload that gives a field twice is decoded as encoding/json
// decodes it (see part), which a plain json.RawMessage (the last one wins,
// unchecked) would not: it merges a second specs object into the first,
// and refuses a first roster of the wrong type.
type rawList []json.RawMessage

func (w *rawList) UnmarshalJSON(b []byte) error {
	*w = append(*w, b) // b is the decoder's copy, ours to keep
	return nil
}

// part decodes the values raws of one field: one through m (internedValue,
// keep), more one after the other into the same value, as encoding/json
// does. A list from m is shared with every other decode of the same bytes,
// so keep clips it (slices.Clip: capacity equal to length): an append by
// one caller then copies to a new array instead of writing into the spare
// capacity that every other caller's slice shares.
func part[V any](c *internCache, m map[string]V, raws rawList, keep func(V) V) (V, error) {
	var v V
	switch len(raws) {
	case 0:
		return v, nil
	case 1:
		return internedValue(c, m, raws[0], keep)
	}
	for _, raw := range raws {
		if err := json.Unmarshal(raw, &v); err != nil {
			return v, err
		}
	}
	return v, nil
}

var composedType = reflect.TypeOf(DeclarationComposed{})

// internLimit bounds each cache; a full cache is emptied and fills again.
const internLimit = 4096

type internCache struct {
	mu     sync.Mutex
	roster map[string][]string
	refs   map[string][]ResourceRef
	specs  map[string]map[string]json.RawMessage
	tails  map[string]DeclarationComposed // by a payload's tail, its parts from the roster on
	heads  sync.Pool                      // *[]byte: buffers for a payload's head
}

func newInternCache() *internCache {
	return &internCache{
		roster: map[string][]string{}, refs: map[string][]ResourceRef{},
		specs: map[string]map[string]json.RawMessage{}, tails: map[string]DeclarationComposed{},
		heads: sync.Pool{New: func() any { return new([]byte) }},
	}
}

// tailMark starts a composed payload's tail, as the encoder writes it;
// resourcesMark, that of one naming a roster revision, stored without its
// roster.
var (
	tailMark      = []byte(`,"roster":`)
	resourcesMark = []byte(`,"resources":`)
)

// decodeComposed decodes a declaration.composed payload as unmarshal would,
// through the cache.
func (c *internCache) decodeComposed(data []byte) (DeclarationComposed, error) {
	// The mark must follow a value: after "{", "," or a space the split
	// would make of a malformed object ("{,") two well-formed ones.
	for _, mark := range [][]byte{tailMark, resourcesMark} {
		if i := bytes.Index(data, mark); i > 0 && !strings.ContainsRune("{, \t\r\n", rune(data[i-1])) {
			if d, ok := c.decodeSplit(data, i); ok {
				return d, nil
			}
			break
		}
	}
	return c.decodeWhole(data)
}

// decodeSplit decodes data as its head (data[:i] closed with "}") and its
// tail (data[i:] opened with "{"), the tail's parts through the cache, and
// reports whether it could. It can when the head has no field of the tail
// (roster, resources, warnings, skipped, bindings, specs, in any case) and the tail
// none of the head (node, declaration, digest, roster_revision,
// resources_since, resources_unknown): the two decodes then set
// disjoint fields, and together are the decode of data. A mark inside a
// nested value (a skipped node's object, say) cuts data where the head
// cannot close, and a head that does not decode falls back too, as does
// anything else: decodeWhole then decodes data, and says what is wrong
// with it.
func (c *internCache) decodeSplit(data []byte, i int) (DeclarationComposed, bool) {
	tail := data[i:]
	t, ok := recall(c, c.tails, tail)
	if !ok {
		obj := make([]byte, 0, len(tail))
		obj = append(append(obj, '{'), tail[1:]...)
		var err error
		t, err = c.decodeWhole(obj)
		if err != nil || t.Node != "" || t.Declaration != "" || t.Digest != "" || t.RosterRevision != 0 || t.ResourcesSince != "" || t.ResourcesUnknown != "" {
			return DeclarationComposed{}, false
		}
		t.Warnings, t.Skipped, t.Bindings = slices.Clip(t.Warnings), slices.Clip(t.Skipped), slices.Clip(t.Bindings)
		remember(c, c.tails, tail, t)
	}
	buf := c.heads.Get().(*[]byte)
	defer c.heads.Put(buf)
	*buf = append(append((*buf)[:0], data[:i]...), '}')
	var h composedWire
	if err := unmarshal(*buf, &h); err != nil ||
		len(h.Roster) > 0 || len(h.Resources) > 0 || h.Warnings != nil || h.Skipped != nil || h.Bindings != nil || len(h.Specs) > 0 {
		return DeclarationComposed{}, false
	}
	t.Node, t.Declaration, t.Digest, t.RosterRevision = h.Node, h.Declaration, h.Digest, h.RosterRev
	t.ResourcesSince, t.ResourcesUnknown = h.Since, h.Unknown
	return t, true
}

// decodeWhole decodes a declaration.composed payload as unmarshal would,
// its roster, resources and specs through the cache.
func (c *internCache) decodeWhole(data []byte) (DeclarationComposed, error) {
	var w composedWire
	if err := unmarshal(data, &w); err != nil {
		return DeclarationComposed{}, err
	}
	roster, err := part(c, c.roster, w.Roster, slices.Clip)
	if err != nil {
		return DeclarationComposed{}, err
	}
	refs, err := part(c, c.refs, w.Resources, slices.Clip)
	if err != nil {
		return DeclarationComposed{}, err
	}
	specs, err := part(c, c.specs, w.Specs, nil)
	if err != nil {
		return DeclarationComposed{}, err
	}
	return DeclarationComposed{
		Node: w.Node, Declaration: w.Declaration, Digest: w.Digest, RosterRevision: w.RosterRev, Roster: roster, Resources: refs,
		Warnings: w.Warnings, Skipped: w.Skipped, Bindings: w.Bindings, Specs: specs, ResourcesSince: w.Since, ResourcesUnknown: w.Unknown,
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
	if v, ok := recall(c, m, raw); ok {
		return v, nil
	}
	if err := unmarshal(raw, &v); err != nil {
		return v, err
	}
	if keep != nil {
		v = keep(v)
	}
	remember(c, m, raw, v)
	return v, nil
}

// recall is m's value for key, guarded by c.mu.
func recall[V any](c *internCache, m map[string]V, key []byte) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := m[string(key)]
	return v, ok
}

// remember makes v m's value for key, guarded by c.mu; a full m is emptied
// first (internLimit).
func remember[V any](c *internCache, m map[string]V, key []byte, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(m) >= internLimit {
		clear(m)
	}
	m[string(key)] = v
}
