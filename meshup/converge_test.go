package meshup

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"meshplane/api"
)

// TestUnreported: up --once waits for a report of the declaration pushed,
// recorded after the push; a node with none is named.
func TestUnreported(t *testing.T) {
	applied := func(node, decl string, pos uint64) api.NodeStatus {
		return api.NodeStatus{Node: node, Applied: &api.ApplyRecord{DeclMark: api.DeclMark{Declaration: decl, Position: pos}}}
	}
	for _, tc := range []struct {
		name   string
		nodes  []api.NodeStatus
		pushed map[string]string
		since  map[string]uint64
		want   []string
	}{
		{"reported", []api.NodeStatus{applied("a", "a/1", 5)}, map[string]string{"a": "a/1"}, nil, nil},
		{"never applied", []api.NodeStatus{{Node: "a"}}, map[string]string{"a": "a/1"}, nil, []string{"a"}},
		{"an older declaration", []api.NodeStatus{applied("a", "a/1", 5)}, map[string]string{"a": "a/2"}, nil, []string{"a"}},
		{"the apply before the push", []api.NodeStatus{applied("a", "a/1", 5)}, map[string]string{"a": "a/1"}, map[string]uint64{"a": 5}, []string{"a"}},
		{"applied again after the push", []api.NodeStatus{applied("a", "a/1", 9)}, map[string]string{"a": "a/1"}, map[string]uint64{"a": 5}, nil},
		{"not pushed is not waited for", []api.NodeStatus{{Node: "b"}}, map[string]string{}, nil, nil},
		{"sorted", []api.NodeStatus{{Node: "b"}, {Node: "a"}}, map[string]string{"b": "b/1", "a": "a/1"}, nil, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := unreported(api.StatusResponse{Nodes: tc.nodes}, tc.pushed, tc.since)
			if !slices.Equal(got, tc.want) {
				t.Errorf("unreported = %v, want %v", got, tc.want)
			}
		})
	}
}

// fakeController answers Converge: the status before the push, then one
// status per poll (the last repeated), and a push per node.
type fakeController struct {
	statuses  [][]api.NodeStatus
	polls     int
	pushes    map[string]api.PushResult
	pushErr   error
	statusErr error
	operators []string
}

func (f *fakeController) Status(ctx context.Context, req api.StatusRequest) (api.StatusResponse, error) {
	if f.statusErr != nil {
		return api.StatusResponse{}, f.statusErr
	}
	i := min(f.polls, len(f.statuses)-1)
	f.polls++
	return api.StatusResponse{Nodes: f.statuses[i]}, nil
}

func (f *fakeController) Push(ctx context.Context, req api.PushRequest) (api.PushResponse, error) {
	f.operators = append(f.operators, req.Operator)
	if f.pushErr != nil {
		return api.PushResponse{}, f.pushErr
	}
	return api.PushResponse{Pushes: []api.PushResult{f.pushes[req.Node]}}, nil
}

// TestConverge: up --once pushes each node, says what it pushed, and waits
// until each node pushed reports that declaration after the push; a node
// that does not within the timeout is named; a failed push is said and not
// waited for; a push or status the controller refuses is the error.
func TestConverge(t *testing.T) {
	applied := func(node, decl string, pos uint64) api.NodeStatus {
		return api.NodeStatus{Node: node, Applied: &api.ApplyRecord{DeclMark: api.DeclMark{Declaration: decl, Position: pos}}}
	}
	boom := errors.New("boom")
	pushes := map[string]api.PushResult{"a": {Node: "a", Declaration: "a/2"}, "b": {Node: "b", Declaration: "b/1"}}
	for _, tc := range []struct {
		name      string
		f         *fakeController
		timeout   time.Duration
		missing   []string
		out       string
		err       error
		errSays   string
		minPolls  int
		minWaited time.Duration
	}{
		{
			name: "both report, b on the second poll",
			f: &fakeController{pushes: pushes, statuses: [][]api.NodeStatus{
				{applied("a", "a/1", 5)},
				{applied("a", "a/2", 7), {Node: "b"}},
				{applied("a", "a/2", 7), applied("b", "b/1", 8)},
			}},
			timeout: 10 * time.Second, out: "push  a        a/2\npush  b        b/1\n", minPolls: 3,
		},
		{
			name: "b never reports",
			f: &fakeController{pushes: pushes, statuses: [][]api.NodeStatus{
				{applied("b", "b/1", 5)},
				{applied("a", "a/2", 7), applied("b", "b/1", 5)},
			}},
			timeout: 300 * time.Millisecond, missing: []string{"b"}, out: "push  a        a/2\npush  b        b/1\n", minWaited: 300 * time.Millisecond,
		},
		{
			name: "b's push failed",
			f: &fakeController{pushes: map[string]api.PushResult{"a": pushes["a"], "b": {Node: "b", Error: "compose: no module m"}}, statuses: [][]api.NodeStatus{
				nil,
				{applied("a", "a/2", 7), {Node: "b"}},
			}},
			timeout: 10 * time.Second, out: "push  a        a/2\npush  b        failed: compose: no module m\n",
		},
		{name: "a push refused", f: &fakeController{pushErr: boom, statuses: [][]api.NodeStatus{nil}}, timeout: time.Second, err: boom, errSays: "push a: boom"},
		{name: "status refused", f: &fakeController{statusErr: boom}, timeout: time.Second, err: boom, errSays: "status: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			start := time.Now()
			st, missing, err := Converge(context.Background(), tc.f, "op", []string{"a", "b"}, tc.timeout, &out)
			waited := time.Since(start)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || err.Error() != tc.errSays {
					t.Fatalf("error %v, want %q", err, tc.errSays)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(missing, tc.missing) {
				t.Errorf("missing %v, want %v", missing, tc.missing)
			}
			if out.String() != tc.out {
				t.Errorf("output %q, want %q", out.String(), tc.out)
			}
			if tc.f.polls < tc.minPolls {
				t.Errorf("%d status reads, want at least %d", tc.f.polls, tc.minPolls)
			}
			if waited < tc.minWaited {
				t.Errorf("gave up after %s, want at least %s", waited, tc.minWaited)
			}
			if last := tc.f.statuses[len(tc.f.statuses)-1]; len(st.Nodes) != len(last) {
				t.Errorf("status returned %+v, want the last read %+v", st.Nodes, last)
			}
			if !slices.Equal(tc.f.operators, []string{"op", "op"}) {
				t.Errorf("pushed as %v, want op for each node", tc.f.operators)
			}
		})
	}
}
