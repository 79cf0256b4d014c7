package meshup

import (
	"context"
	"errors"
	"strings"
	"testing"

	"meshplane/commands"
	"meshplane/events"
	"meshplane/events/memstore"
)

// TestExecute: the set-up is all or nothing. A refused command (a module
// assigned that is not defined) writes none of the set-up and says
// nothing was written; one accepted writes every command, and the same
// set-up again finds all its work done, appending nothing.
func TestExecute(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()
	h := commands.NewHandler(s, events.NewRegistry())

	bad, err := ParseFile("m.yaml", []byte("nodes:\n  - {name: a, adopted: true}\n  - {name: b, modules: [nope]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Execute(ctx, h, "op", SetUp(nil, bad, nil))
	var rej *commands.Rejection
	if !errors.As(err, &rej) || !strings.HasPrefix(rej.Msg, "set-up: ") || !strings.HasSuffix(rej.Msg, " (nothing was written)") {
		t.Fatalf("refused set-up: %v, want a rejection saying set-up: ... (nothing was written)", err)
	}
	if head, err := s.Head(ctx); err != nil || head != 0 {
		t.Fatalf("a refused set-up wrote: head %d, %v", head, err)
	}

	good, err := ParseFile("m.yaml", []byte("nodes:\n  - {name: a, adopted: true, private-address: 10.0.0.1, ports: {store: 6852}}\n  - {name: b}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cs := SetUp(nil, good, nil)
	done, err := Execute(ctx, h, "op", cs)
	if err != nil || done != 0 {
		t.Fatalf("first set-up: %d done, %v; want 0 done", done, err)
	}
	head, err := s.Head(ctx)
	if err != nil || head == 0 {
		t.Fatalf("the set-up wrote nothing: head %d, %v", head, err)
	}
	done, err = Execute(ctx, h, "op", cs)
	if err != nil || done != len(cs) {
		t.Fatalf("set-up again: %d of %d done, %v; want all", done, len(cs), err)
	}
	if again, _ := s.Head(ctx); again != head {
		t.Errorf("set-up again appended: head %d, was %d", again, head)
	}
}

// TestRefused: a rejection keeps its code and says nothing was written;
// another error is wrapped as the set-up's.
func TestRefused(t *testing.T) {
	err := Refused(&commands.Rejection{Code: commands.CodeInvalid, Msg: "bad"})
	var rej *commands.Rejection
	if !errors.As(err, &rej) || rej.Code != commands.CodeInvalid || rej.Msg != "set-up: bad (nothing was written)" {
		t.Errorf("Refused(rejection) = %v", err)
	}
	boom := errors.New("boom")
	if err := Refused(boom); !errors.Is(err, boom) || err.Error() != "set-up: boom" {
		t.Errorf("Refused(boom) = %v", err)
	}
}
