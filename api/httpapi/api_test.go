package httpapi_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/commands"
	"meshplane/events"
	"meshplane/internal/jsontest"
	"meshplane/projections"
)

// report records an apply of node's latest pushed declaration that
// created every resource, as the bus consumer would.
func report(t *testing.T, e *env, node string) {
	t.Helper()
	d, ok := e.bus.latest(node)
	if !ok {
		t.Fatalf("nothing was pushed to %s", node)
	}
	var created []string
	for _, r := range d.Resources {
		created = append(created, r.Name)
	}
	_, err := e.ctrl.RecordReport(e.ctx, commands.Delivery{
		Report: events.ApplyReported{
			Node: node, Declaration: d.ID, Digest: d.Digest, Sent: len(d.Resources), Applied: len(d.Resources), Created: created,
		},
		// Within the report door's bound of the test clock (from 22:00, a
		// second a reading): after the compose, not ahead of the clock.
		ApplyID: uuid.Must(uuid.NewV7()), AppliedAt: time.Date(2026, 9, 29, 22, 5, 0, 0, time.UTC), Correlation: d.Correlation,
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestQueriesRoundTrip asks every query both of the controller and over
// HTTP: the answers must be the same JSON.
func TestQueriesRoundTrip(t *testing.T) {
	e := newEnv(t)
	setup(t, e.ctx, e.client)
	report(t, e, "a")
	d, _ := e.bus.latest("a")
	resource := d.Resources[0].Name
	hist := must(e.ctrl.RosterHistory(e.ctx, "a"))(t)
	if len(hist.Declarations) < 2 {
		t.Fatalf("a has %d declarations, want at least 2", len(hist.Declarations))
	}
	first, last := hist.Declarations[0].Declaration, hist.Declarations[len(hist.Declarations)-1].Declaration

	cases := []struct {
		name string
		call func(api.Service) (any, error)
		want func(t *testing.T, v any) // a check of the answer beyond equality
	}{
		{"info", func(s api.Service) (any, error) { return s.Info(e.ctx) }, func(t *testing.T, v any) {
			i := v.(api.Info)
			if i.Role != api.RoleLeader || i.StoreHead == 0 || i.ProjectionPosition != i.StoreHead || i.Nodes != 2 || !i.Publishing {
				t.Errorf("info = %+v", i)
			}
		}},
		{"status all", func(s api.Service) (any, error) { return s.Status(e.ctx, api.StatusRequest{}) }, func(t *testing.T, v any) {
			st := v.(api.StatusResponse)
			if len(st.Nodes) != 2 || st.Nodes[0].Node != "a" || st.Nodes[0].Sync != projections.SyncInSync {
				t.Errorf("status = %+v", st.Nodes)
			}
		}},
		{"status one", func(s api.Service) (any, error) { return s.Status(e.ctx, api.StatusRequest{Nodes: []string{"b"}}) }, func(t *testing.T, v any) {
			st := v.(api.StatusResponse)
			if len(st.Nodes) != 1 || st.Nodes[0].Node != "b" || !st.Nodes[0].Modules["photos"].Taken {
				t.Errorf("status b = %+v", st.Nodes)
			}
		}},
		{"node show", func(s api.Service) (any, error) { return s.NodeShow(e.ctx, "a") }, func(t *testing.T, v any) {
			if ns := v.(api.NodeShow); !ns.Status.Modules["forge"].Assigned || ns.Holds == nil {
				t.Errorf("node show = %+v", ns)
			}
		}},
		{"timeline node", func(s api.Service) (any, error) {
			return s.Timeline(e.ctx, api.TimelineRequest{Node: "a", Limit: 5})
		}, func(t *testing.T, v any) {
			p := v.(api.TimelinePage)
			if len(p.Entries) != 5 || p.Next != p.Entries[0].Position {
				t.Errorf("timeline page: %d entries, next %d", len(p.Entries), p.Next)
			}
			for _, en := range p.Entries {
				if en.Node != "a" {
					t.Errorf("entry %d is of node %q", en.Position, en.Node)
				}
			}
		}},
		{"timeline type and time", func(s api.Service) (any, error) {
			return s.Timeline(e.ctx, api.TimelineRequest{Type: events.TypeApplyReported, Since: time.Date(2026, 9, 29, 0, 0, 0, 0, time.UTC), Until: time.Date(2026, 9, 30, 0, 0, 0, 0, time.UTC)})
		}, func(t *testing.T, v any) {
			if p := v.(api.TimelinePage); len(p.Entries) != 1 || p.Next != 0 {
				t.Errorf("applies: %+v", p)
			}
		}},
		{"why", func(s api.Service) (any, error) { return s.Why(e.ctx, api.WhyRequest{Node: "a", Resource: resource}) }, func(t *testing.T, v any) {
			w := v.(api.WhyResponse)
			if len(w.Touches) != 1 || w.Touches[0].Action != projections.ActionCreated || len(w.Touches[0].Push) == 0 {
				t.Errorf("why = %+v", w)
			}
		}},
		{"resources", func(s api.Service) (any, error) { return s.Resources(e.ctx, "a") }, func(t *testing.T, v any) {
			r := v.(api.NodeResources)
			if r.Applied == nil || r.Applied.Declaration != d.ID || len(r.Resources) != len(d.Resources) {
				t.Fatalf("resources = %+v, want every resource of %s", r, d.ID)
			}
			for i, rs := range r.Resources {
				if rs.Name != d.Resources[i].Name || rs.Outcome != projections.ActionCreated || rs.State == "" {
					t.Errorf("resource %d = %+v, want %s created", i, rs, d.Resources[i].Name)
				}
			}
		}},
		{"roster", func(s api.Service) (any, error) { return s.Roster(e.ctx, "a") }, func(t *testing.T, v any) {
			if r := v.(api.ComposedDecl); !slices.Contains(r.Roster, "forge.mesh.example") {
				t.Errorf("roster = %v", r.Roster)
			}
		}},
		{"roster history", func(s api.Service) (any, error) { return s.RosterHistory(e.ctx, "a") }, func(t *testing.T, v any) {
			h := v.(api.RosterHistory)
			if h.Declarations[0].Changed != nil || h.Declarations[1].Changed == nil {
				t.Errorf("history changes: %+v", h.Declarations)
			}
		}},
		{"roster diff", func(s api.Service) (any, error) {
			return s.RosterDiff(e.ctx, api.RosterDiffRequest{Node: "a", From: first, To: last})
		}, func(t *testing.T, v any) {
			if d := v.(api.RosterDiff); !slices.Contains(d.Added, "forge.mesh.example") {
				t.Errorf("diff = %+v", d)
			}
		}},
		{"diff", func(s api.Service) (any, error) { return s.Diff(e.ctx, api.DiffRequest{From: "1"}) }, func(t *testing.T, v any) {
			d := v.(api.MeshDiff)
			if d.From.Position != 1 || d.Events == 0 || len(d.Nodes) == 0 || len(d.Modules) == 0 {
				t.Errorf("diff = %+v", d)
			}
		}},
		{"churn", func(s api.Service) (any, error) { return s.Churn(e.ctx, api.ChurnRequest{}) }, func(t *testing.T, v any) {
			if c := v.(api.ChurnResponse); len(c.Nodes) != 2 || c.Nodes[0].Episodes == nil {
				t.Errorf("churn = %+v", c)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			direct, err := tc.call(e.ctrl)
			if err != nil {
				t.Fatalf("controller: %v", err)
			}
			remote, err := tc.call(e.client)
			if err != nil {
				t.Fatalf("client: %v", err)
			}
			a, _ := json.Marshal(direct)
			b, _ := json.Marshal(remote)
			if !bytes.Equal(a, b) {
				t.Errorf("over HTTP the answer differs:\ncontroller %s\nclient     %s", a, b)
			}
			tc.want(t, remote)
		})
	}
}

// TestCommandsRoundTrip runs every command over HTTP and reads its effect
// back (read-your-writes: the next query sees it).
func TestCommandsRoundTrip(t *testing.T) {
	e := newEnv(t)
	c := e.client
	op := "tester"
	cases := []struct {
		name  string
		call  func() (api.CommandResult, error)
		check func(t *testing.T)
	}{
		{"register", func() (api.CommandResult, error) {
			return c.RegisterNodes(e.ctx, api.RegisterNodesRequest{Operator: op, Nodes: []string{"a", "b"}})
		}, func(t *testing.T) {
			if st := must(c.Status(e.ctx, api.StatusRequest{}))(t); len(st.Nodes) != 2 {
				t.Errorf("%d nodes", len(st.Nodes))
			}
		}},
		{"define", func() (api.CommandResult, error) {
			return c.DefineModules(e.ctx, api.DefineModulesRequest{Operator: op, Modules: []api.ModuleDefinition{module("forge")}})
		}, nil},
		{"record artifact", func() (api.CommandResult, error) {
			return c.RecordArtifact(e.ctx, api.RecordArtifactRequest{Operator: op, Module: "forge", Name: "web", Digest: "sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0"})
		}, nil},
		{"set setting", func() (api.CommandResult, error) {
			return c.SetSetting(e.ctx, api.SetSettingRequest{Operator: op, Node: "a", Key: events.SettingPortPrefix + "web", Value: "8080"})
		}, nil},
		{"adopt", func() (api.CommandResult, error) { return c.AdoptNode(e.ctx, api.NodeRequest{Operator: op, Node: "b"}) }, func(t *testing.T) {
			if ns := must(c.NodeShow(e.ctx, "b"))(t); !ns.Status.Adopted {
				t.Error("b is not adopted")
			}
		}},
		{"assign", func() (api.CommandResult, error) {
			return c.Assign(e.ctx, api.ModuleNodeRequest{Operator: op, Module: "forge", Node: "b"})
		}, func(t *testing.T) {
			if ns := must(c.NodeShow(e.ctx, "b"))(t); !ns.Status.Modules["forge"].Assigned {
				t.Error("forge is not assigned to b")
			}
		}},
		{"take", func() (api.CommandResult, error) {
			return c.Take(e.ctx, api.ModuleNodeRequest{Operator: op, Module: "forge", Node: "b"})
		}, func(t *testing.T) {
			if ns := must(c.NodeShow(e.ctx, "b"))(t); !ns.Status.Modules["forge"].Taken {
				t.Error("forge is not taken on b")
			}
		}},
		{"release", func() (api.CommandResult, error) {
			return c.Release(e.ctx, api.ModuleNodeRequest{Operator: op, Module: "forge", Node: "b"})
		}, func(t *testing.T) {
			if ns := must(c.NodeShow(e.ctx, "b"))(t); ns.Status.Modules["forge"].Assigned {
				t.Error("forge is still assigned to b")
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := e.head(t)
			res, err := tc.call()
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Results) == 0 || len(res.Results[0].Events) == 0 {
				t.Fatalf("appended nothing: %+v", res)
			}
			ev := res.Results[0].Events[0]
			if ev.Position <= before || ev.Stream != res.Results[0].Stream || ev.Type == "" || ev.ID == "" {
				t.Errorf("event ref %+v (head before %d)", ev, before)
			}
			// The actor is the operator.
			page := must(c.Timeline(e.ctx, api.TimelineRequest{After: ev.Position - 1, Forward: true, Limit: 1}))(t)
			if len(page.Entries) != 1 || page.Entries[0].Actor != "operator:"+op {
				t.Errorf("the event's entry: %+v", page.Entries)
			}
			if tc.check != nil {
				tc.check(t)
			}
		})
	}
	t.Run("push one", func(t *testing.T) {
		res := must(c.Push(e.ctx, api.PushRequest{Operator: op, Node: "a"}))(t)
		if len(res.Pushes) != 1 || res.Pushes[0].Node != "a" || res.Pushes[0].Declaration == "" || res.Pushes[0].Error != "" {
			t.Errorf("push a: %+v", res)
		}
	})
	t.Run("push all", func(t *testing.T) {
		res := must(c.Push(e.ctx, api.PushRequest{Operator: op}))(t)
		if len(res.Pushes) != 2 {
			t.Errorf("push all: %+v", res)
		}
	})
}

// TestRejections: every refusal arrives over HTTP as the same
// *commands.Rejection, with its code and HTTP status, and appends nothing.
func TestRejections(t *testing.T) {
	e := newEnv(t)
	setup(t, e.ctx, e.client)
	op := "tester"
	cases := []struct {
		name   string
		call   func(api.Service) error
		code   string
		status int
	}{
		{"invalid node name", func(s api.Service) error {
			_, err := s.RegisterNodes(e.ctx, api.RegisterNodesRequest{Operator: op, Nodes: []string{"Bad Name"}})
			return err
		}, commands.CodeInvalid, http.StatusUnprocessableEntity},
		{"no operator", func(s api.Service) error {
			_, err := s.AdoptNode(e.ctx, api.NodeRequest{Node: "a"})
			return err
		}, commands.CodeInvalid, http.StatusUnprocessableEntity},
		{"module unknown", func(s api.Service) error {
			_, err := s.Assign(e.ctx, api.ModuleNodeRequest{Operator: op, Module: "nope", Node: "a"})
			return err
		}, commands.CodeModuleUnknown, http.StatusNotFound},
		{"node unknown (command)", func(s api.Service) error {
			_, err := s.AdoptNode(e.ctx, api.NodeRequest{Operator: op, Node: "ghost"})
			return err
		}, commands.CodeNodeUnknown, http.StatusNotFound},
		{"node unknown (query)", func(s api.Service) error {
			_, err := s.NodeShow(e.ctx, "ghost")
			return err
		}, commands.CodeNodeUnknown, http.StatusNotFound},
		{"node unknown (status)", func(s api.Service) error {
			_, err := s.Status(e.ctx, api.StatusRequest{Nodes: []string{"a", "ghost"}})
			return err
		}, commands.CodeNodeUnknown, http.StatusNotFound},
		{"node unknown (resources)", func(s api.Service) error {
			_, err := s.Resources(e.ctx, "ghost")
			return err
		}, commands.CodeNodeUnknown, http.StatusNotFound},
		{"node unknown (push)", func(s api.Service) error {
			_, err := s.Push(e.ctx, api.PushRequest{Operator: op, Node: "ghost"})
			return err
		}, commands.CodeNodeUnknown, http.StatusNotFound},
		{"declaration unknown", func(s api.Service) error {
			_, err := s.RosterDiff(e.ctx, api.RosterDiffRequest{Node: "a", From: "a/1", To: "a/999"})
			return err
		}, api.CodeDeclarationUnknown, http.StatusNotFound},
		{"not assigned", func(s api.Service) error {
			_, err := s.Take(e.ctx, api.ModuleNodeRequest{Operator: op, Module: "forge", Node: "b"})
			return err
		}, commands.CodeNotAssigned, http.StatusConflict},
		{"not adopted", func(s api.Service) error {
			_, err := s.Take(e.ctx, api.ModuleNodeRequest{Operator: op, Module: "forge", Node: "a"})
			return err
		}, commands.CodeNotAdopted, http.StatusConflict},
		{"timeline limit", func(s api.Service) error {
			_, err := s.Timeline(e.ctx, api.TimelineRequest{Limit: api.MaxTimelineLimit + 1})
			return err
		}, commands.CodeInvalid, http.StatusUnprocessableEntity},
		{"register batch with a refused node", func(s api.Service) error {
			_, err := s.RegisterNodes(e.ctx, api.RegisterNodesRequest{Operator: op, Nodes: []string{"c", "Bad Name", "d"}})
			return err
		}, commands.CodeInvalid, http.StatusUnprocessableEntity},
		{"register batch naming a node twice", func(s api.Service) error {
			_, err := s.RegisterNodes(e.ctx, api.RegisterNodesRequest{Operator: op, Nodes: []string{"c", "c"}})
			return err
		}, commands.CodeInvalid, http.StatusUnprocessableEntity},
		{"revert to before the module was defined", func(s api.Service) error {
			_, err := s.Revert(e.ctx, api.RevertRequest{Operator: op, Module: "forge", To: "2"}) // nodes a and b registered, forge not yet
			return err
		}, commands.CodeModuleUnknown, http.StatusNotFound},
		{"diff backwards", func(s api.Service) error {
			_, err := s.Diff(e.ctx, api.DiffRequest{From: "2", To: "1"})
			return err
		}, commands.CodeInvalid, http.StatusUnprocessableEntity},
		{"diff from no moment", func(s api.Service) error {
			_, err := s.Diff(e.ctx, api.DiffRequest{})
			return err
		}, commands.CodeInvalid, http.StatusUnprocessableEntity},
		{"revert to no moment", func(s api.Service) error {
			_, err := s.Revert(e.ctx, api.RevertRequest{Operator: op, Module: "forge", To: "yesterday"})
			return err
		}, commands.CodeInvalid, http.StatusUnprocessableEntity},
		{"define batch with a bad spec", func(s api.Service) error {
			bad := module("broken")
			bad.Spec.Containers[0].Image = "" // neither image nor artifact
			_, err := s.DefineModules(e.ctx, api.DefineModulesRequest{Operator: op, Modules: []api.ModuleDefinition{module("fine"), bad}})
			return err
		}, commands.CodeInvalid, http.StatusUnprocessableEntity},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, side := range []struct {
				name string
				svc  api.Service
			}{{"controller", e.ctrl}, {"client", e.client}} {
				before := e.head(t)
				err := tc.call(side.svc)
				var rej *commands.Rejection
				if !errors.As(err, &rej) || !errors.Is(err, commands.ErrRejected) {
					t.Fatalf("%s: got %v, want a *commands.Rejection", side.name, errString(err))
				}
				if rej.Code != tc.code {
					t.Errorf("%s: code %q (%s), want %q", side.name, rej.Code, rej.Msg, tc.code)
				}
				if after := e.head(t); after != before {
					t.Errorf("%s: a refusal appended %d event(s)", side.name, after-before)
				}
			}
			if got := httpapi.StatusOf(tc.code); got != tc.status {
				t.Errorf("status of %s: %d, want %d", tc.code, got, tc.status)
			}
		})
	}
}

// raw sends one request as is.
func raw(t *testing.T, e *env, method, path, auth, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(e.ctx, method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHTTPErrors: requests that do not parse are 400 with code invalid;
// the error form is the documented JSON.
func TestHTTPErrors(t *testing.T) {
	e := newEnv(t)
	setup(t, e.ctx, e.client)
	bearer := "Bearer " + token
	cases := []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"bad json", "POST", "/v1/nodes", `{"operator":`, 400, "invalid"},
		{"unknown field", "POST", "/v1/nodes", `{"operator":"x","nodes":["z"],"extra":1}`, 400, "invalid"},
		{"two values", "POST", "/v1/nodes", `{"operator":"x","nodes":["z"]} {}`, 400, "invalid"},
		{"body names another node", "POST", "/v1/nodes/a/adopt", `{"operator":"x","node":"b"}`, 400, "invalid"},
		{"bad since", "GET", "/v1/timeline?since=yesterday", "", 400, "invalid"},
		{"bad cursor", "GET", "/v1/timeline?after=-1", "", 400, "invalid"},
		{"diff without to", "GET", "/v1/nodes/a/roster/diff?from=a/1", "", 400, "invalid"},
		{"why without resource", "GET", "/v1/nodes/a/why", "", 400, "invalid"},
		{"push all naming a node", "POST", "/v1/push", `{"operator":"x","node":"a"}`, 400, "invalid"},
		{"too large", "POST", "/v1/modules", `{"operator":"x","modules":[` + strings.Repeat(" ", httpapi.DefaultMaxBody) + `]}`, 413, "too-large"},
		{"node unknown", "GET", "/v1/nodes/ghost", "", 404, "node-unknown"},
		{"conflict", "POST", "/v1/nodes/a/modules/photos/take", `{"operator":"x"}`, 409, "not-adopted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := e.head(t)
			status, body := raw(t, e, tc.method, tc.path, bearer, tc.body)
			if status != tc.status {
				t.Errorf("status %d, want %d (%s)", status, tc.status, body)
			}
			var eb struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal([]byte(body), &eb); err != nil || eb.Error.Code != tc.code || eb.Error.Message == "" {
				t.Errorf("body %s, want code %q and a message", body, tc.code)
			}
			if e.head(t) != before {
				t.Error("a refused request appended events")
			}
		})
	}
}

// TestUnauthorized: without the token, or with another, every route is
// 401 and nothing is appended or answered.
func TestUnauthorized(t *testing.T) {
	e := newEnv(t)
	setup(t, e.ctx, e.client)
	routes := []struct{ method, path, body string }{
		{"GET", "/v1/info", ""},
		{"GET", "/v1/nodes", ""},
		{"GET", "/v1/timeline", ""},
		{"GET", "/v1/nodes/a/why?resource=x", ""},
		{"POST", "/v1/nodes", `{"operator":"x","nodes":["mallory"]}`},
		{"POST", "/v1/nodes/a/modules/photos/assign", `{"operator":"x"}`},
		{"PUT", "/v1/nodes/a/settings/private-address", `{"operator":"x","value":"6.6.6.6"}`},
		{"POST", "/v1/push", `{"operator":"x"}`},
		{"GET", "/v1/no-such-route", ""},
	}
	auths := []struct{ name, header string }{
		{"none", ""},
		{"wrong token", "Bearer not-the-token"},
		{"prefix of the token", "Bearer " + token[:len(token)-1]},
		{"empty bearer", "Bearer "},
		{"basic", "Basic " + token},
		{"no scheme", token},
	}
	pushes := func() int {
		e.bus.mu.Lock()
		defer e.bus.mu.Unlock()
		n := 0
		for _, ds := range e.bus.puts {
			n += len(ds)
		}
		return n
	}
	for _, a := range auths {
		for _, r := range routes {
			t.Run(a.name+" "+r.method+" "+r.path, func(t *testing.T) {
				before, pushed := e.head(t), pushes()
				status, body := raw(t, e, r.method, r.path, a.header, r.body)
				if status != http.StatusUnauthorized || !strings.Contains(body, `"code":"unauthorized"`) {
					t.Errorf("status %d body %s, want 401 unauthorized", status, body)
				}
				if strings.Contains(body, `"nodes"`) || strings.Contains(body, `"entries"`) {
					t.Errorf("a refused request was answered: %s", body)
				}
				if e.head(t) != before || pushes() != pushed {
					t.Error("a request without the token changed the mesh")
				}
			})
		}
	}
	t.Run("client with a wrong token", func(t *testing.T) {
		c, err := httpapi.NewClient(e.srv.URL, "wrong")
		if err != nil {
			t.Fatal(err)
		}
		before := e.head(t)
		if _, err := c.RegisterNodes(e.ctx, api.RegisterNodesRequest{Operator: "x", Nodes: []string{"mallory"}}); !errors.Is(err, httpapi.ErrUnauthorized) {
			t.Errorf("got %v, want ErrUnauthorized", err)
		}
		if _, err := c.Status(e.ctx, api.StatusRequest{}); !errors.Is(err, httpapi.ErrUnauthorized) {
			t.Errorf("got %v, want ErrUnauthorized", err)
		}
		if e.head(t) != before {
			t.Error("appended")
		}
	})
	t.Run("a handler with no token refuses everything", func(t *testing.T) {
		h := httpapi.Handler(e.ctrl, "")
		for _, header := range []string{"", "Bearer ", "Bearer x"} {
			req, _ := http.NewRequest("GET", "/v1/info", nil)
			if header != "" {
				req.Header.Set("Authorization", header)
			}
			w := newRecorder()
			h.ServeHTTP(w, req)
			if w.status != http.StatusUnauthorized {
				t.Errorf("%q: status %d", header, w.status)
			}
		}
	})
}

// recorder is a minimal http.ResponseWriter.
type recorder struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func newRecorder() *recorder                    { return &recorder{h: http.Header{}} }
func (r *recorder) Header() http.Header         { return r.h }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(s int)           { r.status = s }

// TestTimelinePaging: paging back with before, and forward with after,
// returns every match exactly once, in order, for several page sizes and
// filters.
func TestTimelinePaging(t *testing.T) {
	e := newEnv(t)
	setup(t, e.ctx, e.client)
	var nodes []string
	for i := range 20 {
		nodes = append(nodes, "n"+string(rune('a'+i)))
	}
	must(e.client.RegisterNodes(e.ctx, api.RegisterNodesRequest{Operator: "x", Nodes: nodes}))(t)
	for i, n := range nodes {
		must(e.client.SetSetting(e.ctx, api.SetSettingRequest{Operator: "x", Node: n, Key: events.SettingPortPrefix + "web", Value: "80"}))(t)
		if i%3 == 0 {
			must(e.client.Assign(e.ctx, api.ModuleNodeRequest{Operator: "x", Module: "forge", Node: n}))(t)
		}
	}
	filters := []api.TimelineRequest{
		{},
		{Node: "a"},
		{Type: events.TypeDeclarationComposed},
		{Module: "forge"},
		{Node: "nd", Since: time.Date(2026, 9, 29, 22, 1, 0, 0, time.UTC)},
		{Node: "a", Type: events.TypeModuleTaken}, // none: an empty page (an unknown node is refused: TestUnknownNamesRefused)
		{Node: "na", Type: "node."},               // a prefix: the pages of two types, merged
		{Node: "a", Type: "declaration."},
	}
	for _, f := range filters {
		all := f
		all.Limit = api.MaxTimelineLimit
		want := must(e.ctrl.Timeline(e.ctx, all))(t).Entries
		if f.Node == "" && len(want) < 60 {
			t.Fatalf("only %d entries: the test needs more", len(want))
		}
		for _, limit := range []int{3, 7, 50, 1000} {
			if limit < 20 && len(want) > 300 {
				continue // hundreds of tiny pages prove no more than fifty, and take seconds under -race
			}
			name := strings.Trim(strings.ReplaceAll(string(must(json.Marshal(f))(t)), `"`, ""), "{}")
			t.Run(name+"/limit "+itoa(limit), func(t *testing.T) {
				for _, dir := range []string{"back", "forward"} {
					var got []api.Entry
					req := f
					req.Limit = limit
					req.Forward = dir == "forward"
					for pages := 0; ; pages++ {
						if pages > len(want)+2 {
							t.Fatalf("%s: paging does not end", dir)
						}
						p := must(e.client.Timeline(e.ctx, req))(t)
						if len(p.Entries) > limit {
							t.Fatalf("%s: page of %d, limit %d", dir, len(p.Entries), limit)
						}
						if dir == "back" {
							got = append(slices.Clone(p.Entries), got...)
							req.Before = p.Next
						} else {
							got = append(got, p.Entries...)
							req.After = p.Next
						}
						if p.Next == 0 {
							break
						}
					}
					if !slices.EqualFunc(got, want, func(a, b api.Entry) bool { return a.Position == b.Position }) {
						t.Errorf("%s: paged %d entries, want %d exactly once in order", dir, len(got), len(want))
					}
				}
			})
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestTheDoor: every request body is decoded strictly (a key given twice,
// or in another case, is 400 invalid, naming the key), and every field a
// request names is checked before anything is appended (422 invalid,
// naming the field or the rule, in the words the CLI's refusal has):
// nothing is appended, nothing is a 500.
func TestTheDoor(t *testing.T) {
	e := newEnv(t)
	setup(t, e.ctx, e.client)
	bearer := "Bearer " + token
	long := strings.Repeat("o", 5000)
	many := `["n0"` + strings.Repeat(`,"n"`, api.MaxRequestItems) + `]`
	cases := []struct {
		name, method, path, body string
		status                   int
		want                     string // in the message
	}{
		// The body, strictly.
		{"operator twice", "POST", "/v1/nodes", `{"operator":"alice","operator":"mallory","nodes":["z"]}`, 400, "operator: given twice"},
		{"operator in another case", "POST", "/v1/nodes", `{"Operator":"mallory","nodes":["z"]}`, 400, `Operator: not a field: the field is "operator"`},
		{"operator twice, escaped", "POST", "/v1/nodes", `{"operator":"alice","\u006fperator":"mallory","nodes":["z"]}`, 400, "operator: given twice"},
		{"a key twice in a spec", "POST", "/v1/modules", `{"operator":"x","modules":[{"module":"m","spec":{"containers":[{"name":"a","name":"b","image":"i"}]}}]}`, 400,
			"modules[0].spec.containers[0].name: given twice"},
		{"an env key twice", "POST", "/v1/modules", `{"operator":"x","modules":[{"module":"m","spec":{"containers":[{"name":"a","image":"i","env":{"A":"1","A":"2"}}]}}]}`, 400,
			"env.A: given twice"},
		{"a body not UTF-8", "POST", "/v1/nodes", "{\"operator\":\"a\xffb\",\"nodes\":[\"z\"]}", 400, "operator: not valid UTF-8"},
		// The operator.
		{"a NUL in the operator", "POST", "/v1/nodes", `{"operator":"a\u0000b","nodes":["z"]}`, 422, `operator "a\x00b": byte 1 is U+0000`},
		{"a newline in the operator", "POST", "/v1/nodes/a/adopt", `{"operator":"alice\nroot"}`, 422, "byte 5 is U+000A"},
		{"a 5,000-byte operator", "POST", "/v1/nodes", `{"operator":"` + long + `","nodes":["z"]}`, 422, "5000 bytes, over the limit of 128"},
		{"a 5,000-byte operator of a push", "POST", "/v1/push", `{"operator":"` + long + `"}`, 422, "(5000 bytes): 5000 bytes, over the limit of 128"},
		{"no operator", "POST", "/v1/nodes/a/modules/forge/release", `{}`, 422, "names no operator"},
		// Names, by the one rule.
		{"a node x..y", "POST", "/v1/nodes", `{"operator":"x","nodes":["a1","x..y"]}`, 422, `node name "x..y": byte 1 is '.'`},
		{"a 5,000-byte node", "POST", "/v1/nodes", `{"operator":"x","nodes":["` + long + `"]}`, 422, `node name "oooooooooooooooooooooooooooooooooooooooo"… (5000 bytes)`},
		{"too many nodes", "POST", "/v1/nodes", `{"operator":"x","nodes":` + many + `}`, 422, "nodes: 10001 items, over the limit of 10000"},
		{"a module Bad Name/../x", "POST", "/v1/modules", `{"operator":"x","modules":[{"module":"Bad Name/../x","spec":{}}]}`, 422, `module name "Bad Name/../x": byte 0 is 'B'`},
		{"an artifact name", "POST", "/v1/modules/forge/artifacts", `{"operator":"x","name":"forge/../w","digest":"sha256:` + strings.Repeat("a", 64) + `"}`, 422, `artifact name "forge/../w": segment "..": byte 0 is '.'`},
		{"a digest", "POST", "/v1/modules/forge/artifacts", `{"operator":"x","name":"forge/web","digest":"md5:x"}`, 422, `artifact forge/web: digest "md5:x" is not sha256:`},
		{"a setting key of 5,000 bytes", "PUT", "/v1/nodes/a/settings/" + long, `{"operator":"x","value":"1"}`, 422, `unknown node setting "oooooooooooooooooooooooooooooooooooooooo"… (5000 bytes)`},
		{"a node of 5,000 bytes, assigned", "POST", "/v1/nodes/" + long + "/modules/forge/assign", `{"operator":"x"}`, 422, `node name "oooo`},
		// Reads: bounded names (history may hold names older builds took).
		{"a node of 5,000 bytes, read", "GET", "/v1/nodes/" + long, "", 422, "node: 5000 bytes, over the limit of 512"},
		{"a timeline filter of 5,000 bytes", "GET", "/v1/timeline?correlation=" + long, "", 422, "correlation: 5000 bytes"},
		{"a NUL in a status node", "GET", "/v1/nodes?node=a%00b", "", 422, "node[0]: byte 1 is U+0000"},
		{"a plan command of 5,000 bytes", "POST", "/v1/plan", `{"after":["` + long + `"]}`, 422, "after[0]: 5000 bytes, over the limit of 1024"},
		{"a plan of too many nodes", "POST", "/v1/plan", `{"nodes":` + many + `}`, 422, "nodes: 10001 items"},
		{"a projection name of 5,000 bytes", "POST", "/v1/rebuild", `{"projections":["` + long + `"]}`, 422, "projections[0]: 5000 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := e.head(t)
			status, body := raw(t, e, tc.method, tc.path, bearer, tc.body)
			var eb struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal([]byte(body), &eb); err != nil {
				t.Fatalf("body %.300s: %v", body, err)
			}
			if status != tc.status || eb.Error.Code != commands.CodeInvalid || !strings.Contains(eb.Error.Message, tc.want) {
				t.Fatalf("%d %s %.300q, want %d invalid saying %q", status, eb.Error.Code, eb.Error.Message, tc.status, tc.want)
			}
			if len(body) > 2000 {
				t.Errorf("the answer is %d bytes: the input is not shortened", len(body))
			}
			if e.head(t) != before {
				t.Error("a refused request appended events")
			}
		})
	}
	// The controller, asked by the CLI (not over HTTP), refuses the same
	// operators.
	for _, op := range []string{"a\x00b", long, "alice\n"} {
		before := e.head(t)
		_, err := e.ctrl.AdoptNode(e.ctx, api.NodeRequest{Operator: op, Node: "a"})
		var rej *commands.Rejection
		if !errors.As(err, &rej) || rej.Code != commands.CodeInvalid || e.head(t) != before {
			t.Errorf("operator %.20q: %v", op, err)
		}
	}
}

// FuzzRequestBody: whatever a body holds, a command is answered with no
// 500, and one the controller takes gave no key twice and named a valid
// operator.
func FuzzRequestBody(f *testing.F) {
	for _, s := range []string{
		`{"operator":"x","nodes":["z"]}`, `{"operator":"x","operator":"y","nodes":["z"]}`, `{"Operator":"x","nodes":["z"]}`,
		`{"operator":"a\u0000b","nodes":["z"]}`, `{"operator":"x","nodes":["x..y"]}`, `{"operator":"x","nodes":[]}`, `{}`, ``, `[]`, `null`,
		`{"operator":"x","modules":[{"module":"m","spec":{"containers":[{"name":"a","image":"i","env":{"A":"1","a":"2"}}]}}]}`,
	} {
		f.Add(s)
	}
	e := newEnv(f)
	setup(f, e.ctx, e.client)
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{"/v1/nodes", "/v1/modules"} {
			req, err := http.NewRequestWithContext(e.ctx, "POST", e.srv.URL+path, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				t.Fatalf("POST %s %q: %d %s", path, body, resp.StatusCode, b)
			}
			if resp.StatusCode == http.StatusOK {
				if dup, err := jsontest.HasDuplicateKey([]byte(body)); err != nil || dup {
					t.Fatalf("POST %s %q taken, with a key twice (%v)", path, body, err)
				}
				var v struct{ Operator string }
				_ = json.Unmarshal([]byte(body), &v)
				if err := commands.CheckOperator(v.Operator); err != nil {
					t.Fatalf("POST %s %q taken, for operator %q: %v", path, body, v.Operator, err)
				}
			}
		}
	})
}
