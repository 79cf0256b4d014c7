package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/google/uuid"
)

// Upcaster turns a payload of one schema into the next (schema from → from+1).
type Upcaster func(data json.RawMessage) (json.RawMessage, error)

// Registry is the JSON codec of payloads: it knows each event type's Go type
// and current schema, and the upcasters that bring an old schema's payload up
// to date on read. A Registry is built once (NewRegistry, then Register and
// Upcast) and is safe for concurrent reads after that.
type Registry struct {
	types  map[string]*entry
	intern *internCache
}

type entry struct {
	schema int
	typ    reflect.Type
	up     map[int]Upcaster
	decode func(data []byte) (Payload, error) // data, at schema, as a payload of typ
}

// NewRegistry returns a registry holding the whole vocabulary of this
// package at its current schemas.
func NewRegistry() *Registry {
	r := &Registry{types: map[string]*entry{}, intern: newInternCache()}
	registerTyped[NodeRegistered](r)
	registerTyped[NodeAdopted](r)
	registerTyped[NodeSettingSet](r)
	registerTyped[ModuleDefined](r)
	registerTyped[ModuleAssigned](r)
	registerTyped[ModuleReleased](r)
	registerTyped[ModuleTaken](r)
	registerTyped[ArtifactRecorded](r)
	r.Register(DeclarationComposed{}, 1) // decoded through the intern cache
	registerTyped[DeclarationComposeFailed](r)
	registerTyped[DeclarationPushed](r)
	registerTyped[DeclarationPushFailed](r)
	registerTyped[ApplyReported](r)
	registerTyped[ReportDeliveredLate](r)
	registerTyped[ModuleDeployed](r)
	registerTyped[ReportRefused](r)
	registerTyped[ReportThrottled](r)
	registerTyped[NodeJoinTokenIssued](r)
	registerTyped[NodeJoined](r)
	registerTyped[NodeCredentialsIssued](r)
	registerTyped[NodeCredentialsRevoked](r)
	registerTyped[TokenCreated](r)
	registerTyped[TokenRevoked](r)
	registerTyped[NodeWentSilent](r)
	registerTyped[NodeCameBack](r)
	registerTyped[ModuleRemoved](r)
	registerTyped[NodeRemoved](r)
	registerTyped[SecretSet](r)
	registerTyped[RosterChanged](r)
	registerTyped[ContainerStarting](r)
	registerTyped[ContainerRecovered](r)
	registerTyped[ContainerUnhealthy](r)
	registerTyped[ContainerCrashLooping](r)
	registerTyped[ContainerExited](r)
	registerTyped[ContainerOOMKilled](r)
	registerTyped[ContainerVanished](r)
	registerTyped[RolloutFailed](r)
	return r
}

// registerTyped registers T at schema 1 with a decoder of its own
// (typedDecoder).
func registerTyped[T Payload](r *Registry) {
	var zero T
	r.Register(zero, 1)
	r.types[zero.EventType()].decode = typedDecoder[T]()
}

// typedDecoder returns a decoder of T payloads that allocates once per
// payload, for its box. The reflective decoder (Register's) allocates the
// value it decodes into and then again for the interface's copy of it;
// this one decodes into a pooled value, zeroed first (a decode leaves the
// fields the data lacks as they were), and boxes a copy of it.
func typedDecoder[T Payload]() func(data []byte) (Payload, error) {
	pool := &sync.Pool{New: func() any { return new(T) }}
	return func(data []byte) (Payload, error) {
		s := pool.Get().(*T)
		defer pool.Put(s)
		var zero T
		*s = zero
		if err := unmarshal(data, s); err != nil {
			return nil, err
		}
		return *s, nil
	}
}

// Register adds (or replaces) a payload type at its current schema.
func (r *Registry) Register(p Payload, schema int) {
	if schema < 1 {
		panic(fmt.Sprintf("events: register %s: schema %d", p.EventType(), schema))
	}
	typ := reflect.TypeOf(p)
	decode := func(data []byte) (Payload, error) {
		v := reflect.New(typ)
		if err := unmarshal(data, v.Interface()); err != nil {
			return nil, err
		}
		return v.Elem().Interface().(Payload), nil
	}
	if typ == composedType && r.intern != nil {
		decode = func(data []byte) (Payload, error) { return r.intern.decodeComposed(data) }
	}
	r.types[p.EventType()] = &entry{schema: schema, typ: typ, up: map[int]Upcaster{}, decode: decode}
}

// Upcast registers fn to turn typ's payloads of schema from into schema
// from+1.
func (r *Registry) Upcast(typ string, from int, fn Upcaster) {
	e, ok := r.types[typ]
	if !ok {
		panic(fmt.Sprintf("events: upcaster for unregistered type %s", typ))
	}
	e.up[from] = fn
}

// Known reports whether typ is registered.
func (r *Registry) Known(typ string) bool { _, ok := r.types[typ]; return ok }

// Types lists the registered types, sorted.
func (r *Registry) Types() []string {
	return slices.Sorted(maps.Keys(r.types))
}

// Meta is what an event carries besides its payload.
type Meta struct {
	ID          uuid.UUID
	At          time.Time
	Actor       string
	Causation   string
	Correlation string
}

