package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"meshplane/api"
)

// TestAtRoundTrip: every read asked ?at= through the client answers as the
// controller's own At does, for the moment asked, and says it.
func TestAtRoundTrip(t *testing.T) {
	e := newEnv(t)
	setup(t, e.ctx, e.client)
	mid := e.head(t)
	report(t, e, "a")
	if e.head(t) <= mid {
		t.Fatal("the report appended nothing")
	}
	local := must(e.ctrl.At(e.ctx, api.At{Position: mid}))(t)
	remote := must(e.client.At(e.ctx, api.At{Position: mid}))(t)
	cases := []struct {
		name string
		call func(api.Service) (api.AsOfer, error)
	}{
		{"status", func(s api.Service) (api.AsOfer, error) { return s.Status(e.ctx, api.StatusRequest{}) }},
		{"node show", func(s api.Service) (api.AsOfer, error) { return s.NodeShow(e.ctx, "a") }},
		{"roster", func(s api.Service) (api.AsOfer, error) { return s.Roster(e.ctx, "a") }},
		{"roster history", func(s api.Service) (api.AsOfer, error) { return s.RosterHistory(e.ctx, "a") }},
		{"churn", func(s api.Service) (api.AsOfer, error) { return s.Churn(e.ctx, api.ChurnRequest{}) }},
		{"timeline", func(s api.Service) (api.AsOfer, error) { return s.Timeline(e.ctx, api.TimelineRequest{}) }},
		{"node list", func(s api.Service) (api.AsOfer, error) { return s.NodeList(e.ctx) }},
		{"module list", func(s api.Service) (api.AsOfer, error) { return s.ModuleList(e.ctx) }},
		{"module show", func(s api.Service) (api.AsOfer, error) { return s.ModuleShow(e.ctx, "forge") }},
		{"resources", func(s api.Service) (api.AsOfer, error) { return s.Resources(e.ctx, "a") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := must(tc.call(local))(t)
			got := must(tc.call(remote))(t)
			if m := got.Moment(); m == nil || m.Position != mid || m.Time.IsZero() {
				t.Errorf("answers for %+v, want position %d and its time", m, mid)
			}
			a, _ := json.Marshal(want)
			b, _ := json.Marshal(got)
			if string(a) != string(b) {
				t.Errorf("over HTTP:\n%s\nwant\n%s", b, a)
			}
		})
	}
	// Before the report: a's status has no apply; now it has.
	st := must(remote.Status(e.ctx, api.StatusRequest{Nodes: []string{"a"}}))(t)
	now := must(e.client.Status(e.ctx, api.StatusRequest{Nodes: []string{"a"}}))(t)
	if st.Nodes[0].Applied != nil || now.Nodes[0].Applied == nil || now.AsOf != nil {
		t.Errorf("a applied at %d: %+v, now: %+v (as of %+v)", mid, st.Nodes[0].Applied, now.Nodes[0].Applied, now.AsOf)
	}
}

// TestAtRefused: a moment that does not parse is 400, one outside the
// history 422 invalid, and a write never takes one.
func TestAtRefused(t *testing.T) {
	e := newEnv(t)
	setup(t, e.ctx, e.client)
	past := strconv.FormatUint(e.head(t)+1, 10)
	tests := []struct {
		method, path, body string
		status             int
		says               string
	}{
		{http.MethodGet, "/v1/nodes?at=yesterday", "", http.StatusBadRequest, "RFC 3339"},
		{http.MethodGet, "/v1/nodes?at=0", "", http.StatusUnprocessableEntity, "before the first event"}, // as a time before it
		{http.MethodGet, "/v1/nodes?at=" + past, "", http.StatusUnprocessableEntity, "past the head"},
		{http.MethodGet, "/v1/churn?at=2020-01-01T00:00:00Z", "", http.StatusUnprocessableEntity, "before the first event"},
		{http.MethodPost, "/v1/nodes?at=1", `{"operator":"x","nodes":["z"]}`, http.StatusBadRequest, "a write never does"},
	}
	for _, tc := range tests {
		status, body := raw(t, e, tc.method, tc.path, "Bearer "+token, tc.body)
		if status != tc.status || !strings.Contains(body, tc.says) {
			t.Errorf("%s %s: %d %s; want %d saying %q", tc.method, tc.path, status, body, tc.status, tc.says)
		}
	}
	if nodes := must(e.client.NodeList(e.ctx))(t); len(nodes.Nodes) != 2 {
		t.Errorf("after the refused write: %d nodes, want 2", len(nodes.Nodes))
	}
}
