// Package docker is the agent's Runtime on a Docker engine, through the
// engine's API (github.com/docker/docker/client, with API version
// negotiation: Debian's engine speaks an older API than the newest client).
// It passes the runtime conformance suite (agent/runtimetest), as simruntime
// does.
//
// # What it touches
//
// A container the mesh manages carries these labels, and this runtime lists,
// starts, stops and removes only containers that carry LabelManaged =
// "true" and LabelNode = its node: an unlabelled container, or another
// node's (two nodes on one engine), is never listed, stopped, changed or
// removed.
//
//	meshplane.managed   "true"
//	meshplane.node      the node
//	meshplane.resource  the resource name (the container's name, less Options.Prefix)
//	meshplane.module    the module that declares it
//	meshplane.digest    the resource digest (declaration.Digest of the spec)
//	meshplane.spec      the spec, as JSON
//
// Options.Labels are put beside them on every container, network and
// volume it makes (`mesh up` gives its data directory's id,
// meshplane.data, so that meshes sharing an engine clean up only their
// own), and a container that carries one of their keys with another value
// is another mesh's: never listed, changed or removed. One without the key
// (made before it was given) is still taken as this node's. A container,
// network or volume of another mesh in the way of a name this runtime
// would use (two meshes' nodes of one name and one --docker-prefix) is
// never touched, joined or mounted: the resource fails with ErrOtherMesh,
// naming the owner's label.
//
// The digest covers only what cannot change on a running container (docs/design.md
// rule 2): the declaration's container spec. The roster reaches containers
// as the hosts file (declaration.HostsPath), which compose mounts read-only
// at /etc/hosts and which WriteFile rewrites in place, so a running container
// reads a new name without being recreated. This runtime binds a file of the
// container's own there instead (hosts.go, HostsDir/NAME): the engine's own
// lines (localhost, the container's host name at its address) above the
// roster, whose part WriteFile rewrites in place with the node's file.
//
// Networks a container joins, and volumes it mounts, are made when missing,
// labelled with the node; they are never removed (a volume is data).
//
// A container's options (options.go) are the engine's own: its health
// check (the engine runs it), network mode (host), published ports (bound
// at the address the declaration names), restart policy (the spec's, else
// Options.RestartPolicy), stop timeout (also given when it is removed),
// memory and CPU limits, entrypoint, user, capabilities, tmpfs mounts and
// read-only root.
//
// # Observing cheaply
//
// ListContainers is one ContainerList call with label filters: the
// resource name, module, digest and spec come from the labels, and running
// or stopped from the list's state, never from an inspect per container.
//
// # Following the engine
//
// Changes (agent.Watcher, watch.go) follows the engine's event stream for
// this node's containers (die, stop, oom, destroy, start, health_status):
// a running agent makes a pass at once when one is stopped, removed,
// restarted by the engine or changes health behind its back, rather than
// at its next drift check. What the runtime does itself is not a change.
//
// # How containers run
//
// InspectContainer and ContainerLogTail (agent.Inspector, state.go) say
// what the engine says of a container: its status ("restarting" is not
// running), exit code, OOM kill, restart count, times and health with the
// last probe's output, and the last of its log.
//
// # Host paths
//
// Directories and files are on the host the engine runs on. Options.Root
// (`mesh agent --docker-root`) is the directory every absolute path of a
// declaration is kept under ("/etc/x" is Root+"/etc/x"; "/" when unset);
// bind-mount sources are mapped the same way, and the labels keep the
// declared paths. Nothing outside the root is ever made, changed, read or
// removed: every path is resolved beneath it without following a symbolic
// link (openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS where the kernel
// has it, else an O_NOFOLLOW walk), and a link where a declared file or
// directory is, or above it, is never followed nor removed: the resource
// fails with agent.ErrSymlink, naming the link, and the operator decides.
// A container that can write to a mounted directory can put a link there;
// it cannot make the agent write through it. A bind-mount source is checked
// the same way before the container is made; the engine then resolves the
// path itself.
package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"meshplane/agent"
	"meshplane/declaration"
)

// ErrImage means a container's image is not in the engine and could not be
// pulled (no such image at the artifact store, the store unreachable, the
// pull timed out). The container was not created. It is wrapped together
// with agent.ErrRuntime.
var ErrImage = errors.New("image unavailable")

