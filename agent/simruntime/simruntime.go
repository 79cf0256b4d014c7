// Package simruntime is an in-memory agent.Runtime: containers, and a
// simulated disk of directories (with modes) and files (with content and
// modes). It is deterministic and safe for concurrent use, and passes the
// runtime conformance suite (agent/runtimetest), in memory (New) or kept in
// a file (Open: every change written before the call returns, so a
// restarted agent on the same file finds the node as it left it).
//
// Besides the agent's interface it exposes what the world outside the mesh
// can do to a node (MakeDirectory: a directory that was there before the
// mesh; RemoveAllContainers: something removes every container;
// StopContainer: an operator stops one; and how a container runs, in
// world.go: ExitAtStart, CrashAfter, Unhealthy, Healthy, KillOOM,
// RunsAgain, read back through agent.Inspector as an engine's state),
// inspection for tests (Container, Creates, Dir, File), and fault
// injection (FailNext).
//
// Managed containers are stored as Docker stores them: the spec as JSON in a
// label, decoded again on every list, so a round trip through simruntime is
// as lossy (or not) as one through Docker.
package simruntime

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unique"

	"meshplane/agent"
	"meshplane/declaration"
)

// Ops that FailNext can fail.
const (
	OpList   = "list"
	OpCreate = "create"
	OpRemove = "remove"
	OpStart  = "start"
	OpStat   = "stat"
	OpMkdir  = "mkdir"
	OpChmod  = "chmod"
	OpWrite  = "write"
	OpRead   = "read"
	// OpInspect is InspectContainer and ContainerLogTail.
	OpInspect = "inspect"
	OpRename  = "rename"
)

type container struct {
	labels  map[string]string
	image   string
	seq     int  // creation order, for determinism in inspection
	stopped bool // exists but does not run
	// secretEnv is the secrets' values it was created with, in memory
	// only: never saved (a real engine would hold them in the process's
	// environment, never in a label).
	secretEnv []string

	// How it runs (world.go), in memory only.
	startedAt, finishedAt time.Time
	restarts, exitCode    int
	oom                   bool
	logs                  string     // what its last run printed
	crash                 *behaviour // the crash the world made it do; nil runs plainly
	health, healthLog     string
}

type node struct {
	dir  bool
	mode uint32
	// content is the file's bytes, interned (package unique): a thousand
	// simulated nodes writing the same hosts file hold one copy of it, not
	// a thousand (at 10,000 nodes and 30,000 routes, 10 GB otherwise).
	content unique.Handle[string]
}

// intern is content as a node holds it.
func intern(content []byte) unique.Handle[string] { return unique.Make(string(content)) }

// text is n's content ("" for none).
func (n *node) text() string {
	if n.content == (unique.Handle[string]{}) {
		return ""
	}
	return n.content.Value()
}

type fault struct {
	n   int
	err error
}

// Runtime is the simulated node. The zero value is not usable; call New.
type Runtime struct {
	mu         sync.Mutex
	containers map[string]*container
	paths      map[string]*node
	creates    map[string]int
	faults     map[string]*fault
	seq        int
	path       string               // the state file every change is written to (Open); "" in memory only (New)
	now        func() time.Time     // the clock (SetClock); nil is the wall clock
	crashes    map[string]behaviour // by container name: what a container made under it does (world.go)
	// images is what the world made every container of an image do
	// (world.go: ImageCrashes, ImageUnhealthy), in memory only.
	images map[string]imageWorld
}

var (
	_ agent.Runtime = (*Runtime)(nil)
	_ agent.Renamer = (*Runtime)(nil)
)

// New returns an empty node: no containers, and a disk holding only "/",
// in memory only (Open keeps one in a file).
func New() *Runtime {
	return &Runtime{
		containers: map[string]*container{},
		paths:      map[string]*node{"/": {dir: true, mode: 0o755}},
		creates:    map[string]int{},
		faults:     map[string]*fault{},
	}
}

// FailNext makes the next n calls of op fail with an error wrapping
// agent.ErrRuntime and err (err may be nil). n = 0 clears the fault.
func (r *Runtime) FailNext(op string, n int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n <= 0 {
		delete(r.faults, op)
		return
	}
	r.faults[op] = &fault{n: n, err: err}
}

