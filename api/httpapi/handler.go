package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"time"

	"meshplane/api"
	"meshplane/events"
)

// DefaultMaxBody bounds a request body (module specs are the largest).
const DefaultMaxBody = 4 << 20

// HandlerOption configures Handler.
type HandlerOption func(*handler)

// WithMaxBody bounds request bodies to n bytes (DefaultMaxBody otherwise).
func WithMaxBody(n int64) HandlerOption { return func(h *handler) { h.maxBody = n } }

// WithLogger logs failures (500s) to l (slog.Default otherwise).
func WithLogger(l *slog.Logger) HandlerOption { return func(h *handler) { h.log = l } }

// Authenticator tells whose a per-operator API token is (the
// controller's Authenticate): the operator it was made for, or an error
// wrapping api.ErrTokenRefused for a token refused (unknown, revoked,
// expired), answered 401 with its message. Any other error is the
// controller failing (500).
type Authenticator func(ctx context.Context, secret string) (operator string, err error)

// WithAuthenticator accepts, beside the bootstrap token, per-operator
// tokens told by auth. A request made with one is the token's operator's:
// the "operator" of its body is overwritten with the token's name before
// the service sees it, whatever the client sent.
func WithAuthenticator(auth Authenticator) HandlerOption {
	return func(h *handler) { h.auth = auth }
}

type handler struct {
	auth    Authenticator
	gate    *Gate
	svc     api.Service
	maxBody int64
	log     *slog.Logger
	mux     *http.ServeMux
	// patterns are the routes registered, in order (a test holds the
	// package comment's route table to them).
	patterns []string
}

// registrar registers routes on a mux and remembers their patterns.
type registrar struct {
	mux      *http.ServeMux
	patterns *[]string
}

func (r registrar) HandleFunc(pattern string, fn http.HandlerFunc) {
	*r.patterns = append(*r.patterns, pattern)
	r.mux.HandleFunc(pattern, fn)
}