// Engine is the part of the Docker client the runtime calls
// (*client.Client implements it); tests wrap it to inject faults.
type Engine interface {
	ContainerList(ctx context.Context, options container.ListOptions) ([]container.Summary, error)
	ContainerCreate(ctx context.Context, config *container.Config, hostConfig *container.HostConfig, networkingConfig *network.NetworkingConfig, platform *ocispec.Platform, containerName string) (container.CreateResponse, error)
	ContainerStart(ctx context.Context, containerID string, options container.StartOptions) error
	ContainerStop(ctx context.Context, containerID string, options container.StopOptions) error
	ContainerRemove(ctx context.Context, containerID string, options container.RemoveOptions) error
	ContainerRename(ctx context.Context, containerID, newContainerName string) error
	ContainerInspect(ctx context.Context, containerID string) (container.InspectResponse, error)
	NetworkInspect(ctx context.Context, networkID string, options network.InspectOptions) (network.Inspect, error)
	NetworkCreate(ctx context.Context, name string, options network.CreateOptions) (network.CreateResponse, error)
	NetworkConnect(ctx context.Context, networkID, containerID string, config *network.EndpointSettings) error
	VolumeInspect(ctx context.Context, volumeID string) (volume.Volume, error)
	VolumeCreate(ctx context.Context, options volume.CreateOptions) (volume.Volume, error)
	ImageInspect(ctx context.Context, imageID string, inspectOpts ...client.ImageInspectOption) (image.InspectResponse, error)
	ImagePull(ctx context.Context, refStr string, options image.PullOptions) (io.ReadCloser, error)
}

var (
	_ Engine        = (*client.Client)(nil)
	_ agent.Runtime = (*Runtime)(nil)
)

// Options configure a Runtime. Node is required.
type Options struct {
	// Node is the node this runtime applies for; its containers carry it.
	Node string
	// Engine is the Docker API; nil dials the engine the environment names
	// (DOCKER_HOST, else /var/run/docker.sock) with API version
	// negotiation.
	Engine Engine
	// Root, when set, is the host directory under which every absolute path
	// lives ("/var/lib/x" is Root+"/var/lib/x"), bind-mount sources included.
	Root string
	// Prefix is put before every container, network and volume name on the
	// engine, so that several runtimes can share one engine (tests). The
	// labels and the listed names carry the resource name without it.
	Prefix string
	// ResolveImage, when set, maps a declared image reference to the one the
	// engine runs; the labels keep the declared one. Tests map every
	// reference to their own image.
	ResolveImage func(ref string) string
	// PullTimeout bounds one image pull (default 2 minutes): a missing image
	// is a failed resource, never a hang.
	PullTimeout time.Duration
	// StopTimeout is how long a container is given to stop before it is
	// killed, on removal (default 10 s).
	StopTimeout time.Duration
	// RestartPolicy of the containers it creates (default "unless-stopped").
	RestartPolicy container.RestartPolicyMode
	// Labels are put on every container, network and volume it makes,
	// beside the runtime's own (which they may not name); a container with
	// one of these keys at another value is not this runtime's (see the
	// package comment).
	Labels map[string]string
}

// Runtime is the agent's Runtime on a Docker engine. It is safe for
// concurrent use.
type Runtime struct {
	opt Options
	eng Engine

	// netMu serialises making networks: the engine's duplicate-name check
	// is not atomic, and two creates of one network at once make two
	// networks of that name, which no container can join after.
	netMu sync.Mutex

	ownMu sync.Mutex
	own   map[string]time.Time // container id → until when its events are the runtime's own (watch.go)
	// ownStart holds the ids whose next start event is the runtime's own
	// (watch.go).
	ownStart map[string]bool
	// exits holds the exit code of each container's last die event
	// (watch.go).
	exits map[string]int

	// hostsMu serialises writes of the containers' own hosts files with
	// rewrites of their roster part (hosts.go).
	hostsMu sync.Mutex
}

