package commands_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"meshplane/commands"
	"meshplane/declaration"
	"meshplane/events"
	"meshplane/events/memstore"
)

func TestDecidePush(t *testing.T) {
	composed := commands.Composition{Declaration: declaration.Declaration{Node: "novox", Digest: "sha256:a"}}
	unchanged := composed
	unchanged.Unchanged, unchanged.Pushed = true, true
	readErr := &commands.ReadError{Node: "novox", Read: "node g14", Err: errors.New("not yet accepting connections")}
	rejected := fmt.Errorf("compose: %w", commands.ErrRejected)
	tests := []struct {
		name string
		c    commands.Composition
		err  error
		last commands.LastPush
		want commands.PushAction
	}{
		{"a new digest is sent", composed, nil, commands.LastPush{Digest: "sha256:b"}, commands.PushSend},
		{"the digest last pushed is not", composed, nil, commands.LastPush{Digest: "sha256:a"}, commands.PushSkip},
		{"the digest last pushed after a failed compose is: it ends the failure", composed, nil, commands.LastPush{Digest: "sha256:a", Failure: readErr.Error()}, commands.PushSend},
		{"a push now sends it again", unchanged, nil, commands.LastPush{}, commands.PushSend},
		{"a new failure is recorded", commands.Composition{}, readErr, commands.LastPush{Digest: "sha256:a"}, commands.PushRecordFailure},
		{"another failure is recorded", commands.Composition{}, readErr, commands.LastPush{Failure: "other"}, commands.PushRecordFailure},
		{"the failure last recorded is not", commands.Composition{}, readErr, commands.LastPush{Failure: readErr.Error()}, commands.PushSkip},
		{"a push now records it again", commands.Composition{}, readErr, commands.LastPush{}, commands.PushRecordFailure},
		{"an unknown node is refused", commands.Composition{}, rejected, commands.LastPush{Failure: rejected.Error()}, commands.PushRefused},
	}
	for _, tc := range tests {
		if got := commands.DecidePush(tc.c, tc.err, tc.last); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// countingReader counts the compositions read through it: each compose
// lists the nodes once, first.
type countingReader struct {
	commands.Reader
	reads int
}

func (r *countingReader) Nodes(ctx context.Context) ([]string, error) {
	r.reads++
	return r.Reader.Nodes(ctx)
}

// TestPushNodeComposesOnce: a pass's push of a node composes once, decides
// on that composition, and pushes it (or records its failure, or does
// nothing): the decision and the push are of one composition.
func TestPushNodeComposesOnce(t *testing.T) {
	var failG14 bool
	h, store := setup(t, memstore.WithFault(func(op memstore.Op, stream string) error {
		if failG14 && op == memstore.OpReadStream && stream == "node-g14" {
			return errors.New("FATAL: the database system is not yet accepting connections")
		}
		return nil
	}))
	mesh(t, h)
	var sent []declaration.Declaration
	send := func(_ context.Context, d declaration.Declaration) error { sent = append(sent, d); return nil }
	var last commands.LastPush
	steps := []struct {
		name    string
		fail    bool
		want    commands.PushAction
		appends []string // the event types appended to node-novox
		sends   int
	}{
		{"first: composed and sent", false, commands.PushSend, []string{events.TypeRosterChanged, events.TypeDeclarationComposed, events.TypeDeclarationPushed}, 1},
		{"the digest last pushed: nothing", false, commands.PushSkip, nil, 0},
		{"g14 unreadable: the failure recorded", true, commands.PushRecordFailure, []string{events.TypeDeclarationComposeFailed}, 0},
		{"the same failure again: nothing", true, commands.PushSkip, nil, 0},
		// The node is failing until a compose succeeds: the compose that
		// does is recorded and sent, though it is the declaration last
		// pushed (byte-identical to it), or the failure would stay for good.
		{"readable again, the same declaration: composed anew and sent", false, commands.PushSend, []string{events.TypeDeclarationComposed, events.TypeDeclarationPushed}, 1},
		{"then the digest last pushed: nothing", false, commands.PushSkip, nil, 0},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			failG14 = s.fail
			before, _ := store.Head(context.Background())
			r := &countingReader{Reader: h}
			n := len(sent)
			act, d, err := h.PushNode(context.Background(), "novox", r, last, send)
			if act != s.want {
				t.Fatalf("decided %v (%v), want %v", act, err, s.want)
			}
			if r.reads != 1 {
				t.Errorf("composed %d times, want once", r.reads)
			}
			evs, _ := store.ReadAll(context.Background(), before, 0)
			var types []string
			for _, ev := range evs {
				types = append(types, ev.Type)
			}
			if fmt.Sprint(types) != fmt.Sprint(s.appends) {
				t.Errorf("appended %v, want %v", types, s.appends)
			}
			if len(sent)-n != s.sends {
				t.Errorf("sent %d, want %d", len(sent)-n, s.sends)
			}
			switch act {
			case commands.PushSend:
				if err != nil || sent[len(sent)-1].Digest != d.Digest {
					t.Errorf("sent %v (%v), want the declaration decided on, %s", sent, err, d.Digest)
				}
				last.Digest, last.Failure = d.Digest, ""
			case commands.PushRecordFailure:
				var re *commands.ReadError
				if !errors.As(err, &re) {
					t.Fatalf("error %v, want a *ReadError", err)
				}
				last.Failure = re.Error()
			}
		})
	}
}
