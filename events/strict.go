package events

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Strict decoding is for the door: what comes from outside (an API request,
// an imported line) is decoded so that its bytes mean one thing. encoding/json
// and goccy/go-json both take the last of two values a key is given, and both
// match a key to a field without regard to case ("Operator" fills operator),
// so {"operator":"alice","Operator":"mallory"} is mallory's to whoever reads
// it last and alice's to whoever reads it first. UnmarshalStrict and
// Registry.DecodeStrict refuse such input; readers of stored history keep
// decoding as they always did (docs/design.md, "The door").

// UnmarshalStrict decodes data, one JSON value, into v (a non-nil pointer)
// and refuses, with an error wrapping ErrInvalid, what plain decoding lets
// by: a key given twice in one object (at any depth), a key that is not
// exactly the name of a field of the struct it fills (another case of it
// included), a key no field has, a string whose bytes are not UTF-8
// (which plain decoding replaces), and anything after the value.
func UnmarshalStrict(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("events: strict decode into %T: want a non-nil pointer: %w", v, ErrInvalid)
	}
	if err := CheckKeys(data, rv.Type().Elem(), false); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%v: %w", err, ErrInvalid)
	}
	return nil
}

// CheckKeys checks that data is one JSON value whose objects give no key
// twice and, where an object fills a struct of t (t nil: a value of any
// type), name its fields exactly: a key that differs from a field's name
// only in case is refused. A key that names no field is refused too unless
// allowUnknown is set. Keys are compared as encoding/json decodes them
// (escapes resolved). A string (a key or a value) whose bytes are not
// UTF-8 is refused. The error is an *InvalidError whose Field is the key's
// path ("spec.containers[0].name"), wrapping ErrInvalid.
func CheckKeys(data []byte, t reflect.Type, allowUnknown bool) error {
	if !json.Valid(data) {
		var raw json.RawMessage // the decoder's own words for what is wrong
		if err := json.Unmarshal(data, &raw); err != nil {
			return fmt.Errorf("%v: %w", err, ErrInvalid)
		}
		return invalid("json", "not valid JSON")
	}
	s := keyScanner{b: data, allowUnknown: allowUnknown}
	return s.value(t, "")
}

// UnmarshalJSONLineStrict decodes one event from a line of the export
// format (as UnmarshalJSONLine) for the door: the envelope's keys are held
// to UnmarshalStrict's rules, and its data is left for the payload's own
// check (Registry.DecodeStrict), which holds it to the rules of its type.
func UnmarshalJSONLineStrict(line []byte) (Event, error) {
	if !json.Valid(line) {
		return UnmarshalJSONLine(line) // its words for what is wrong
	}
	s := keyScanner{b: line, skipRaw: true}
	if err := s.value(lineType, ""); err != nil {
		return Event{}, err
	}
	return UnmarshalJSONLine(line)
}

