package meshup

import (
	"bytes"
	"context"
	"maps"
	"net"
	"strings"
	"testing"
)

// TestRuntimesNoEngine: every node is simulated unless it asks for docker;
// with no engine answering, those that ask are simulated too, said in one
// line naming them; with none asking, the engine is not asked.
func TestRuntimesNoEngine(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	t.Setenv("DOCKER_HOST", "tcp://"+closed)

	mf, err := ParseFile("m.yaml", []byte("nodes:\n  - {name: a}\n  - {name: b, runtime: docker}\n  - {name: c, runtime: docker}\n  - {name: d, runtime: sim}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rts := Runtimes(context.Background(), mf, &out)
	want := map[string]string{"a": RuntimeSim, "b": RuntimeSim, "c": RuntimeSim, "d": RuntimeSim}
	if !maps.Equal(rts, want) {
		t.Errorf("runtimes %v, want %v", rts, want)
	}
	if got := out.String(); strings.Count(got, "\n") != 1 || !strings.HasSuffix(got, ": nodes b, c on the simulated runtime instead\n") || !strings.Contains(got, closed) {
		t.Errorf("output %q, want one line naming %s and ending \": nodes b, c on the simulated runtime instead\"", got, closed)
	}

	out.Reset()
	simOnly, err := ParseFile("m.yaml", []byte("nodes:\n  - {name: a}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if rts := Runtimes(context.Background(), simOnly, &out); !maps.Equal(rts, map[string]string{"a": RuntimeSim}) || out.Len() != 0 {
		t.Errorf("sim only: runtimes %v, output %q; want a on sim, nothing said", rts, out.String())
	}
}
