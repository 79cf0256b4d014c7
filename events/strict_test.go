package events_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/events"
)

// strictTarget has what requests and payloads hold: nested structs, lists,
// maps, values that decode themselves and an embedded struct.
type strictTarget struct {
	Operator string            `json:"operator"`
	Nodes    []string          `json:"nodes,omitempty"`
	Spec     events.ModuleSpec `json:"spec"`
	Raw      json.RawMessage   `json:"raw,omitempty"`
	At       time.Time         `json:"at,omitzero"`
	ID       uuid.UUID         `json:"id,omitzero"`
	Any      any               `json:"any,omitempty"`
	Skip     string            `json:"-"`
	strictEmbedded
}

type strictEmbedded struct {
	Extra string `json:"extra,omitempty"`
}

func TestUnmarshalStrict(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		field    string // "" when accepted
		reason   string
	}{
		{"plain", `{"operator":"alice","nodes":["a"],"spec":{"containers":[{"name":"w","env":{"A":"1","a":"2"}}]},"extra":"x"}`, "", ""},
		{"values that decode themselves", `{"operator":"a","at":"2026-09-29T22:46:00Z","id":"0192f1d2-3a4b-7c5d-8e6f-0123456789ab","raw":{"k":[1,{"k":2}]},"any":{"a":{"a":1}}}`, "", ""},
		{"escaped keys", `{"op\u0065rator":"a"}`, "", ""},
		{"a key twice", `{"operator":"alice","operator":"mallory"}`, "operator", "given twice"},
		{"a key twice, escaped", `{"operator":"alice","\u006fperator":"mallory"}`, "operator", "given twice"},
		{"another case", `{"Operator":"mallory"}`, "Operator", "the field is \"operator\""},
		{"both cases", `{"operator":"alice","OPERATOR":"mallory"}`, "OPERATOR", "the field is \"operator\""},
		{"unknown", `{"operator":"a","admin":true}`, "admin", "unknown field"},
		{"dash field", `{"Skip":"x"}`, "Skip", "unknown field"},
		{"nested twice", `{"spec":{"containers":[{"name":"a"},{"name":"b","name":"c"}]}}`, "spec.containers[1].name", "given twice"},
		{"nested case", `{"spec":{"Containers":[]}}`, "spec.Containers", "the field is \"containers\""},
		{"map key twice", `{"spec":{"containers":[{"name":"w","env":{"A":"1","A":"2"}}]}}`, "spec.containers[0].env.A", "given twice"},
		{"raw key twice", `{"raw":{"k":1,"k":2}}`, "raw.k", "given twice"},
		{"deep raw key twice", `{"raw":[{"a":{"b":1,"b":1}}]}`, "raw[0].a.b", "given twice"},
		{"any key twice", `{"any":{"x":1,"x":1}}`, "any.x", "given twice"},
		{"embedded twice", `{"extra":"a","extra":"b"}`, "extra", "given twice"},
		{"a value not UTF-8", "{\"operator\":\"a\xffb\"}", "operator", "not valid UTF-8"},
		{"a key not UTF-8", "{\"op\xff\":\"a\"}", "", "a key that is not valid UTF-8"},
		{"UTF-8 beyond ASCII", `{"operator":"Zoë \u00e9"}`, "", ""},
		{"two values", `{"operator":"a"} {}`, "", "invalid"},
		{"not JSON", `{"operator":`, "", "unexpected end"},
		{"wrong type", `{"operator":5}`, "", "cannot unmarshal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v strictTarget
			err := events.UnmarshalStrict([]byte(tc.in), &v)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, events.ErrInvalid) || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("got %v, want ErrInvalid saying %q", err, tc.reason)
			}
			var ie *events.InvalidError
			if tc.field != "" && (!errors.As(err, &ie) || ie.Field != tc.field) {
				t.Fatalf("got %v, want field %q", err, tc.field)
			}
		})
	}
	var v strictTarget
	if err := events.UnmarshalStrict([]byte(`{"operator":"alice","nodes":["a","b"]}`), &v); err != nil || v.Operator != "alice" || len(v.Nodes) != 2 {
		t.Fatalf("decoded %+v, %v", v, err)
	}
	if err := events.UnmarshalStrict([]byte(`{}`), v); !errors.Is(err, events.ErrInvalid) {
		t.Fatalf("decode into a value: %v", err)
	}
}