// New makes an event of p, on stream, at p's current schema. It is how the
// core turns decisions into events: the id, time and actor come in meta.
func (r *Registry) New(stream string, p Payload, m Meta) (Event, error) {
	e, ok := r.types[p.EventType()]
	if !ok {
		return Event{}, fmt.Errorf("events: new %s: %w", p.EventType(), ErrUnknownType)
	}
	data, err := json.Marshal(p)
	if err != nil {
		return Event{}, fmt.Errorf("events: encode %s: %w", p.EventType(), err)
	}
	return Event{
		ID: m.ID, Stream: stream, Type: p.EventType(), Schema: e.schema,
		At: m.At, Actor: m.Actor, Causation: m.Causation, Correlation: m.Correlation,
		Data: data,
	}, nil
}

// unmarshal decodes payloads. goccy/go-json decodes the vocabulary's
// payloads several times faster than encoding/json, which matters to
// rebuilds (BENCHMARKS.md); FuzzDecodeAgreesWithStdlib holds the two to the
// same results on every payload type. Encoding stays with encoding/json.
var unmarshal = gojson.Unmarshal

// Decode returns the payload of ev as a value of its registered Go type
// (NodeRegistered, not *NodeRegistered), upcast to the current schema.
// Payloads may share memory with each other (a declaration's resources and
// roster, when they repeat): never modify one's elements in place. Shared
// slices are clipped, so appending to one never writes into another. An
// unregistered type is ErrUnknownType; a schema newer than this build knows,
// a missing upcaster, or data that does not decode is an error naming the
// event.
func (r *Registry) Decode(ev Event) (Payload, error) {
	e, ok := r.types[ev.Type]
	if !ok {
		return nil, fmt.Errorf("events: decode %s at position %d: %q: %w", ev.Stream, ev.Position, ev.Type, ErrUnknownType)
	}
	if ev.Schema > e.schema {
		return nil, fmt.Errorf("events: decode %s at position %d: %s schema %d is newer than this build's %d: %w",
			ev.Stream, ev.Position, ev.Type, ev.Schema, e.schema, ErrInvalid)
	}
	data, err := e.upcast(ev.Type, ev.Schema, ev.Data)
	if err != nil {
		return nil, fmt.Errorf("events: decode %s at position %d: %w", ev.Stream, ev.Position, err)
	}
	p, err := e.decode(data)
	if err != nil {
		return nil, fmt.Errorf("events: decode %s at position %d: %s: %v: %w", ev.Stream, ev.Position, ev.Type, err, ErrInvalid)
	}
	return p, nil
}

// upcast brings data, a payload of typ at schema, up to e's schema.
func (e *entry) upcast(typ string, schema int, data json.RawMessage) (json.RawMessage, error) {
	for s := max(schema, 1); s < e.schema; s++ {
		up, ok := e.up[s]
		if !ok {
			return nil, fmt.Errorf("no upcaster for %s schema %d: %w", typ, s, ErrInvalid)
		}
		var err error
		if data, err = up(data); err != nil {
			return nil, fmt.Errorf("upcast %s schema %d: %w", typ, s, err)
		}
	}
	return data, nil
}

// DecodeAs decodes ev's payload as T, failing if ev is of another type.
func DecodeAs[T Payload](r *Registry, ev Event) (T, error) {
	var zero T
	p, err := r.Decode(ev)
	if err != nil {
		return zero, err
	}
	t, ok := p.(T)
	if !ok {
		return zero, fmt.Errorf("events: %s at position %d is %s, not %s: %w", ev.Stream, ev.Position, ev.Type, zero.EventType(), ErrInvalid)
	}
	return t, nil
}

// MarshalJSONLine encodes ev as one line of JSON (the export format, and the
// doc-string format of scenario steps), without a trailing newline. An
// event with a chain value carries it last, as "chain":"sha256:<hex>".
func MarshalJSONLine(ev Event) ([]byte, error) {
	if ev.Chain.IsZero() {
		return json.Marshal(ev)
	}
	return json.Marshal(jsonLine{Event: ev, Chain: &ev.Chain})
}

// jsonLine is an event line: the envelope and its chain value.
type jsonLine struct {
	Event
	Chain *Hash `json:"chain,omitempty"`
}

// UnmarshalJSONLine decodes one event from a line of JSON. Fields the store
// assigns (version, position, chain) are read but an append ignores them; a
// missing id is left nil for the caller to fill. Unknown fields are refused,
// so a misspelt "strem" is an error, not a silently empty stream.
func UnmarshalJSONLine(line []byte) (Event, error) {
	var l jsonLine
	dec := json.NewDecoder(bytesReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return Event{}, fmt.Errorf("events: event line: %v: %w", err, ErrInvalid)
	}
	if rest := bytes.TrimLeft(line[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return Event{}, fmt.Errorf("events: event line: %q after the event: %w", truncate(rest, 20), ErrInvalid)
	}
	ev := l.Event
	if l.Chain != nil {
		ev.Chain = *l.Chain
	}
	if ev.Schema == 0 {
		ev.Schema = 1
	}
	return ev, nil
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