var (
	lineType = reflect.TypeFor[jsonLine]() // the envelope and its chain value
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// keyScanner walks JSON already known to be valid, guided by the Go type
// it is to fill.
type keyScanner struct {
	b            []byte
	i            int
	allowUnknown bool
	skipRaw      bool // a json.RawMessage is passed over, unchecked
}

// structFields are the JSON names of a struct's fields, as encoding/json
// sees them (embedded structs promoted, "-" left out).
type structFields struct {
	names []string
	types []reflect.Type
	index map[string]int
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// opaque reports whether values of t decode themselves (time.Time,
// uuid.UUID, json.RawMessage): their objects are checked for keys given
// twice only.
func opaque(t reflect.Type) bool {
	return t.Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(jsonUnmarshaler) ||
		t.Implements(textUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler)
}

func (s *keyScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// value checks the value at s.i, which fills a t (nil: any), at path at.
func (s *keyScanner) value(t reflect.Type, at string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s.skipRaw && t == rawType {
		s.skip()
		return nil
	}
	if t != nil && (t.Kind() == reflect.Interface || opaque(t)) {
		t = nil
	}
	s.ws()
	switch s.b[s.i] {
	case '{':
		return s.object(t, at)
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		s.i++
		for n := 0; ; n++ {
			s.ws()
			if s.b[s.i] == ']' {
				s.i++
				return nil
			}
			if err := s.value(elem, at+"["+strconv.Itoa(n)+"]"); err != nil {
				return err
			}
			s.ws()
			if s.b[s.i] == ',' {
				s.i++
			}
		}
	case '"':
		if raw, plain := s.str(); !plain && !utf8.Valid(raw) {
			return invalid(orTop(at), "not valid UTF-8")
		}
		return nil
	default:
		s.scalar()
		return nil
	}
}

// object checks the object at s.i.
func (s *keyScanner) object(t reflect.Type, at string) error {
	var fields *structFields
	var elem reflect.Type
	switch {
	case t == nil:
	case t.Kind() == reflect.Struct:
		fields = s.structFields(t)
	case t.Kind() == reflect.Map:
		elem = t.Elem()
	}
	var seenField []bool
	var seenKey map[string]bool
	if fields != nil {
		seenField = make([]bool, len(fields.names))
	}
	s.i++ // {
	for {
		s.ws()
		if s.b[s.i] == '}' {
			s.i++
			return nil
		}
		key, ok := s.key()
		path := key
		if at != "" {
			path = at + "." + key
		}
		if !ok {
			return invalid(orTop(at), "a key that is not valid UTF-8")
		}
		s.ws()
		s.i++ // :
		child := elem
		if fields != nil {
			idx, ok := fields.index[key]
			if !ok {
				for _, name := range fields.names {
					if strings.EqualFold(name, key) {
						return invalid(path, "not a field: the field is %q (field names are exact)", name)
					}
				}
				if !s.allowUnknown {
					return invalid(path, "unknown field")
				}
				idx = -1
			}
			if idx >= 0 {
				if seenField[idx] {
					return invalid(path, "given twice")
				}
				seenField[idx] = true
				child = fields.types[idx]
			}
		} else {
			if seenKey == nil {
				seenKey = map[string]bool{}
			}
			if seenKey[key] {
				return invalid(path, "given twice")
			}
			seenKey[key] = true
		}
		if err := s.value(child, path); err != nil {
			return err
		}
		s.ws()
		if s.b[s.i] == ',' {
			s.i++
		}
	}
}

// skip passes over the value at s.i.
func (s *keyScanner) skip() {
	s.ws()
	switch s.b[s.i] {
	case '"':
		s.str()
	case '{', '[':
		for depth := 0; ; {
			switch s.b[s.i] {
			case '"':
				s.str()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.i++
			if depth == 0 {
				return
			}
		}
	default:
		s.scalar()
	}
}

// scalar passes over the number, true, false or null at s.i.
func (s *keyScanner) scalar() {
	for s.i < len(s.b) && !strings.ContainsRune(" \t\r\n,]}", rune(s.b[s.i])) {
		s.i++
	}
}

// str skips the string at s.i and returns its raw bytes, quotes included,
// and whether it holds an escape or a byte beyond ASCII.
func (s *keyScanner) str() (raw []byte, plain bool) {
	start := s.i
	s.i++ // "
	plain = true
	for s.b[s.i] != '"' {
		switch c := s.b[s.i]; {
		case c == '\\':
			plain = false
			s.i += 2
		case c >= utf8.RuneSelf:
			plain = false
			s.i++
		default:
			s.i++
		}
	}
	s.i++
	return s.b[start:s.i], plain
}

// key reads an object's key as encoding/json decodes it, and whether its
// bytes are UTF-8.
func (s *keyScanner) key() (string, bool) {
	raw, plain := s.str()
	if plain {
		return string(raw[1 : len(raw)-1]), true
	}
	var k string
	_ = json.Unmarshal(raw, &k) // valid JSON: a string decodes
	return k, utf8.Valid(raw)
}

// orTop names the top of a value for an error: its path, or "value".
func orTop(at string) string {
	if at == "" {
		return "value"
	}
	return at
}

// fieldCache holds each struct type's fields once computed: a memo of a
// pure function of the type, as encoding/json keeps one.
var fieldCache sync.Map // reflect.Type → *structFields

func (s *keyScanner) structFields(t reflect.Type) *structFields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*structFields)
	}
	f := &structFields{index: map[string]int{}}
	collectFields(t, f, 0)
	fieldCache.Store(t, f)
	return f
}

// collectFields adds t's fields to f as encoding/json names them.
func collectFields(t reflect.Type, f *structFields, depth int) {
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := sf.Type
		if sf.Anonymous && name == "" {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct && depth < 8 {
				collectFields(et, f, depth+1)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if _, dup := f.index[name]; dup {
			continue // the shallower field wins, as in encoding/json
		}
		f.index[name] = len(f.names)
		f.names = append(f.names, name)
		f.types = append(f.types, ft)
	}
}

// DecodeStrict is Decode for the door (an import): the payload of ev must be
// of a registered type, at a schema no newer than this build's, give no key
// twice at any level, name the fields of its type exactly (a key of another
// case is refused; a key no field has is allowed, as readers pass over
// fields added by a newer build at the same schema), and decode to that
// type. What it accepts, Decode reads.
func (r *Registry) DecodeStrict(ev Event) (Payload, error) {
	e, ok := r.types[ev.Type]
	if !ok {
		return nil, fmt.Errorf("events: %q: %w", ev.Type, ErrUnknownType)
	}
	if ev.Schema > e.schema {
		return nil, fmt.Errorf("events: %s schema %d is newer than this build's %d: %w", ev.Type, ev.Schema, e.schema, ErrInvalid)
	}
	data := ev.Data
	if len(data) == 0 {
		data = []byte("{}")
	}
	if ev.Schema < e.schema {
		// The bytes as stored, before an upcaster reads them (and would
		// take the last of a key given twice).
		if err := CheckKeys(data, nil, true); err != nil {
			return nil, inData(ev.Type, err)
		}
	}
	up, err := e.upcast(ev.Type, ev.Schema, data)
	if err != nil {
		return nil, fmt.Errorf("events: %s: %w", ev.Type, err)
	}
	if err := CheckKeys(up, e.typ, true); err != nil {
		return nil, inData(ev.Type, err)
	}
	p, err := e.decode(up) // as Decode decodes it
	if err != nil {
		return nil, fmt.Errorf("events: %s: %v: %w", ev.Type, err, ErrInvalid)
	}
	return p, nil
}

// inData places a CheckKeys error of a payload of type typ under "data".
func inData(typ string, err error) error {
	if ie, ok := err.(*InvalidError); ok {
		return fmt.Errorf("events: %s: %w", typ, &InvalidError{Field: "data." + ie.Field, Reason: ie.Reason})
	}
	return fmt.Errorf("events: %s: data: %w", typ, err)
}