// begin checks ctx and the faults of op. It is called with r.mu held.
func (r *Runtime) begin(ctx context.Context, op, subject string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("simruntime: %s %s: %w", op, subject, err)
	}
	f, ok := r.faults[op]
	if !ok {
		return nil
	}
	f.n--
	if f.n <= 0 {
		delete(r.faults, op)
	}
	if f.err != nil {
		return fmt.Errorf("simruntime: %s %s: injected fault: %w: %w", op, subject, agent.ErrRuntime, f.err)
	}
	return fmt.Errorf("simruntime: %s %s: injected fault: %w", op, subject, agent.ErrRuntime)
}

// ListContainers implements agent.Runtime.
func (r *Runtime) ListContainers(ctx context.Context) ([]agent.Container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.begin(ctx, OpList, "containers"); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(r.containers))
	for n, c := range r.containers {
		if c.labels[agent.LabelManaged] == "true" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	out := make([]agent.Container, 0, len(names))
	for _, n := range names {
		c := r.containers[n]
		ac := agent.Container{Name: n, Module: c.labels[agent.LabelModule], Digest: c.labels[agent.LabelDigest], Stopped: c.stopped}
		if err := json.Unmarshal([]byte(c.labels[agent.LabelSpec]), &ac.Spec); err != nil {
			// A label that does not decode is listed with no digest, so the
			// agent replaces it rather than trusting it.
			ac.Digest, ac.Spec = "", declaration.Container{}
		}
		out = append(out, ac)
	}
	return out, nil
}

// CreateContainer implements agent.Runtime.
func (r *Runtime) CreateContainer(ctx context.Context, c agent.Container) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.begin(ctx, OpCreate, c.Name); err != nil {
		return err
	}
	if err := agent.ValidateContainer(c); err != nil {
		return fmt.Errorf("simruntime: create: %w", err)
	}
	if _, ok := r.containers[c.Name]; ok {
		return fmt.Errorf("simruntime: create %s: container %w", c.Name, agent.ErrExists)
	}
	for _, m := range c.Spec.Mounts {
		if m.Volume {
			continue
		}
		if _, ok := r.paths[m.Source]; !ok {
			// Docker refuses a bind mount of a missing source.
			return fmt.Errorf("simruntime: create %s: mount source %s: %w", c.Name, m.Source, agent.ErrNotFound)
		}
	}
	spec, err := json.Marshal(c.Spec)
	if err != nil {
		return fmt.Errorf("simruntime: create %s: encode spec: %w", c.Name, err)
	}
	r.seq++
	r.containers[c.Name] = &container{
		labels: map[string]string{
			agent.LabelManaged: "true",
			agent.LabelModule:  c.Module,
			agent.LabelDigest:  c.Digest,
			agent.LabelSpec:    string(spec),
		},
		image:     c.Spec.Image,
		seq:       r.seq,
		secretEnv: slices.Clone(c.SecretEnv),
		startedAt: r.clock(),
	}
	if b, ok := r.crashes[c.Name]; ok {
		b.since = r.containers[c.Name].startedAt
		r.containers[c.Name].crash = &b
	}
	if w, ok := r.images[c.Spec.Image]; ok {
		nc := r.containers[c.Name]
		if w.crash != nil {
			b := *w.crash
			b.since = nc.startedAt
			nc.crash = &b
		}
		if w.unhealthy != nil {
			nc.health, nc.healthLog = agent.HealthUnhealthy, *w.unhealthy
		}
	}
	r.creates[c.Name]++
	return r.save()
}

// RemoveContainer implements agent.Runtime.
func (r *Runtime) RemoveContainer(ctx context.Context, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.begin(ctx, OpRemove, name); err != nil {
		return err
	}
	if err := agent.ValidateContainerName(name); err != nil {
		return fmt.Errorf("simruntime: remove: %w", err)
	}
	c, ok := r.containers[name]
	if !ok || c.labels[agent.LabelManaged] != "true" {
		return fmt.Errorf("simruntime: remove %s: managed container %w", name, agent.ErrNotFound)
	}
	delete(r.containers, name)
	return r.save()
}

