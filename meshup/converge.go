package meshup

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"meshplane/api"
	"meshplane/render"
)

// PollInterval is how often Converge asks for the nodes' status while it
// waits for their reports.
const PollInterval = 100 * time.Millisecond

// Pusher is what Converge needs of the controller: the nodes' status and
// a push (an api.Service has both; `mesh up --once` passes the API's
// client).
type Pusher interface {
	Status(ctx context.Context, req api.StatusRequest) (api.StatusResponse, error)
	Push(ctx context.Context, req api.PushRequest) (api.PushResponse, error)
}

// Converge is the convergence wait of `mesh up --once`: it pushes each of
// nodes as operator (saying each declaration pushed, or why the push
// failed, to w), then waits, at most timeout, until each node pushed has a
// report of that declaration recorded after the push. It returns the last
// status read and the nodes pushed with no such report (sorted; none when
// every node converged). A node whose push failed is not waited for.
func Converge(ctx context.Context, svc Pusher, operator string, nodes []string, timeout time.Duration, w io.Writer) (api.StatusResponse, []string, error) {
	// A report counts if it is recorded after the push: past the position
	// each node's last apply had before it (a declaration unchanged since
	// the last run is applied again by the agent that starts now).
	before, err := svc.Status(ctx, api.StatusRequest{})
	if err != nil {
		return api.StatusResponse{}, nil, fmt.Errorf("status: %w", err)
	}
	since := map[string]uint64{}
	for _, s := range before.Nodes {
		if s.Applied != nil {
			since[s.Node] = s.Applied.Position
		}
	}
	pushed := map[string]string{}
	for _, n := range nodes {
		res, err := svc.Push(ctx, api.PushRequest{Operator: operator, Node: n})
		if err != nil {
			return api.StatusResponse{}, nil, fmt.Errorf("push %s: %w", n, err)
		}
		for _, p := range res.Pushes {
			if p.Error != "" {
				fmt.Fprintf(w, "push  %-8s failed: %s\n", p.Node, render.Escape(p.Error))
				continue
			}
			pushed[p.Node] = p.Declaration
			fmt.Fprintf(w, "push  %-8s %s\n", p.Node, p.Declaration)
		}
	}

	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		st, err := svc.Status(wctx, api.StatusRequest{})
		if err != nil {
			return api.StatusResponse{}, nil, fmt.Errorf("status: %w", err)
		}
		missing := unreported(st, pushed, since)
		if len(missing) == 0 || wctx.Err() != nil {
			return st, missing, nil
		}
		select {
		case <-wctx.Done():
		case <-time.After(PollInterval):
		}
	}
}

// unreported are the nodes pushed whose report of that declaration is not
// recorded in st past position since[node] (sorted).
func unreported(st api.StatusResponse, pushed map[string]string, since map[string]uint64) []string {
	applied := map[string]string{}
	for _, s := range st.Nodes {
		if s.Applied != nil && s.Applied.Position > since[s.Node] {
			applied[s.Node] = s.Applied.Declaration
		}
	}
	var out []string
	for _, n := range slices.Sorted(maps.Keys(pushed)) {
		if applied[n] != pushed[n] {
			out = append(out, n)
		}
	}
	return out
}
