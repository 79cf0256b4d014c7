package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"meshplane/agent"
	"meshplane/agent/simruntime"
)

// logRT is the simulated runtime with a log: whatever it is asked, it
// answers log (as a runtime that overran the bound would).
type logRT struct {
	*simruntime.Runtime
	log   string
	asked agent.LogQuery
}

func (r *logRT) ReadLogs(_ context.Context, name string, q agent.LogQuery) (agent.LogChunk, error) {
	r.asked = q
	if name != "web" {
		return agent.LogChunk{}, agent.ErrNotFound
	}
	return agent.LogChunk{Data: []byte(r.log)}, nil
}

// TestLogsBounds: a log request is checked before any runtime is asked
// (a bad name, a tail or wait out of bounds), its size bounded, and a
// runtime that reads no logs says so.
func TestLogsBounds(t *testing.T) {
	big := strings.Repeat("x", agent.MaxLogChunk+10)
	tests := []struct {
		name    string
		rt      agent.Runtime
		req     agent.LogRequest
		wantErr error
		wantLen int
		wantCut bool
		wantMax int
	}{
		{name: "a tail", rt: &logRT{Runtime: simruntime.New(), log: "a\nb\n"}, req: agent.LogRequest{Container: "web", LogQuery: agent.LogQuery{Tail: 10}}, wantLen: 4, wantMax: agent.MaxLogChunk},
		{name: "over the bound, cut", rt: &logRT{Runtime: simruntime.New(), log: big}, req: agent.LogRequest{Container: "web", LogQuery: agent.LogQuery{MaxBytes: 1 << 30}}, wantLen: agent.MaxLogChunk, wantCut: true, wantMax: agent.MaxLogChunk},
		{name: "a smaller bound", rt: &logRT{Runtime: simruntime.New(), log: "abcdef"}, req: agent.LogRequest{Container: "web", LogQuery: agent.LogQuery{MaxBytes: 3}}, wantLen: 3, wantCut: true, wantMax: 3},
		{name: "not managed", rt: &logRT{Runtime: simruntime.New()}, req: agent.LogRequest{Container: "other"}, wantErr: agent.ErrNotFound},
		{name: "a bad name", rt: &logRT{Runtime: simruntime.New()}, req: agent.LogRequest{Container: "../etc"}, wantErr: agent.ErrInvalid},
		{name: "a negative tail", rt: &logRT{Runtime: simruntime.New()}, req: agent.LogRequest{Container: "web", LogQuery: agent.LogQuery{Tail: -1}}, wantErr: agent.ErrInvalid},
		{name: "a tail too long", rt: &logRT{Runtime: simruntime.New()}, req: agent.LogRequest{Container: "web", LogQuery: agent.LogQuery{Tail: agent.MaxLogLines + 1}}, wantErr: agent.ErrInvalid},
		{name: "a wait too long", rt: &logRT{Runtime: simruntime.New()}, req: agent.LogRequest{Container: "web", LogQuery: agent.LogQuery{WaitMillis: 60_000}}, wantErr: agent.ErrInvalid},
		{name: "no logs kept", rt: simruntime.New(), req: agent.LogRequest{Container: "web"}, wantErr: agent.ErrNoLogs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, err := agent.Logs(context.Background(), tt.rt, tt.req)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err %v, want %v", err, tt.wantErr)
				}
				if lr, ok := tt.rt.(*logRT); ok && errors.Is(err, agent.ErrInvalid) && lr.asked != (agent.LogQuery{}) {
					t.Errorf("the runtime was asked %+v for a refused request", lr.asked)
				}
				return
			}
			if err != nil || len(ch.Data) != tt.wantLen || ch.Cut != tt.wantCut {
				t.Fatalf("%d bytes, cut %v, %v; want %d, cut %v", len(ch.Data), ch.Cut, err, tt.wantLen, tt.wantCut)
			}
			if got := tt.rt.(*logRT).asked.MaxBytes; got != tt.wantMax {
				t.Errorf("the runtime was asked for %d bytes, want %d", got, tt.wantMax)
			}
		})
	}
}