// StartContainer implements agent.Runtime.
func (r *Runtime) StartContainer(ctx context.Context, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.begin(ctx, OpStart, name); err != nil {
		return err
	}
	if err := agent.ValidateContainerName(name); err != nil {
		return fmt.Errorf("simruntime: start: %w", err)
	}
	c, ok := r.containers[name]
	if !ok || c.labels[agent.LabelManaged] != "true" {
		return fmt.Errorf("simruntime: start %s: managed container %w", name, agent.ErrNotFound)
	}
	if c.stopped {
		c.stopped, c.startedAt = false, r.clock()
		if c.crash != nil {
			c.crash.since = c.startedAt
		}
	}
	return r.save()
}

// Stat implements agent.Runtime.
func (r *Runtime) Stat(ctx context.Context, p string) (agent.PathInfo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.begin(ctx, OpStat, p); err != nil {
		return agent.PathInfo{}, err
	}
	if err := agent.ValidatePath(p); err != nil {
		return agent.PathInfo{}, fmt.Errorf("simruntime: stat: %w", err)
	}
	n, ok := r.paths[p]
	if !ok {
		return agent.PathInfo{}, nil
	}
	return agent.PathInfo{Exists: true, Dir: n.dir, Mode: n.mode, Size: int64(len(n.text()))}, nil
}

// Mkdir implements agent.Runtime.
func (r *Runtime) Mkdir(ctx context.Context, p string, mode uint32) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.begin(ctx, OpMkdir, p); err != nil {
		return err
	}
	if err := r.mkdir("simruntime: mkdir", p, mode); err != nil {
		return err
	}
	return r.save()
}

// mkdir makes p and its missing parents. Called with r.mu held.
func (r *Runtime) mkdir(what, p string, mode uint32) error {
	if err := agent.ValidatePath(p); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := agent.ValidateMode(mode); err != nil {
		return fmt.Errorf("%s %s: %w", what, p, err)
	}
	if _, ok := r.paths[p]; ok {
		return fmt.Errorf("%s %s: %w", what, p, agent.ErrExists)
	}
	if err := r.parents(what, p); err != nil {
		return err
	}
	r.paths[p] = &node{dir: true, mode: mode}
	return nil
}

// parents makes the missing parents of p at 0755, refusing a file on the
// way. It checks first and changes after, so a refusal changes nothing.
// Called with r.mu held.
func (r *Runtime) parents(what, p string) error {
	var missing []string
	for q := path.Dir(p); q != "/"; q = path.Dir(q) {
		n, ok := r.paths[q]
		if !ok {
			missing = append(missing, q)
			continue
		}
		if !n.dir {
			return fmt.Errorf("%s %s: parent %s is a file: %w", what, p, q, agent.ErrWrongKind)
		}
		break
	}
	for _, q := range missing {
		r.paths[q] = &node{dir: true, mode: 0o755}
	}
	return nil
}

// Chmod implements agent.Runtime.
func (r *Runtime) Chmod(ctx context.Context, p string, mode uint32) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.begin(ctx, OpChmod, p); err != nil {
		return err
	}
	if err := agent.ValidatePath(p); err != nil {
		return fmt.Errorf("simruntime: chmod: %w", err)
	}
	if err := agent.ValidateMode(mode); err != nil {
		return fmt.Errorf("simruntime: chmod %s: %w", p, err)
	}
	n, ok := r.paths[p]
	if !ok {
		return fmt.Errorf("simruntime: chmod %s: %w", p, agent.ErrNotFound)
	}
	n.mode = mode
	return r.save()
}

// WriteFile implements agent.Runtime.
func (r *Runtime) WriteFile(ctx context.Context, p string, content []byte, mode uint32) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.begin(ctx, OpWrite, p); err != nil {
		return err
	}
	if err := agent.ValidatePath(p); err != nil {
		return fmt.Errorf("simruntime: write: %w", err)
	}
	if err := agent.ValidateMode(mode); err != nil {
		return fmt.Errorf("simruntime: write %s: %w", p, err)
	}
	if n, ok := r.paths[p]; ok && n.dir {
		return fmt.Errorf("simruntime: write %s: a directory: %w", p, agent.ErrWrongKind)
	}
	if err := r.parents("simruntime: write", p); err != nil {
		return err
	}
	r.paths[p] = &node{mode: mode, content: intern(content)}
	return r.save()
}

