package session_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/events"
	"meshplane/session"
)

// history is a Service whose timeline grows at each ask (one entry of
// later a call), for FollowRollout.
type history struct {
	api.Service
	mu      sync.Mutex
	nodes   []string
	entries []api.Entry // revealed one a Timeline call
	shown   int
}

func (h *history) ModuleShow(context.Context, string) (api.ModuleShow, error) {
	var out api.ModuleShow
	for _, n := range h.nodes {
		out.Nodes = append(out.Nodes, api.ModuleNode{Node: n, Taken: true})
	}
	return out, nil
}

func (h *history) Timeline(_ context.Context, r api.TimelineRequest) (api.TimelinePage, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.shown < len(h.entries) {
		h.shown++
	}
	var page api.TimelinePage
	for _, e := range h.entries[:h.shown] {
		if e.Position > r.After {
			page.Entries = append(page.Entries, e)
		}
	}
	return page, nil
}

// TestFollowRollout: a roll-out is followed until every node of the module
// applied it, or until one failed (ErrRolloutFailed, naming what the mesh
// did), or until the time given ends, naming the nodes not heard from.
func TestFollowRollout(t *testing.T) {
	apply := func(pos uint64, node string) api.Entry {
		return api.Entry{Position: pos, Type: events.TypeApplyReported, Node: node, Summary: "applied 1 resource(s)"}
	}
	failed := api.Entry{Position: 14, Type: events.TypeRolloutFailed, Node: "novox",
		Summary: "roll-out of forge on novox failed (web: exited with code 1): reverting the module to position 9 (on_failure: revert)"}
	tests := []struct {
		name    string
		nodes   []string
		entries []api.Entry
		applied []string
		err     string
		failed  bool
	}{
		{"every node applied", []string{"novox", "zurag"}, []api.Entry{apply(12, "zurag"), apply(13, "novox")}, []string{"novox", "zurag"}, "", false},
		{"an apply before the deploy is not its", []string{"novox", "zurag"}, []api.Entry{apply(9, "zurag"), apply(13, "novox")}, []string{"novox"}, "no apply reported yet by [zurag]", false},
		{"a failed roll-out", []string{"novox", "zurag"}, []api.Entry{apply(13, "novox"), failed}, []string{"novox"}, "reverting the module to position 9", true},
		{"a node never heard from", []string{"novox", "zurag"}, []api.Entry{apply(13, "novox")}, []string{"novox"}, "no apply reported yet by [zurag]", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &history{nodes: tt.nodes, entries: tt.entries}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			out, err := session.FollowRollout(ctx, h, "forge", 10, time.Millisecond)
			if !reflect.DeepEqual(out.Applied, tt.applied) {
				t.Errorf("applied by %v, want %v", out.Applied, tt.applied)
			}
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) || errors.Is(err, session.ErrRolloutFailed) != tt.failed {
				t.Fatalf("err %v, want one containing %q (a failed roll-out: %v)", err, tt.err, tt.failed)
			}
		})
	}
}