// New makes a Runtime. With no Options.Engine it makes a client from the
// environment; it does not dial the engine until the first call.
func New(opt Options) (*Runtime, error) {
	if opt.Node == "" {
		return nil, fmt.Errorf("docker: new: empty node name: %w", agent.ErrInvalid)
	}
	if opt.Root != "" && !filepath.IsAbs(opt.Root) {
		return nil, fmt.Errorf("docker: new: root %q is not absolute: %w", opt.Root, agent.ErrInvalid)
	}
	if opt.PullTimeout <= 0 {
		opt.PullTimeout = 2 * time.Minute
	}
	if opt.StopTimeout <= 0 {
		opt.StopTimeout = 10 * time.Second
	}
	if opt.RestartPolicy == "" {
		opt.RestartPolicy = container.RestartPolicyUnlessStopped
	}
	for k := range opt.Labels {
		if k == "" || ownLabels[k] {
			return nil, fmt.Errorf("docker: new: label %q is the runtime's own: %w", k, agent.ErrInvalid)
		}
	}
	eng := opt.Engine
	if eng == nil {
		c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
		if err != nil {
			return nil, fmt.Errorf("docker: new: client: %w", err)
		}
		eng = c
	}
	return &Runtime{opt: opt, eng: eng, own: map[string]time.Time{}}, nil
}

// ErrNoEngine means no Docker engine answered where the environment names
// one (DOCKER_HOST, else /var/run/docker.sock).
var ErrNoEngine = errors.New("no Docker engine reachable")

// Reachable pings the engine the environment names, with API version
// negotiation, within ctx: nil when it answers, else an error wrapping
// ErrNoEngine that says where it looked and why it failed. `mesh up` asks
// it before running a node on the engine.
func Reachable(ctx context.Context) error {
	c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return fmt.Errorf("docker: %w: client: %v", ErrNoEngine, err)
	}
	defer c.Close()
	if _, err := c.Ping(ctx); err != nil {
		return fmt.Errorf("docker: %w at %s: %v", ErrNoEngine, c.DaemonHost(), pingCause(err))
	}
	return nil
}

// pingCause is why a ping failed: "cannot connect" for a connection that
// failed (the client's own message repeats the address and advises starting
// the daemon; the caller says what it does instead), else the error.
func pingCause(err error) string {
	if client.IsErrConnectionFailed(err) {
		return "cannot connect"
	}
	return err.Error()
}

// Node is the node the runtime applies for.
func (r *Runtime) Node() string { return r.opt.Node }

// EngineName is what the engine calls the container, network or volume
// the declaration calls name: Options.Prefix + name.
func (r *Runtime) EngineName(name string) string { return r.opt.Prefix + name }

// fail wraps an engine error: not found and conflict keep their meaning for
// the agent; a done context stays a context error; anything else is
// agent.ErrRuntime.
func fail(op, subject string, err error) error {
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("docker: %s %s: %w", op, subject, err)
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("docker: %s %s: %w: %v", op, subject, agent.ErrNotFound, err)
	case cerrdefs.IsConflict(err):
		return fmt.Errorf("docker: %s %s: %w: %v", op, subject, agent.ErrExists, err)
	}
	return fmt.Errorf("docker: %s %s: %w: %v", op, subject, agent.ErrRuntime, err)
}

func done(ctx context.Context, op, subject string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("docker: %s %s: %w", op, subject, err)
	}
	return nil
}

// ours reports whether labels mark a container this runtime manages: its
// node's, and no other mesh's (Options.Labels).
func (r *Runtime) ours(labels map[string]string) bool {
	if labels[agent.LabelManaged] != "true" || labels[agent.LabelNode] != r.opt.Node {
		return false
	}
	for k, v := range r.opt.Labels {
		if got, ok := labels[k]; ok && got != v {
			return false
		}
	}
	return true
}

// ErrOtherMesh means a container, network or volume of the engine name
// the runtime would use is another mesh's: it carries one of
// Options.Labels' keys at another value (another data directory's
// meshplane.data on a shared engine). It is never touched, joined or
// mounted; the error names its owner, and the resource fails (the same
// each pass, never a churn) until one of the two meshes gives its node
// another --docker-prefix (mesh up derives one from the data directory's
// id). It is also agent.ErrExists.
var ErrOtherMesh = errors.New("another mesh's")

// otherMesh names the label by which labels mark another mesh's object
// ("meshplane.data=ID"), "" when they mark none: a key of Options.Labels at
// another value. An object without the key (made before it was given, or
// by hand) is not another mesh's.
func (r *Runtime) otherMesh(labels map[string]string) string {
	for _, k := range slices.Sorted(maps.Keys(r.opt.Labels)) {
		if got, ok := labels[k]; ok && got != r.opt.Labels[k] {
			return k + "=" + got
		}
	}
	return ""
}