// ReadFile implements agent.Runtime.
func (r *Runtime) ReadFile(ctx context.Context, p string) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.begin(ctx, OpRead, p); err != nil {
		return nil, err
	}
	if err := agent.ValidatePath(p); err != nil {
		return nil, fmt.Errorf("simruntime: read: %w", err)
	}
	n, ok := r.paths[p]
	if !ok {
		return nil, fmt.Errorf("simruntime: read %s: %w", p, agent.ErrNotFound)
	}
	if n.dir {
		return nil, fmt.Errorf("simruntime: read %s: a directory: %w", p, agent.ErrWrongKind)
	}
	return []byte(n.text()), nil
}

// The world outside the mesh.

// MakeDirectory makes the directory p with mode as something outside the
// mesh would (a directory that was on an adopted node before the mesh).
// Missing parents are made at 0755.
func (r *Runtime) MakeDirectory(p string, mode uint32) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.mkdir("simruntime: make directory", p, mode); err != nil {
		return err
	}
	return r.save()
}

// RemoveAllContainers removes every container, managed or not, as something
// outside the mesh would, and returns how many it removed. On a node kept
// in a file (Open), a failure to write it is not returned: the next change
// writes the whole node again.
func (r *Runtime) RemoveAllContainers() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.containers)
	clear(r.containers)
	_ = r.save()
	return n
}

// StopContainer stops the container name, managed or not, as something
// outside the mesh would (an operator's docker stop, a crash with no
// restart).
func (r *Runtime) StopContainer(name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[name]
	if !ok {
		return fmt.Errorf("simruntime: stop %s: %w", name, agent.ErrNotFound)
	}
	c.stopped, c.crash, c.exitCode, c.finishedAt = true, nil, 0, r.clock()
	return r.save()
}

// Running reports whether the container name exists and runs.
func (r *Runtime) Running(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[name]
	return ok && !c.stopped
}

// RunUnmanaged creates a running container that the mesh does not manage
// (no labels), as an operator running something by hand would.
func (r *Runtime) RunUnmanaged(name, image string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := agent.ValidateContainerName(name); err != nil {
		return fmt.Errorf("simruntime: run unmanaged: %w", err)
	}
	if _, ok := r.containers[name]; ok {
		return fmt.Errorf("simruntime: run unmanaged %s: %w", name, agent.ErrExists)
	}
	r.seq++
	r.containers[name] = &container{labels: map[string]string{}, image: image, seq: r.seq}
	return r.save()
}

// Inspection, for tests and scenario checks.

// Container returns the spec the container name was created with, and
// whether such a managed container exists.
func (r *Runtime) Container(name string) (declaration.Container, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[name]
	if !ok || c.labels[agent.LabelManaged] != "true" {
		return declaration.Container{}, false
	}
	var spec declaration.Container
	if err := json.Unmarshal([]byte(c.labels[agent.LabelSpec]), &spec); err != nil {
		return declaration.Container{}, false
	}
	return spec, true
}

// Names returns the names of every container, managed or not, sorted.
func (r *Runtime) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.containers))
}

// Creates returns how many times a container named name was created.
func (r *Runtime) Creates(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.creates[name]
}

// Dir returns the mode of the directory p, and whether there is one.
func (r *Runtime) Dir(p string) (uint32, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, ok := r.paths[p]
	if !ok || !n.dir {
		return 0, false
	}
	return n.mode, true
}

// File returns the content and mode of the file p, and whether there is one.
func (r *Runtime) File(p string) ([]byte, uint32, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, ok := r.paths[p]
	if !ok || n.dir {
		return nil, 0, false
	}
	return []byte(n.text()), n.mode, true
}

// Paths returns every path on the simulated disk, sorted, one a line with
// its kind and mode ("d 755 /var/lib"), for failure messages.
func (r *Runtime) Paths() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ps := make([]string, 0, len(r.paths))
	for p := range r.paths {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	var b strings.Builder
	for _, p := range ps {
		n := r.paths[p]
		kind := "f"
		if n.dir {
			kind = "d"
		}
		fmt.Fprintf(&b, "%s %o %s\n", kind, n.mode, p)
	}
	return b.String()
}

// Env is the environment the managed container name runs with: its spec's
// and its secrets' values (those held in memory since this runtime created
// it). Tests read it; nothing of the agent's does.
func (r *Runtime) Env(name string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[name]
	if !ok {
		return nil
	}
	var spec declaration.Container
	_ = json.Unmarshal([]byte(c.labels[agent.LabelSpec]), &spec)
	return append(spec.Env, c.secretEnv...)
}