// Handler serves svc over HTTP: the routes of the package comment, JSON
// under /v1. Every request, reads included, must carry
// "Authorization: Bearer <token>"; the token is compared in constant time,
// and a request without it is answered 401 before anything else is read.
// An empty token refuses every request.
func Handler(svc api.Service, token string, opts ...HandlerOption) http.Handler {
	h := &handler{
		svc:     svc,
		maxBody: DefaultMaxBody, log: slog.Default(), mux: http.NewServeMux(),
	}
	for _, o := range opts {
		o(h)
	}
	h.gate = NewGate(token, h.auth)
	m := registrar{h.mux, &h.patterns}
	m.HandleFunc("GET /v1/info", h.info)
	m.HandleFunc("GET /v1/nodes", h.status)
	m.HandleFunc("POST /v1/nodes", h.registerNodes)
	m.HandleFunc("GET /v1/nodes/{node}", h.nodeShow)
	m.HandleFunc("POST /v1/nodes/{node}/adopt", h.adopt)
	m.HandleFunc("PUT /v1/nodes/{node}/settings/{key}", h.setSetting)
	m.HandleFunc("POST /v1/nodes/{node}/modules/{module}/assign", h.moduleNode(svc.Assign))
	m.HandleFunc("POST /v1/nodes/{node}/modules/{module}/take", h.moduleNode(svc.Take))
	m.HandleFunc("POST /v1/nodes/{node}/modules/{module}/release", h.moduleNode(svc.Release))
	m.HandleFunc("POST /v1/nodes/{node}/push", h.push)
	m.HandleFunc("POST /v1/push", h.push)
	m.HandleFunc("GET /v1/nodes/{node}/resources", h.resources)
	m.HandleFunc("GET /v1/nodes/{node}/roster", h.roster)
	m.HandleFunc("GET /v1/nodes/{node}/roster/history", h.rosterHistory)
	m.HandleFunc("GET /v1/nodes/{node}/roster/diff", h.rosterDiff)
	m.HandleFunc("GET /v1/nodes/{node}/why", h.why)
	m.HandleFunc("GET /v1/nodes/{node}/containers/{container}/logs", h.logs)
	m.HandleFunc("GET /v1/churn", h.churn)
	m.HandleFunc("GET /v1/diff", h.diff)
	m.HandleFunc("GET /v1/timeline", h.timeline)
	m.HandleFunc("POST /v1/modules", h.defineModules)
	m.HandleFunc("POST /v1/modules/{module}/artifacts", h.recordArtifact)
	m.HandleFunc("POST /v1/rebuild", h.rebuild)
	m.HandleFunc("POST /v1/modules/{module}/deploy", h.deploy)
	m.HandleFunc("POST /v1/modules/{module}/revert", h.revert)
	m.HandleFunc("POST /v1/plan", h.plan)
	m.HandleFunc("POST /v1/nodes/{node}/join-token", h.joinToken)
	m.HandleFunc("POST /v1/nodes/{node}/creds", h.nodeCreds)
	m.HandleFunc("POST /v1/nodes/{node}/revoke", h.revoke)
	m.HandleFunc("POST /v1/tokens", h.createToken)
	m.HandleFunc("GET /v1/tokens", h.listTokens)
	m.HandleFunc("DELETE /v1/tokens/{name}", h.revokeToken)
	m.HandleFunc("PUT /v1/secrets/{name}", h.setSecret)
	m.HandleFunc("GET /v1/secrets", h.listSecrets)
	m.HandleFunc("GET /v1/inventory/nodes", h.nodeList)
	m.HandleFunc("GET /v1/inventory/modules", h.moduleList)
	m.HandleFunc("GET /v1/modules/{module}", h.moduleShow)
	m.HandleFunc("POST /v1/modules/{module}/remove", h.removeModule)
	m.HandleFunc("POST /v1/nodes/{node}/remove", h.removeNode)
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op, boot, err := h.gate.Check(r)
	var refused *TokenRefusedError
	switch {
	case errors.As(err, &refused):
		w.Header().Set("WWW-Authenticate", `Bearer realm="meshplane"`)
		writeError(w, http.StatusUnauthorized, api.CodeUnauthorized, refused.Msg)
		return
	case err != nil:
		h.fail(w, r, err)
		return
	case !boot:
		r = r.WithContext(context.WithValue(r.Context(), operatorKey{}, op))
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, h.maxBody)
	}
	if r.URL.Query().Has("at") {
		var err error
		if r, err = h.at(r); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	h.mux.ServeHTTP(w, r)
}

// atKey holds, in a request's context, the Service of the moment its
// ?at= names (handler.at).
type atKey struct{}

// at answers r as of the moment its ?at= names (a position or an RFC 3339
// time): only a GET takes it (writes never do), and only a Service that
// is an api.Historian.
func (h *handler) at(r *http.Request) (*http.Request, error) {
	if r.Method != http.MethodGet {
		return r, badRequestf("at: only reads take a moment (a write never does)")
	}
	at, err := api.ParseAt(r.URL.Query().Get("at"))
	var rej *api.Rejection
	if errors.As(err, &rej) {
		return r, err // ?at=0: before the first event, as the controller refuses one (422)
	} else if err != nil {
		return r, badRequestf("at %v", err)
	}
	hs, ok := h.svc.(api.Historian)
	if !ok {
		return r, &api.Rejection{Code: api.CodeUnsupported, Msg: "this service answers for now only: no ?at="}
	}
	svc, err := hs.At(r.Context(), at)
	if err != nil {
		return r, err
	}
	return r.WithContext(context.WithValue(r.Context(), atKey{}, svc)), nil
}

// service is what answers r: the moment's Service when it names one
// (?at=), else the handler's.
func (h *handler) service(r *http.Request) api.Service {
	if svc, ok := r.Context().Value(atKey{}).(api.Service); ok {
		return svc
	}
	return h.svc
}

// operatorKey holds, in a request's context, the operator its
// per-operator token names.
type operatorKey struct{}

