package commands

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"meshplane/events"
)

// DefaultRetries is how many times Execute re-reads and re-decides after
// losing a race for its stream.
const DefaultRetries = 5

// Handler is the write side's shell: it loads the aggregates a command names
// from the store, decides, and appends with the expected version, retrying a
// bounded number of times on a conflict. It also pushes (compose, then hand
// to the bus) and records apply outcomes.
//
// It caches aggregate states by stream and catches them up with a read of
// the stream from the cached version on every load, so every load still
// reads the store (and a store that cannot be read fails the command).
type Handler struct {
	store   events.Store
	reg     *events.Registry
	now     func() time.Time
	newID   func() uuid.UUID
	retries int
	facts   ReportFacts // nil: RecordApply passes over the checks that need them

	tokens tokenCache

	mu      sync.Mutex
	nodes   map[string]Node
	modules map[string]Module
	catalog catalog

	rosterMu sync.Mutex // guards roster; never held with mu
	roster   rosterCache
}

// Option configures a Handler.
type Option func(*Handler)

// WithClock sets the clock events are stamped with (the wall clock, in UTC,
// by default).
func WithClock(now func() time.Time) Option { return func(h *Handler) { h.now = now } }

// WithIDs sets the source of event ids (UUIDv7 by default).
func WithIDs(newID func() uuid.UUID) Option { return func(h *Handler) { h.newID = newID } }

// WithRetries sets how many times a conflicting command is retried.
func WithRetries(n int) Option { return func(h *Handler) { h.retries = n } }

// NewHandler returns a handler over store.
func NewHandler(store events.Store, reg *events.Registry, opts ...Option) *Handler {
	h := &Handler{
		store: store, reg: reg, now: wallClock, newID: events.NewID, retries: DefaultRetries,
		nodes: map[string]Node{}, modules: map[string]Module{},
	}
	for _, o := range opts {
		o(h)
	}
	return h
}

// wallClock is the default clock: the wall clock in UTC, nanoseconds kept.
func wallClock() time.Time { return time.Now().UTC() }

// Execute decides c as actor ("operator:<name>") and appends its events. It
// returns the events as stored: none, and no error, when c's work was
// already done (see Decide).
func (h *Handler) Execute(ctx context.Context, actor string, c Command) ([]events.Event, error) {
	if err := checkNames(c); err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt <= h.retries; attempt++ {
		s, version, err := h.load(ctx, c)
		if err != nil {
			return nil, err
		}
		payloads, err := Decide(s, c)
		if err != nil || len(payloads) == 0 {
			return nil, err
		}
		corr := h.newID().String()
		evs, err := h.events(c.Stream(), payloads, events.Meta{Actor: actor, Correlation: corr, Causation: causeOf(c)})
		if err != nil {
			return nil, err
		}
		stored, err := h.store.Append(ctx, c.Stream(), events.Exactly(version), evs...)
		if errors.Is(err, events.ErrWrongExpectedVersion) {
			lastErr = err
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("commands: %s: append %s: %w", describe(c), c.Stream(), err)
		}
		return stored, nil
	}
	return nil, fmt.Errorf("commands: %s: gave up after %d attempts, the stream kept changing: %w (last: %v)",
		describe(c), h.retries+1, ErrConflict, lastErr)
}

// load returns the state c needs and the version of the stream c appends to.
func (h *Handler) load(ctx context.Context, c Command) (State, uint64, error) {
	return stateOf(ctx, h, c)
}

// source is where a command's state is read from: the store (the Handler),
// or, while ExecuteAll checks a batch, the store overlaid with what the
// batch's earlier commands would append.
type source interface {
	Reader
	Modules(ctx context.Context) ([]string, error)
	// Assignments counts, for every module assigned to some node, the
	// nodes it is assigned to.
	Assignments(ctx context.Context) (map[string]int, error)
	// Token is an operator's token stream.
	Token(ctx context.Context, name string) (Token, error)
	// Secret is a secret's stream.
	Secret(ctx context.Context, name string) (Secret, error)
	// AssignedNodes lists the nodes module is assigned to, sorted.
	AssignedNodes(ctx context.Context, module string) ([]string, error)
	// ModuleAt is a module as its stream stood at a moment.
	ModuleAt(ctx context.Context, name string, to Moment) (Then, error)
}