// refuseOther is the error for the engine's kind named en, whose labels
// mark another mesh's (owner), or nil when they do not.
func (r *Runtime) refuseOther(kind, en string, labels map[string]string) error {
	owner := r.otherMesh(labels)
	if owner == "" {
		return nil
	}
	if n := labels[agent.LabelNode]; n != "" {
		owner += ", node " + n
	}
	return fmt.Errorf("the engine's %s %s is %w (%s), not touched: give this node's agent another --docker-prefix: %w", kind, en, ErrOtherMesh, owner, agent.ErrExists)
}

// ownLabels are the labels the runtime sets itself.
var ownLabels = map[string]bool{
	agent.LabelManaged: true, agent.LabelNode: true, agent.LabelResource: true,
	agent.LabelModule: true, agent.LabelDigest: true, agent.LabelSpec: true,
	agent.LabelRolloutOf: true,
}

// rolloutOf is the resource the container name becomes when it is a
// start-first roll-out's new container (NAME.next), else "".
func rolloutOf(name string) string {
	if base, ok := strings.CutSuffix(name, agent.RolloutSuffix); ok && base != "" {
		return base
	}
	return ""
}

// resourceOf is the resource a managed container is: its label's, unless
// it is a start-first roll-out's new container the agent renamed to the
// resource it was made for (RenameContainer: labels cannot change).
func (r *Runtime) resourceOf(s container.Summary) string {
	if of := s.Labels[agent.LabelRolloutOf]; of != "" && slices.Contains(s.Names, "/"+r.EngineName(of)) {
		return of
	}
	return s.Labels[agent.LabelResource]
}

// RenameContainer implements agent.Renamer: the engine renames the
// container, and it is listed and found as the resource to from then on
// when it was made as to's start-first roll-out (NAME.next); any other
// rename is refused, since a container's labels name it for good.
func (r *Runtime) RenameContainer(ctx context.Context, from, to string) error {
	if err := agent.ValidateContainerName(to); err != nil {
		return fmt.Errorf("docker: rename %s: %w", from, err)
	}
	if rolloutOf(from) != to {
		return fmt.Errorf("docker: rename %s to %s: only a roll-out's new container is renamed, to what it was made for: %w", from, to, agent.ErrInvalid)
	}
	found, err := r.findAll(ctx, "rename", from)
	if err != nil {
		return err
	}
	if len(found) != 1 {
		return fmt.Errorf("docker: rename %s: %d containers carry its labels: %w", from, len(found), agent.ErrInvalid)
	}
	if _, err := r.findAll(ctx, "rename", to); err == nil {
		return fmt.Errorf("docker: rename %s to %s: container %w", from, to, agent.ErrExists)
	} else if !errors.Is(err, agent.ErrNotFound) {
		return err
	}
	if err := r.eng.ContainerRename(ctx, found[0].ID, r.EngineName(to)); err != nil {
		return fail("rename", from, err)
	}
	return nil
}

// ListContainers implements agent.Runtime: one ContainerList call.
func (r *Runtime) ListContainers(ctx context.Context) ([]agent.Container, error) {
	if err := done(ctx, "list", "containers"); err != nil {
		return nil, err
	}
	list, err := r.eng.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(
		filters.Arg("label", agent.LabelManaged+"=true"),
		filters.Arg("label", agent.LabelNode+"="+r.opt.Node),
	)})
	if err != nil {
		return nil, fail("list", "containers", err)
	}
	out := make([]agent.Container, 0, len(list))
	for _, s := range list {
		if !r.ours(s.Labels) || s.Labels[agent.LabelResource] == "" {
			continue // a filter the engine did not apply is not trusted
		}
		c := agent.Container{
			Name:    r.resourceOf(s),
			Module:  s.Labels[agent.LabelModule],
			Digest:  s.Labels[agent.LabelDigest],
			Stopped: stopped(s.State),
		}
		if err := json.Unmarshal([]byte(s.Labels[agent.LabelSpec]), &c.Spec); err != nil {
			// A spec label that does not decode is listed with no digest, so
			// the agent replaces it rather than trusting it.
			c.Digest, c.Spec = "", declaration.Container{}
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// stopped reports whether a container in state s exists but does not run
// and can be started by the agent. A restarting container does not run
// either (it is between two crashes: InspectContainer says "restarting",
// and the agent reports a crash loop), but it is not the agent's to start:
// the engine's restart policy is already at it, and a start would race it.
// A paused one is an operator's.
func stopped(s container.ContainerState) bool {
	switch s {
	case container.StateCreated, container.StateExited, container.StateDead:
		return true
	}
	return false
}

// find returns the ids of the managed containers of this node for the
// resource name: found by their labels, not by the engine's name, so a
// container renamed behind the agent's back is still its own. One at most,
// unless something outside the mesh copied its labels.
func (r *Runtime) find(ctx context.Context, op, name string) ([]string, error) {
	found, err := r.findAll(ctx, op, name)
	ids := make([]string, len(found))
	for i, c := range found {
		ids[i] = c.ID
	}
	return ids, err
}

// findAll is find with the engine's summary of each container.
func (r *Runtime) findAll(ctx context.Context, op, name string) ([]container.Summary, error) {
	if err := agent.ValidateContainerName(name); err != nil {
		return nil, fmt.Errorf("docker: %s: %w", op, err)
	}
	var found []container.Summary
	// By its own label, and, for a start-first roll-out's new container
	// renamed to name, by the resource it became (resourceOf).
	for _, label := range []string{agent.LabelResource, agent.LabelRolloutOf} {
		list, err := r.eng.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(
			filters.Arg("label", agent.LabelManaged+"=true"),
			filters.Arg("label", agent.LabelNode+"="+r.opt.Node),
			filters.Arg("label", label+"="+name),
		)})
		if err != nil {
			return nil, fail(op, name, err)
		}
		for _, c := range list {
			if r.ours(c.Labels) && r.resourceOf(c) == name && !slices.ContainsFunc(found, func(f container.Summary) bool { return f.ID == c.ID }) {
				found = append(found, c)
			}
		}
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("docker: %s %s: managed container of node %s %w", op, name, r.opt.Node, agent.ErrNotFound)
	}
	return found, nil
}