// asOperator overwrites the Operator field of the request v points at, if
// it has one, with the operator of the request's per-operator token.
func asOperator(r *http.Request, v any) {
	op, ok := r.Context().Value(operatorKey{}).(string)
	if !ok {
		return
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return
	}
	if f := rv.Elem().FieldByName("Operator"); f.IsValid() && f.Kind() == reflect.String && f.CanSet() {
		f.SetString(op)
	}
}

func (h *handler) info(w http.ResponseWriter, r *http.Request) {
	h.reply(w, r)(h.service(r).Info(r.Context()))
}

func (h *handler) status(w http.ResponseWriter, r *http.Request) {
	req := api.StatusRequest{Nodes: r.URL.Query()["node"]}
	if h.valid(w, r, req) {
		h.reply(w, r)(h.service(r).Status(r.Context(), req))
	}
}

func (h *handler) nodeShow(w http.ResponseWriter, r *http.Request) {
	if node := r.PathValue("node"); h.valid(w, r, api.NodeRef(node)) {
		h.reply(w, r)(h.service(r).NodeShow(r.Context(), node))
	}
}

func (h *handler) resources(w http.ResponseWriter, r *http.Request) {
	if node := r.PathValue("node"); h.valid(w, r, api.NodeRef(node)) {
		h.reply(w, r)(h.service(r).Resources(r.Context(), node))
	}
}

func (h *handler) roster(w http.ResponseWriter, r *http.Request) {
	if node := r.PathValue("node"); h.valid(w, r, api.NodeRef(node)) {
		h.reply(w, r)(h.service(r).Roster(r.Context(), node))
	}
}

func (h *handler) rosterHistory(w http.ResponseWriter, r *http.Request) {
	if node := r.PathValue("node"); h.valid(w, r, api.NodeRef(node)) {
		h.reply(w, r)(h.service(r).RosterHistory(r.Context(), node))
	}
}

func (h *handler) rosterDiff(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("from") == "" || q.Get("to") == "" {
		h.fail(w, r, badRequestf("roster diff wants from and to (declaration ids)"))
		return
	}
	req := api.RosterDiffRequest{Node: r.PathValue("node"), From: q.Get("from"), To: q.Get("to")}
	if h.valid(w, r, req) {
		h.reply(w, r)(h.service(r).RosterDiff(r.Context(), req))
	}
}

func (h *handler) why(w http.ResponseWriter, r *http.Request) {
	res := r.URL.Query().Get("resource")
	if res == "" {
		h.fail(w, r, badRequestf("why wants a resource"))
		return
	}
	req := api.WhyRequest{Node: r.PathValue("node"), Resource: res}
	if h.valid(w, r, req) {
		h.reply(w, r)(h.service(r).Why(r.Context(), req))
	}
}

func (h *handler) churn(w http.ResponseWriter, r *http.Request) {
	req := api.ChurnRequest{Nodes: r.URL.Query()["node"]}
	if h.valid(w, r, req) {
		h.reply(w, r)(h.service(r).Churn(r.Context(), req))
	}
}

func (h *handler) timeline(w http.ResponseWriter, r *http.Request) {
	req, err := timelineRequestFromQuery(r.URL.Query())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if h.valid(w, r, req) {
		h.reply(w, r)(h.service(r).Timeline(r.Context(), req))
	}
}

func (h *handler) registerNodes(w http.ResponseWriter, r *http.Request) {
	var req api.RegisterNodesRequest
	if h.decode(w, r, &req) && h.valid(w, r, req) {
		h.reply(w, r)(h.svc.RegisterNodes(r.Context(), req))
	}
}

func (h *handler) adopt(w http.ResponseWriter, r *http.Request) {
	var req api.NodeRequest
	if h.decode(w, r, &req) && h.samePath(w, r, "node", &req.Node) && h.valid(w, r, req) {
		h.reply(w, r)(h.svc.AdoptNode(r.Context(), req))
	}
}

func (h *handler) setSetting(w http.ResponseWriter, r *http.Request) {
	var req api.SetSettingRequest
	if h.decode(w, r, &req) && h.samePath(w, r, "node", &req.Node) && h.samePath(w, r, "key", &req.Key) && h.valid(w, r, req) {
		h.reply(w, r)(h.svc.SetSetting(r.Context(), req))
	}
}