// stateOf reads the state c needs from src, and the version of the stream c
// appends to.
func stateOf(ctx context.Context, src source, c Command) (State, uint64, error) {
	var s State
	var err error
	switch c := c.(type) {
	case RegisterNode, AdoptNode, SetNodeSetting, IssueJoinToken, JoinNode, RecordCredentials, RevokeNode, RemoveNode:
		s.Node, err = src.Node(ctx, nodeOf(c))
		return s, s.Node.Version, err
	case RemoveModule:
		if s.Module, err = src.Module(ctx, c.Module); err != nil {
			return s, 0, err
		}
		s.AssignedTo, err = src.AssignedNodes(ctx, c.Module)
		return s, s.Module.Version, err
	case AssignModule, ReleaseModule, TakeModule:
		node, module := nodeOf(c), moduleOf(c)
		if s.Node, err = src.Node(ctx, node); err != nil {
			return s, 0, err
		}
		if s.Module, err = src.Module(ctx, module); err != nil {
			return s, 0, err
		}
		if _, ok := c.(AssignModule); ok && s.Module.Defined && len(s.Module.Spec.Routes) > 0 {
			s.Claims, err = assignedClaims(ctx, src, module)
		}
		return s, s.Node.Version, err
	case DefineModule:
		if s.Module, err = src.Module(ctx, c.Module); err != nil {
			return s, 0, err
		}
		if s.SecretDigests, err = secretDigests(ctx, src, c.Spec); err != nil {
			return s, 0, err
		}
		if len(c.Spec.Routes) > 0 {
			s.Claims, err = definedClaims(ctx, src, c.Module)
		}
		return s, s.Module.Version, err
	case RecordArtifact:
		s.Module, err = src.Module(ctx, c.Module)
		return s, s.Module.Version, err
	case DeployModule:
		s.Module, err = src.Module(ctx, c.Module)
		return s, s.Module.Version, err
	case RevertModule:
		if s.Module, err = src.Module(ctx, c.Module); err != nil {
			return s, 0, err
		}
		if s.Then, err = src.ModuleAt(ctx, c.Module, c.To); err != nil {
			return s, 0, err
		}
		if len(s.Then.Module.Spec.Routes) > 0 {
			s.Claims, err = definedClaims(ctx, src, c.Module)
		}
		return s, s.Module.Version, err
	case CreateToken, RevokeToken:
		s.Token, err = src.Token(ctx, tokenOf(c))
		return s, s.Token.Version, err
	case SetSecret:
		s.Secret, err = src.Secret(ctx, c.Name)
		return s, s.Secret.Version, err
	}
	return s, 0, reject(CodeInvalid, "unknown command %T", c)
}

// definedClaims maps every routed name of every defined module other than
// except to the module that routes it (the first by name, when history holds
// two).
func definedClaims(ctx context.Context, src source, except string) (map[string]string, error) {
	names, err := src.Modules(ctx)
	if err != nil {
		return nil, err
	}
	return moduleClaims(ctx, src, names, except)
}

// assignedClaims is definedClaims over the modules assigned to some node.
// The assignments come from the catalog, not from reading every node: an
// assign costs the same on a mesh of 10 nodes as on one of 10,000.
func assignedClaims(ctx context.Context, src source, except string) (map[string]string, error) {
	counts, err := src.Assignments(ctx)
	if err != nil {
		return nil, err
	}
	var mods []string
	for m, n := range counts {
		if n > 0 {
			mods = append(mods, m)
		}
	}
	slices.Sort(mods)
	return moduleClaims(ctx, src, mods, except)
}

func moduleClaims(ctx context.Context, src source, names []string, except string) (map[string]string, error) {
	claims := map[string]string{}
	for _, name := range names {
		if name == except {
			continue
		}
		m, err := src.Module(ctx, name)
		if err != nil {
			return nil, err
		}
		if !m.Defined {
			continue
		}
		for _, r := range m.Spec.Routes {
			if _, ok := claims[r]; !ok {
				claims[r] = name
			}
		}
	}
	return claims, nil
}