// RemoveContainer implements agent.Runtime: it stops the container (giving
// it its spec's stop_grace_period, else StopTimeout) and removes it,
// keeping its volumes.
func (r *Runtime) RemoveContainer(ctx context.Context, name string) error {
	if err := done(ctx, "remove", name); err != nil {
		return err
	}
	found, err := r.findAll(ctx, "remove", name)
	if err != nil {
		return err
	}
	for _, c := range found {
		id := c.ID
		secs := int(r.opt.StopTimeout / time.Second)
		var spec declaration.Container
		if json.Unmarshal([]byte(c.Labels[agent.LabelSpec]), &spec) == nil && spec.StopGracePeriod > 0 {
			secs = int((spec.StopGracePeriod + time.Second - 1) / time.Second)
		}
		r.mine(id)
		if err := r.eng.ContainerStop(ctx, id, container.StopOptions{Timeout: &secs}); err != nil && !cerrdefs.IsNotFound(err) {
			return fail("remove", name, fmt.Errorf("stop: %w", err))
		}
		if err := r.eng.ContainerRemove(ctx, id, container.RemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			return fail("remove", name, err)
		}
	}
	return nil
}

// StartContainer implements agent.Runtime.
func (r *Runtime) StartContainer(ctx context.Context, name string) error {
	if err := done(ctx, "start", name); err != nil {
		return err
	}
	found, err := r.findAll(ctx, "start", name)
	if err != nil {
		return err
	}
	for _, c := range found {
		r.startedMine(c.ID)
		if err := r.eng.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
			return fail("start", name, err)
		}
		var spec declaration.Container
		if json.Unmarshal([]byte(c.Labels[agent.LabelSpec]), &spec) == nil && ownHostsFile(spec) {
			// Its address may have changed with the start.
			if err := r.startedHosts(ctx, name, c.ID); err != nil {
				return fmt.Errorf("docker: start %s: its hosts file: %w", name, err)
			}
		}
	}
	return nil
}