func (h *handler) moduleNode(fn func(context.Context, api.ModuleNodeRequest) (api.CommandResult, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req api.ModuleNodeRequest
		if h.decode(w, r, &req) && h.samePath(w, r, "node", &req.Node) && h.samePath(w, r, "module", &req.Module) && h.valid(w, r, req) {
			h.reply(w, r)(fn(r.Context(), req))
		}
	}
}

func (h *handler) push(w http.ResponseWriter, r *http.Request) {
	var req api.PushRequest
	if !h.decode(w, r, &req) {
		return
	}
	if r.PathValue("node") != "" && !h.samePath(w, r, "node", &req.Node) {
		return
	}
	if r.PathValue("node") == "" && req.Node != "" {
		h.fail(w, r, badRequestf("POST /v1/push pushes to every node; to push to one use POST /v1/nodes/NODE/push"))
		return
	}
	if h.valid(w, r, req) {
		h.reply(w, r)(h.svc.Push(r.Context(), req))
	}
}

func (h *handler) defineModules(w http.ResponseWriter, r *http.Request) {
	var req api.DefineModulesRequest
	if h.decode(w, r, &req) && h.valid(w, r, req) {
		h.reply(w, r)(h.svc.DefineModules(r.Context(), req))
	}
}

func (h *handler) recordArtifact(w http.ResponseWriter, r *http.Request) {
	var req api.RecordArtifactRequest
	if h.decode(w, r, &req) && h.samePath(w, r, "module", &req.Module) && h.valid(w, r, req) {
		h.reply(w, r)(h.svc.RecordArtifact(r.Context(), req))
	}
}

func (h *handler) plan(w http.ResponseWriter, r *http.Request) {
	var req api.PlanRequest
	if h.decode(w, r, &req) && h.valid(w, r, req) {
		h.reply(w, r)(h.svc.Plan(r.Context(), req))
	}
}

func (h *handler) deploy(w http.ResponseWriter, r *http.Request) {
	var req api.DeployRequest
	if h.decode(w, r, &req) && h.samePath(w, r, "module", &req.Module) && h.valid(w, r, req) {
		h.reply(w, r)(h.svc.Deploy(r.Context(), req))
	}
}

// samePath fills *field from the path value name, or refuses a body that
// names another.
func (h *handler) samePath(w http.ResponseWriter, r *http.Request, name string, field *string) bool {
	v := r.PathValue(name)
	if *field != "" && *field != v {
		h.fail(w, r, badRequestf("the body names %s %.40q, the path %.40q", name, *field, v))
		return false
	}
	*field = v
	return true
}

// valid checks every field of req (validate.go), refusing it as invalid
// (422), naming the field, before the service sees it.
func (h *handler) valid(w http.ResponseWriter, r *http.Request, req interface{ Validate() error }) bool {
	if err := req.Validate(); err != nil {
		h.fail(w, r, err)
		return false
	}
	return true
}

// decode reads a JSON body into v strictly (events.UnmarshalStrict): one
// value, no key given twice at any depth, none in another case than its
// field's, no unknown field, within the size limit. An empty body is an
// empty object.
func (h *handler) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	b, err := io.ReadAll(r.Body)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, api.CodeTooLarge, fmt.Sprintf("the request body exceeds %d bytes", tooLarge.Limit))
		return false
	case err != nil:
		h.fail(w, r, badRequestf("read the request body: %v", err))
		return false
	}
	if len(bytes.TrimSpace(b)) > 0 {
		if err := events.UnmarshalStrict(b, v); err != nil {
			h.fail(w, r, badRequestf("the request body: %v", err))
			return false
		}
	}
	asOperator(r, v)
	return true
}