// ExecuteAll executes cs as one: all or nothing. It first decides every
// command in order against the state the commands before it would leave
// (reading the store, appending nothing) and, if any is refused, returns
// that refusal having appended nothing. Then it executes each in order, as
// Execute does. It returns the events each command appended, index-aligned
// with cs (none for a command whose work was already done); when one fails
// to append, those of the commands before it, with the error.
//
// The check is a validate-all pass through Decide on the folded state, not
// one transaction: a store appends atomically to one stream only, and a
// batch spans streams (node register a b c is three). So all or nothing
// holds against the store as the check read it. A writer that changes a
// stream between the check and the appends can still make a later command
// fail after earlier ones were appended; each is re-decided when it is
// appended, so nothing is written that the store's state then refuses. (The
// CLI's local mode holds the store's file lock for the whole command, so
// there no other writer can come between.)
func (h *Handler) ExecuteAll(ctx context.Context, actor string, cs []Command) ([][]events.Event, error) {
	if err := h.Check(ctx, cs); err != nil {
		return nil, err
	}
	out := make([][]events.Event, len(cs))
	for i, c := range cs {
		evs, err := h.Execute(ctx, actor, c)
		if err != nil {
			return out[:i], err
		}
		out[i] = evs
	}
	return out, nil
}

// Check is ExecuteAll's first pass: it decides every command of cs in order
// against the state the commands before it would leave, reading the store
// and appending nothing, and returns the first refusal (or read failure).
func (h *Handler) Check(ctx context.Context, cs []Command) error {
	_, err := h.Hypothetical(ctx, cs)
	return err
}

// overlay is the store as a batch's commands would leave it: the states they
// change, folded in memory, over the Handler's reads.
type overlay struct {
	base    source
	nodes   map[string]Node
	modules map[string]Module
	tokens  map[string]Token
	secrets map[string]Secret
}

var _ source = (*overlay)(nil)

func (o *overlay) Node(ctx context.Context, name string) (Node, error) {
	if n, ok := o.nodes[name]; ok {
		return n, nil
	}
	return o.base.Node(ctx, name)
}

func (o *overlay) Module(ctx context.Context, name string) (Module, error) {
	if m, ok := o.modules[name]; ok {
		return m, nil
	}
	return o.base.Module(ctx, name)
}

// ModuleAt is the base's: what a batch would append comes after any moment
// that has been.
func (o *overlay) ModuleAt(ctx context.Context, name string, to Moment) (Then, error) {
	return o.base.ModuleAt(ctx, name, to)
}