func TestCheckKeysAllowsUnknown(t *testing.T) {
	typ := reflect.TypeFor[events.ApplyReported]()
	if err := events.CheckKeys([]byte(`{"node":"a","added_later":{"x":1}}`), typ, true); err != nil {
		t.Fatalf("an unknown field, allowed: %v", err)
	}
	if err := events.CheckKeys([]byte(`{"node":"a","added_later":{"x":1,"x":2}}`), typ, true); err == nil {
		t.Fatal("a key twice inside an unknown field was allowed")
	}
	if err := events.CheckKeys([]byte(`{"node":"a","NODE":"b"}`), typ, true); err == nil {
		t.Fatal("another case of a field was allowed")
	}
}

// DecodeStrict refuses what Decode would read one way and a reader of the
// bytes another, and what Decode cannot read at all.
func TestDecodeStrict(t *testing.T) {
	reg := events.NewRegistry()
	ev := func(typ string, schema int, data string) events.Event {
		return events.Event{Stream: "node-a", Type: typ, Schema: schema, Data: []byte(data)}
	}
	for _, tc := range []struct {
		name string
		ev   events.Event
		want string // "" when accepted
		is   error
	}{
		{"plain", ev(events.TypeNodeRegistered, 1, `{"node":"a"}`), "", nil},
		{"a field added later", ev(events.TypeNodeRegistered, 1, `{"node":"a","since":"x"}`), "", nil},
		{"no data", ev(events.TypeNodeRegistered, 1, ``), "", nil},
		{"unknown type", ev("node.renamed", 1, `{"node":"a"}`), "node.renamed", events.ErrUnknownType},
		{"newer schema", ev(events.TypeModuleDefined, 999, `{"module":"a"}`), "schema 999 is newer", events.ErrInvalid},
		{"node twice", ev(events.TypeNodeRegistered, 1, `{"node":"a","node":"b"}`), "data.node: given twice", events.ErrInvalid},
		{"node in another case", ev(events.TypeNodeRegistered, 1, `{"Node":"b"}`), "data.Node: not a field", events.ErrInvalid},
		{"wrong type", ev(events.TypeApplyReported, 1, `{"node":"a","sent":"many"}`), "cannot unmarshal", events.ErrInvalid},
		{"nested twice", ev(events.TypeApplyReported, 1, `{"node":"a","held":[{"name":"x","name":"y"}]}`), "data.held[0].name: given twice", events.ErrInvalid},
		{"spec twice", ev(events.TypeDeclarationComposed, 1, `{"node":"a","specs":{"d":{"image":"x","image":"y"}}}`), "data.specs.d.image: given twice", events.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := reg.DecodeStrict(tc.ev)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				stored := tc.ev
				if len(stored.Data) == 0 {
					stored.Data = []byte("{}") // as every store keeps it
				}
				if _, err := reg.Decode(stored); err != nil {
					t.Fatalf("accepted, and Decode refuses it: %v", err)
				}
				if p.EventType() != tc.ev.Type {
					t.Fatalf("decoded a %s", p.EventType())
				}
				return
			}
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %v saying %q", err, tc.is, tc.want)
			}
		})
	}
}

// UnmarshalJSONLineStrict holds the envelope to the strict rules and
// leaves the data to its payload's check.
func TestUnmarshalJSONLineStrict(t *testing.T) {
	const line = `{"id":"0192f1d2-3a4b-7c5d-8e6f-0123456789ab","stream":"node-a","type":"node.registered","at":"2026-09-29T22:46:00Z","data":%s}`
	good := strings.Replace(line, "%s", `{"node":"a"}`, 1)
	for _, tc := range []struct {
		name, in, want string // want "" when accepted
	}{
		{"plain", good, ""},
		{"data keeps its own keys", strings.Replace(line, "%s", `{"node":"a","node":"b","x":[{"y":1,"y":2}]}`, 1), ""},
		{"a scalar data", strings.Replace(line, "%s", `7`, 1), ""},
		{"type twice", strings.Replace(good, `"type"`, `"type":"x","type"`, 1), "type: given twice"},
		{"type in another case", strings.Replace(good, `"type"`, `"TYPE"`, 1), `TYPE: not a field: the field is "type"`},
		{"unknown", strings.Replace(good, `"stream"`, `"strem"`, 1), "strem: unknown field"},
		{"not JSON", `{"id":`, "event line"},
		{"two values", strings.Replace(line, "%s", `{}`, 1) + " {}", "event line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := events.UnmarshalJSONLineStrict([]byte(tc.in))
			if tc.want == "" {
				plain, perr := events.UnmarshalJSONLine([]byte(tc.in))
				if err != nil || perr != nil || !plain.SameContent(ev) {
					t.Fatalf("strict %v, plain %v: they differ", err, perr)
				}
				return
			}
			if !errors.Is(err, events.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrInvalid saying %q", err, tc.want)
			}
		})
	}
}