// reply returns a function writing a call's result: the value as JSON (200),
// or its error.
func (h *handler) reply(w http.ResponseWriter, r *http.Request) func(any, error) {
	return func(v any, err error) {
		if err != nil {
			h.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

// fail writes err in the API's error form: a rejection with its code and
// status, a request that did not parse as 400 "invalid", a store out of
// space (events.ErrStoreFull) as 507 "store-full" (logged), anything else
// as 500 "internal" (logged).
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var rej *api.Rejection
	var bad *badRequest
	switch {
	case errors.As(err, &rej):
		writeError(w, StatusOf(rej.Code), rej.Code, rej.Msg)
	case errors.As(err, &bad):
		writeError(w, http.StatusBadRequest, api.CodeInvalid, bad.msg)
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away; nobody reads the answer.
		writeError(w, http.StatusServiceUnavailable, api.CodeUnavailable, err.Error())
	case errors.Is(err, events.ErrStoreFull):
		h.log.Error("api: request failed: the event store is full", "method", r.Method, "path", r.URL.Path, "error", err)
		writeError(w, http.StatusInsufficientStorage, api.CodeStoreFull, err.Error())
	default:
		h.log.Error("api: request failed", "method", r.Method, "path", r.URL.Path, "error", err)
		writeError(w, http.StatusInternalServerError, api.CodeInternal, err.Error())
	}
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorBody{Error: errorDetail{Code: code, Message: msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		fmt.Fprintf(&buf, `{"error":{"code":%q,"message":%q}}`+"\n", api.CodeInternal, "encode the response: "+err.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store") // the audit history is not for caches
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// Timeline query parameters.
//
//	node, module, resource, type, correlation  filters (exact match)
//	since, until                               RFC 3339 times: [since, until)
//	after, before                              position cursors
//	forward                                    page forward from after (or the oldest)
//	limit                                      page size
func timelineQuery(r api.TimelineRequest) map[string][]string {
	q := map[string][]string{}
	set := func(k, v string) {
		if v != "" {
			q[k] = []string{v}
		}
	}
	set("node", r.Node)
	set("module", r.Module)
	set("resource", r.Resource)
	set("type", r.Type)
	set("correlation", r.Correlation)
	if !r.Since.IsZero() {
		set("since", r.Since.Format(time.RFC3339Nano))
	}
	if !r.Until.IsZero() {
		set("until", r.Until.Format(time.RFC3339Nano))
	}
	if r.After > 0 {
		set("after", strconv.FormatUint(r.After, 10))
	}
	if r.Before > 0 {
		set("before", strconv.FormatUint(r.Before, 10))
	}
	if r.Forward {
		set("forward", "true")
	}
	if r.Limit != 0 {
		set("limit", strconv.Itoa(r.Limit))
	}
	return q
}

// timelineRequestFromQuery parses the timeline's query parameters.
func timelineRequestFromQuery(q map[string][]string) (api.TimelineRequest, error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	r := api.TimelineRequest{
		Node: get("node"), Module: get("module"), Resource: get("resource"),
		Type: get("type"), Correlation: get("correlation"),
	}
	var err error
	for _, t := range []struct {
		k string
		v *time.Time
	}{{"since", &r.Since}, {"until", &r.Until}} {
		if s := get(t.k); s != "" {
			if *t.v, err = time.Parse(time.RFC3339Nano, s); err != nil {
				return r, badRequestf("%s=%q is not an RFC 3339 time (2026-09-29T23:02:00Z)", t.k, s)
			}
		}
	}
	for _, c := range []struct {
		k string
		v *uint64
	}{{"after", &r.After}, {"before", &r.Before}} {
		if s := get(c.k); s != "" {
			if *c.v, err = strconv.ParseUint(s, 10, 64); err != nil {
				return r, badRequestf("%s=%q is not a position", c.k, s)
			}
		}
	}
	if s := get("forward"); s != "" {
		if r.Forward, err = strconv.ParseBool(s); err != nil {
			return r, badRequestf("forward=%q is not true or false", s)
		}
	}
	if s := get("limit"); s != "" {
		if r.Limit, err = strconv.Atoi(s); err != nil {
			return r, badRequestf("limit=%q is not a number", s)
		}
	}
	return r, nil
}