func (o *overlay) Nodes(ctx context.Context) ([]string, error) {
	names, err := o.base.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	for name, n := range o.nodes {
		if n.Registered {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

func (o *overlay) Modules(ctx context.Context) ([]string, error) {
	names, err := o.base.Modules(ctx)
	if err != nil {
		return nil, err
	}
	for name, m := range o.modules {
		if m.Defined {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// Assignments are the base's, with the nodes the overlay changed counted
// as it leaves them.
func (o *overlay) Assignments(ctx context.Context) (map[string]int, error) {
	counts, err := o.base.Assignments(ctx)
	if err != nil {
		return nil, err
	}
	for name, n := range o.nodes {
		was, err := o.base.Node(ctx, name)
		if err != nil {
			return nil, err
		}
		for _, m := range was.AssignedModules() {
			counts[m]--
		}
		for _, m := range n.AssignedModules() {
			counts[m]++
		}
	}
	return counts, nil
}

// AssignedNodes are the base's, with the nodes the overlay changed as it
// leaves them.
func (o *overlay) AssignedNodes(ctx context.Context, module string) ([]string, error) {
	names, err := o.base.AssignedNodes(ctx, module)
	if err != nil {
		return nil, err
	}
	for name, n := range o.nodes {
		names = slices.DeleteFunc(names, func(x string) bool { return x == name })
		if n.Assigned[module] {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// fold folds the payloads c was decided to produce from s into the overlay.
func (o *overlay) fold(c Command, s State, ps []events.Payload) {
	if len(ps) == 0 {
		return
	}
	switch c.(type) {
	case CreateToken, RevokeToken:
		t := s.Token
		for _, p := range ps {
			t = EvolveToken(t, events.Event{Version: t.Version + 1, Type: p.EventType()}, p)
		}
		if o.tokens == nil {
			o.tokens = map[string]Token{}
		}
		o.tokens[tokenOf(c)] = t
	case SetSecret:
		sec := s.Secret
		for _, p := range ps {
			sec = EvolveSecret(sec, events.Event{Version: sec.Version + 1, Type: p.EventType()}, p)
		}
		if o.secrets == nil {
			o.secrets = map[string]Secret{}
		}
		o.secrets[c.(SetSecret).Name] = sec
	case DefineModule, RecordArtifact, DeployModule, RemoveModule, RevertModule:
		m := s.Module
		for _, p := range ps {
			m = EvolveModule(m, events.Event{Version: m.Version + 1, Type: p.EventType()}, p)
		}
		o.modules[moduleOf(c)] = m
	default:
		n := s.Node
		for _, p := range ps {
			n = EvolveNode(n, events.Event{Version: n.Version + 1, Type: p.EventType()}, p)
		}
		o.nodes[nodeOf(c)] = n
	}
}

func nodeOf(c Command) string {
	switch c := c.(type) {
	case RegisterNode:
		return c.Node
	case AdoptNode:
		return c.Node
	case SetNodeSetting:
		return c.Node
	case AssignModule:
		return c.Node
	case ReleaseModule:
		return c.Node
	case TakeModule:
		return c.Node
	case IssueJoinToken:
		return c.Node
	case JoinNode:
		return c.Node
	case RecordCredentials:
		return c.Node
	case RevokeNode:
		return c.Node
	case RemoveNode:
		return c.Node
	}
	return ""
}

func moduleOf(c Command) string {
	switch c := c.(type) {
	case DefineModule:
		return c.Module
	case AssignModule:
		return c.Module
	case ReleaseModule:
		return c.Module
	case TakeModule:
		return c.Module
	case RecordArtifact:
		return c.Module
	case DeployModule:
		return c.Module
	case RemoveModule:
		return c.Module
	case RevertModule:
		return c.Module
	}
	return ""
}

// causeOf is the causation of the events c appends: a revert names itself
// (RevertCause); other commands name none.
func causeOf(c Command) string {
	if r, ok := c.(RevertModule); ok {
		return RevertCause(r)
	}
	return ""
}

func describe(c Command) string {
	name := fmt.Sprintf("%T", c)
	name = name[strings.LastIndex(name, ".")+1:]
	switch c := c.(type) {
	case AssignModule, ReleaseModule, TakeModule:
		return fmt.Sprintf("%s %s on %s", name, moduleOf(c), nodeOf(c))
	case DefineModule, RecordArtifact, DeployModule, RemoveModule, RevertModule:
		return fmt.Sprintf("%s %s", name, moduleOf(c))
	case CreateToken, RevokeToken:
		return describeToken(c)
	case SetSecret:
		return describeSecret(c)
	default:
		return fmt.Sprintf("%s %s", name, nodeOf(c))
	}
}

func (h *Handler) events(stream string, ps []events.Payload, m events.Meta) ([]events.Event, error) {
	out := make([]events.Event, len(ps))
	for i, p := range ps {
		m.ID, m.At = h.newID(), h.now()
		ev, err := h.reg.New(stream, p, m)
		if err != nil {
			return nil, err
		}
		out[i] = ev
	}
	return out, nil
}

// Node returns a node's current state, read from the store. It implements
// Reader.
func (h *Handler) Node(ctx context.Context, name string) (Node, error) {
	h.mu.Lock()
	cached := h.nodes[name]
	h.mu.Unlock()
	n, err := catchUp(ctx, h, events.NodeStream(name), cached, cached.Version, nodeDecodes, EvolveNode)
	if err != nil {
		return Node{}, err
	}
	if n.Name == "" {
		n.Name = name
	}
	h.mu.Lock()
	if h.nodes[name].Version < n.Version {
		h.nodes[name] = n
	}
	h.mu.Unlock()
	return n, nil
}

// Module returns a module's current state, read from the store. It
// implements Reader.
func (h *Handler) Module(ctx context.Context, name string) (Module, error) {
	h.mu.Lock()
	cached := h.modules[name]
	h.mu.Unlock()
	m, err := catchUp(ctx, h, events.ModuleStream(name), cached, cached.Version, moduleDecodes, EvolveModule)
	if err != nil {
		return Module{}, err
	}
	if m.Name == "" {
		m.Name = name
	}
	h.mu.Lock()
	if h.modules[name].Version < m.Version {
		h.modules[name] = m
	}
	h.mu.Unlock()
	return m, nil
}

func catchUp[S any](ctx context.Context, h *Handler, stream string, s S, version uint64, decodes func(string) bool, evolve func(S, events.Event, events.Payload) S) (S, error) {
	evs, err := h.store.ReadStream(ctx, stream, version, 0)
	if err != nil {
		return s, fmt.Errorf("commands: read %s: %w", stream, err)
	}
	for _, ev := range evs {
		if !decodes(ev.Type) {
			s = evolve(s, ev, nil)
			continue
		}
		p, err := h.reg.Decode(ev)
		if errors.Is(err, events.ErrUnknownType) || (err != nil && ev.Type == events.TypeDeclarationComposed) {
			// A type this build does not know changes nothing it decides on,
			// and a composed declaration that does not decode (appended by
			// hand) only costs the next compose its spec delta; the version
			// still advances.
			p = nil
		} else if err != nil {
			return s, fmt.Errorf("commands: read %s: %w", stream, err)
		}
		s = evolve(s, ev, p)
	}
	return s, nil
}

// Nodes lists every registered node, sorted. It implements Reader, from a
// catalog it keeps by reading the store's global stream from where it last
// stopped.
func (h *Handler) Nodes(ctx context.Context) ([]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.catalog.catchUp(ctx, h.store, h.reg); err != nil {
		return nil, fmt.Errorf("commands: node list: %w", err)
	}
	return slices.Sorted(maps.Keys(h.catalog.nodes)), nil
}

// Modules lists every defined module, sorted.
func (h *Handler) Modules(ctx context.Context) ([]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.catalog.catchUp(ctx, h.store, h.reg); err != nil {
		return nil, fmt.Errorf("commands: module list: %w", err)
	}
	return slices.Sorted(maps.Keys(h.catalog.modules)), nil
}

// Assignments counts the nodes each module is assigned to, from the
// catalog.
func (h *Handler) Assignments(ctx context.Context) (map[string]int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.catalog.catchUp(ctx, h.store, h.reg); err != nil {
		return nil, fmt.Errorf("commands: assignments: %w", err)
	}
	counts := make(map[string]int, len(h.catalog.assigned))
	for m, nodes := range h.catalog.assigned {
		if len(nodes) > 0 {
			counts[m] = len(nodes)
		}
	}
	return counts, nil
}

// AssignedNodes lists the nodes module is assigned to, sorted, from the
// catalog.
func (h *Handler) AssignedNodes(ctx context.Context, module string) ([]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.catalog.catchUp(ctx, h.store, h.reg); err != nil {
		return nil, fmt.Errorf("commands: assignments of %s: %w", module, err)
	}
	return slices.Sorted(maps.Keys(h.catalog.assigned[module])), nil
}

// catalog is the set of registered nodes and defined modules, kept by type
// and stream name alone (node.removed and module.removed take them out), and which nodes each module is assigned to (the
// only payloads it decodes: module.assigned and module.released, folded
// as EvolveNode folds them).
type catalog struct {
	pos      uint64
	nodes    map[string]bool
	modules  map[string]bool
	assigned map[string]map[string]bool // module → the nodes it is assigned to
}

func (c *catalog) catchUp(ctx context.Context, s events.Store, reg *events.Registry) error {
	if c.nodes == nil {
		c.nodes, c.modules, c.assigned = map[string]bool{}, map[string]bool{}, map[string]map[string]bool{}
	}
	for {
		page, err := s.ReadAll(ctx, c.pos, 4096)
		if err != nil {
			return err
		}
		for _, ev := range page {
			switch ev.Type {
			case events.TypeNodeRegistered:
				c.nodes[strings.TrimPrefix(ev.Stream, "node-")] = true
			case events.TypeModuleDefined:
				c.modules[strings.TrimPrefix(ev.Stream, "module-")] = true
			case events.TypeNodeRemoved:
				node := strings.TrimPrefix(ev.Stream, "node-")
				delete(c.nodes, node)
				for _, nodes := range c.assigned {
					delete(nodes, node)
				}
			case events.TypeModuleRemoved:
				module := strings.TrimPrefix(ev.Stream, "module-")
				delete(c.modules, module)
				delete(c.assigned, module)
			case events.TypeModuleAssigned, events.TypeModuleReleased:
				p, err := reg.Decode(ev)
				if err != nil {
					return fmt.Errorf("catalog: %s at %d: %w", ev.Type, ev.Position, err)
				}
				node := strings.TrimPrefix(ev.Stream, "node-")
				switch p := p.(type) {
				case events.ModuleAssigned:
					if c.assigned[p.Module] == nil {
						c.assigned[p.Module] = map[string]bool{}
					}
					c.assigned[p.Module][node] = true
				case events.ModuleReleased:
					delete(c.assigned[p.Module], node)
				}
			}
			c.pos = ev.Position
		}
		if len(page) < 4096 {
			return nil
		}
	}
}

var _ source = (*Handler)(nil)