// CreateContainer implements agent.Runtime: it makes sure of the image
// (pulling it, bounded by PullTimeout), the networks and the volumes, then
// creates the container with its labels, joins its networks and starts it.
// A container that is created but will not start is removed again.
func (r *Runtime) CreateContainer(ctx context.Context, c agent.Container) error {
	if err := done(ctx, "create", c.Name); err != nil {
		return err
	}
	if err := agent.ValidateContainer(c); err != nil {
		return fmt.Errorf("docker: create: %w", err)
	}
	spec, err := json.Marshal(c.Spec)
	if err != nil {
		return fmt.Errorf("docker: create %s: encode spec: %w", c.Name, err)
	}
	var mounts []mount.Mount
	for _, m := range c.Spec.Mounts {
		if m.Volume {
			if err := r.ensureVolume(ctx, m.Source); err != nil {
				return fmt.Errorf("docker: create %s: %w", c.Name, err)
			}
			mounts = append(mounts, mount.Mount{Type: mount.TypeVolume, Source: r.EngineName(m.Source), Target: m.Target, ReadOnly: m.ReadOnly})
			continue
		}
		if rosterHosts(m.Source, m.Target) {
			// The container's own hosts file (hosts.go) in its place.
			if err := r.writeContainerHosts(ctx, c.Name, nil); err != nil {
				return fmt.Errorf("docker: create %s: its hosts file: %w", c.Name, err)
			}
			mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: r.host(hostsOf(c.Name)), Target: m.Target, ReadOnly: m.ReadOnly})
			continue
		}
		src, err := r.source(m.Source)
		if errors.Is(err, agent.ErrNotFound) {
			// A container of that name is the first thing wrong.
			if _, ierr := r.eng.ContainerInspect(ctx, r.EngineName(c.Name)); ierr == nil {
				return fmt.Errorf("docker: create %s: container %w", c.Name, agent.ErrExists)
			}
			return fmt.Errorf("docker: create %s: mount source %s: %w", c.Name, m.Source, agent.ErrNotFound)
		} else if err != nil {
			return fmt.Errorf("docker: create %s: mount source %s: %w", c.Name, m.Source, err)
		}
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: src, Target: m.Target, ReadOnly: m.ReadOnly})
	}
	img, err := r.ensureImage(ctx, c.Spec.Image)
	if err != nil {
		return fmt.Errorf("docker: create %s: %w", c.Name, err)
	}
	for _, n := range c.Spec.Networks {
		if err := r.ensureNetwork(ctx, n); err != nil {
			return fmt.Errorf("docker: create %s: %w", c.Name, err)
		}
	}

	cfg := &container.Config{
		Image: img,
		Env:   append(slices.Clip(c.Spec.Env), c.SecretEnv...), // the secrets' values: never in a label
		Labels: r.labelsWith(map[string]string{
			agent.LabelResource:  c.Name,
			agent.LabelRolloutOf: rolloutOf(c.Name),
			agent.LabelModule:    c.Module,
			agent.LabelDigest:    c.Digest,
			agent.LabelSpec:      string(spec),
		}),
	}
	if len(c.Spec.Command) > 0 {
		cfg.Cmd = c.Spec.Command
	}
	hc := &container.HostConfig{Mounts: mounts, RestartPolicy: container.RestartPolicy{Name: r.opt.RestartPolicy}}
	options(c.Spec, cfg, hc)
	var nc *network.NetworkingConfig
	if len(c.Spec.Networks) > 0 && c.Spec.NetworkMode == "" {
		first := r.EngineName(c.Spec.Networks[0])
		hc.NetworkMode = container.NetworkMode(first)
		nc = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			first: {Aliases: []string{c.Name}},
		}}
	}
	created, err := r.eng.ContainerCreate(ctx, cfg, hc, nc, nil, r.EngineName(c.Name))
	if err != nil {
		if cerrdefs.IsConflict(err) {
			// The name is taken: another mesh's is said as such.
			if in, ierr := r.eng.ContainerInspect(ctx, r.EngineName(c.Name)); ierr == nil && in.Config != nil {
				if oerr := r.refuseOther("container", r.EngineName(c.Name), in.Config.Labels); oerr != nil {
					return fmt.Errorf("docker: create %s: %w", c.Name, oerr)
				}
			}
		}
		return fail("create", c.Name, err)
	}
	// Engine API 1.41 takes one network at create; the others are joined
	// before the start.
	for _, n := range c.Spec.Networks[min(1, len(c.Spec.Networks)):] {
		if err := r.eng.NetworkConnect(ctx, r.EngineName(n), created.ID, &network.EndpointSettings{Aliases: []string{c.Name}}); err != nil {
			return r.undo(created.ID, fail("create", c.Name, fmt.Errorf("join network %s: %w", n, err)))
		}
	}
	r.startedMine(created.ID)
	if err := r.eng.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return r.undo(created.ID, fail("create", c.Name, fmt.Errorf("start: %w", err)))
	}
	if ownHostsFile(c.Spec) {
		if err := r.startedHosts(ctx, c.Name, created.ID); err != nil {
			return r.undo(created.ID, fmt.Errorf("docker: create %s: its hosts file: %w", c.Name, err))
		}
	}
	return nil
}

// ownHostsFile reports whether s mounts the node's hosts file, which this
// runtime serves as the container's own (hosts.go).
func ownHostsFile(s declaration.Container) bool {
	for _, m := range s.Mounts {
		if !m.Volume && rosterHosts(m.Source, m.Target) {
			return true
		}
	}
	return false
}

// undo removes a container CreateContainer made and could not finish, so a
// failed create leaves nothing, and returns err.
func (r *Runtime) undo(id string, err error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r.mine(id)
	if rerr := r.eng.ContainerRemove(ctx, id, container.RemoveOptions{Force: true}); rerr != nil && !cerrdefs.IsNotFound(rerr) {
		return fmt.Errorf("%w (and removing the unfinished container: %v)", err, rerr)
	}
	return err
}

// ensureImage returns the reference the engine runs for ref, pulling it when
// the engine does not have it.
func (r *Runtime) ensureImage(ctx context.Context, ref string) (string, error) {
	if r.opt.ResolveImage != nil {
		ref = r.opt.ResolveImage(ref)
	}
	if _, err := r.eng.ImageInspect(ctx, ref); err == nil {
		return ref, nil
	} else if !cerrdefs.IsNotFound(err) {
		return "", fail("inspect image", ref, err)
	}
	pctx, cancel := context.WithTimeout(ctx, r.opt.PullTimeout)
	defer cancel()
	if err := r.pull(pctx, ref); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("pull image %s: %w", ref, ctx.Err())
		}
		return "", fmt.Errorf("image %s: not in the engine, and pulling it failed: %w: %w: %v", ref, ErrImage, agent.ErrRuntime, err)
	}
	return ref, nil
}

// pull pulls ref and reads the engine's progress stream to its end: the
// engine reports a failed pull in the stream, not in the status.
func (r *Runtime) pull(ctx context.Context, ref string) error {
	rc, err := r.eng.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return err
	}
	defer rc.Close()
	dec := json.NewDecoder(rc)
	for {
		var m struct {
			Error       string `json:"error"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("read pull progress: %w", err)
		}
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			return errors.New(m.ErrorDetail.Message)
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
	}
	if _, err := r.eng.ImageInspect(ctx, ref); err != nil {
		return fmt.Errorf("after the pull: %w", err)
	}
	return nil
}

// labels are what every thing the runtime makes carries: managed, the
// node, and Options.Labels.
func (r *Runtime) labels() map[string]string { return r.labelsWith(nil) }

// labelsWith is labels with more (a container's own).
func (r *Runtime) labelsWith(more map[string]string) map[string]string {
	out := make(map[string]string, 2+len(r.opt.Labels)+len(more))
	for _, m := range []map[string]string{r.opt.Labels, more} {
		for k, v := range m {
			out[k] = v
		}
	}
	out[agent.LabelManaged], out[agent.LabelNode] = "true", r.opt.Node
	return out
}

// ensureNetwork makes the network name when the engine has none of that
// name. A network made by hand of that name is joined as it is; another
// mesh's is not (ErrOtherMesh).
func (r *Runtime) ensureNetwork(ctx context.Context, name string) error {
	en := r.EngineName(name)
	r.netMu.Lock()
	defer r.netMu.Unlock()
	if nw, err := r.eng.NetworkInspect(ctx, en, network.InspectOptions{}); err == nil {
		return r.refuseOther("network", en, nw.Labels)
	} else if !cerrdefs.IsNotFound(err) {
		return fail("inspect network", name, err)
	}
	_, err := r.eng.NetworkCreate(ctx, en, network.CreateOptions{Labels: r.labels()})
	if err != nil && !cerrdefs.IsConflict(err) {
		return fail("create network", name, err)
	}
	return nil
}

// ensureVolume makes the volume name when the engine has none of that
// name; another mesh's is never mounted (ErrOtherMesh).
func (r *Runtime) ensureVolume(ctx context.Context, name string) error {
	en := r.EngineName(name)
	if v, err := r.eng.VolumeInspect(ctx, en); err == nil {
		return r.refuseOther("volume", en, v.Labels)
	} else if !cerrdefs.IsNotFound(err) {
		return fail("inspect volume", name, err)
	}
	if _, err := r.eng.VolumeCreate(ctx, volume.CreateOptions{Name: en, Labels: r.labels()}); err != nil {
		return fail("create volume", name, err)
	}
	return nil
}
