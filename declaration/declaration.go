// Package declaration is the wire form of a declaration: everything a node
// must run, as the controller composes it and the agent applies it. It holds
// the resource kinds, the container, mount, directory and file specs, the
// roster's routes, the hosts file's path and the spec digest.
//
// Both sides import it: the controller (commands) composes declarations, the
// agent decodes and applies them. It imports nothing of meshplane, does no
// I/O, and keeps the node side from linking the write side
// (TestAgentLinksNoWriteSide in package agent holds that).
//
// Its JSON is a wire format: fields may be added, never renamed or
// reordered. Reordering a Container's fields changes every container's
// digest, and so recreates every container on every node (seed 000);
// TestDigestsPinned holds the digests of a representative declaration.
package declaration

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// Resource kinds.
const (
	KindContainer = "container"
	KindDirectory = "directory"
	KindFile      = "file"
	KindVolume    = "volume"
	KindNetwork   = "network"
)

// HostsPath is where the node's hosts file (the roster) lives on the host;
// every container mounts it read-only at /etc/hosts. It is the node's own
// resource: it is updated in place, never part of a container's identity,
// and not counted in apply reports (docs/design.md rule 2).
const HostsPath = "/var/lib/meshplane/hosts"

// Declaration is everything a node must run, as composed by the controller,
// pushed over the bus and applied by the agent. It is a wire format: its JSON
// is what the agent receives, and fields may be added, never renamed.
//
// Resources are sorted by name and each carries the digest of its spec;
// identical inputs compose byte-identical declarations.
type Declaration struct {
	Node      string     `json:"node"`
	ID        string     `json:"declaration"` // "<node>/<n>": the n-th composed for the node
	Digest    string     `json:"digest"`      // of Adopted, Taken, Resources and RosterDigest (SpecDigest)
	Adopted   bool       `json:"adopted,omitempty"`
	Taken     []string   `json:"taken,omitempty"` // modules taken on this node, sorted
	Resources []Resource `json:"resources"`
	// Roster and Hosts (the hosts file written at HostsPath) travel only
	// in a declaration that names no roster revision (an older
	// controller's): one that names its RosterRevision travels without them
	// (Wire), and the agent fills them from the roster it holds (Fill).
	Roster      []Route  `json:"roster"`
	Hosts       string   `json:"hosts"`
	Warnings    []string `json:"warnings,omitempty"`
	Correlation string   `json:"correlation,omitempty"` // shared by this push's compose, push, apply and report
	// Added fields.
	// RosterRevision is the revision of the mesh's roster the declaration
	// was composed against (the version of the controller's roster.changed),
	// RosterDigest the digest of that roster's routes (sha256 of their JSON).
	RosterRevision uint64 `json:"roster_revision,omitempty"`
	RosterDigest   string `json:"roster_digest,omitempty"`
}

// Route is one routed name in the mesh and the address that serves it.
type Route struct {
	Name    string `json:"name"`
	Address string `json:"address,omitempty"` // "" when the serving node has no private address yet
	Node    string `json:"node"`
}

// Resource is one thing the node must hold. Exactly one of Container,
// Directory, File, Volume and Network is set, as Kind says.
type Resource struct {
	Name      string     `json:"name"`
	Kind      string     `json:"kind"`
	Module    string     `json:"module"`
	Digest    string     `json:"digest"`
	Container *Container `json:"container,omitempty"`
	Directory *Directory `json:"directory,omitempty"`
	File      *File      `json:"file,omitempty"`
}

// Container is a container's spec. Everything in it is part of the
// container's identity (its digest): what cannot change on a running
// container. The roster is not in it; the hosts file is mounted by path.
type Container struct {
	Image    string   `json:"image"`
	Command  []string `json:"command,omitempty"`
	Env      []string `json:"env,omitempty"` // "KEY=value", sorted by key
	Mounts   []Mount  `json:"mounts,omitempty"`
	Networks []string `json:"networks,omitempty"`
	// Added fields.
	Secrets []Secret `json:"secrets,omitempty"` // sorted by Env
	// How the engine checks, publishes, limits and restarts it (the module
	// file's compose keys, resolved at compose time).
	Healthcheck     *Healthcheck  `json:"healthcheck,omitempty"`
	NetworkMode     string        `json:"network_mode,omitempty"` // "host": the node's own network
	Publish         []Published   `json:"publish,omitempty"`
	Restart         string        `json:"restart,omitempty"` // "" is the runtime's default
	StopGracePeriod time.Duration `json:"stop_grace_period,omitempty"`
	Memory          int64         `json:"memory,omitempty"`    // bytes
	NanoCPUs        int64         `json:"nano_cpus,omitempty"` // billionths of a CPU
	Entrypoint      []string      `json:"entrypoint,omitempty"`
	User            string        `json:"user,omitempty"`
	CapAdd          []string      `json:"cap_add,omitempty"`
	Tmpfs           []string      `json:"tmpfs,omitempty"`
	ReadOnly        bool          `json:"read_only,omitempty"`
	DependsOn       []Dependency  `json:"depends_on,omitempty"`
	// Rollout is how the agent replaces it (its module's update block);
	// nil is stop-first with nothing waited for, as before the block.
	Rollout *Rollout `json:"rollout,omitempty"`
}

// Rollout is a module's update block as the agent acts on it: Order
// (RolloutStartFirst or RolloutStopFirst), how long a container without a
// health check must run to be healthy, and how long a roll-out may take.
type Rollout struct {
	Order           string        `json:"order"`
	MinHealthy      time.Duration `json:"min_healthy"`
	HealthyDeadline time.Duration `json:"healthy_deadline"`
}

// Roll-out orders (Rollout.Order).
const (
	RolloutStopFirst  = "stop-first"  // the old container stops, then the new one starts
	RolloutStartFirst = "start-first" // the new one starts and is healthy, then the old one stops
)

// Healthcheck is the engine's health check of a container: Test is
// [CMD, ...], [CMD-SHELL, "..."] or [NONE] (the image's own disabled); a
// zero duration or retry count is the engine's default.
type Healthcheck struct {
	Test        []string      `json:"test"`
	Interval    time.Duration `json:"interval,omitempty"`
	Timeout     time.Duration `json:"timeout,omitempty"`
	Retries     int           `json:"retries,omitempty"`
	StartPeriod time.Duration `json:"start_period,omitempty"`
}

// Published is a container port published on the node: HostPort (the
// node's setting, read at compose time) at HostIP ("" for every address).
type Published struct {
	HostIP        string `json:"host_ip,omitempty"`
	HostPort      int    `json:"host_port"`
	ContainerPort int    `json:"container_port"`
}

// Dependency is a container of the same module that is started before this
// one; with Condition "service_healthy" the agent waits, bounded, for it to
// be healthy first ("service_started" otherwise).
type Dependency struct {
	Container string `json:"container"`
	Condition string `json:"condition"`
}

// Secret is an environment variable of a container whose value is a
// secret of the controller's secret store. The declaration names the
// secret and the keyed digest of its value, never the value: the agent asks
// the controller for the value over its bus connection when it creates the
// container, holds it in memory only and hands it to the runtime. The
// digest is part of the container's identity, so a rotated secret replaces
// the container.
type Secret struct {
	Env    string `json:"env"`
	Secret string `json:"secret"`
	Digest string `json:"digest"`
}

// Secrets lists the secrets d's containers name, by name, once each, sorted.
func (d *Declaration) Secrets() []Secret {
	seen := map[string]Secret{}
	for _, r := range d.Resources {
		if r.Container == nil {
			continue
		}
		for _, s := range r.Container.Secrets {
			seen[s.Secret] = Secret{Secret: s.Secret, Digest: s.Digest}
		}
	}
	out := make([]Secret, 0, len(seen))
	for _, s := range seen {
		out = append(out, s)
	}
	sortSecrets(out)
	return out
}

func sortSecrets(ss []Secret) {
	for i := 1; i < len(ss); i++ {
		for j := i; j > 0 && ss[j].Secret < ss[j-1].Secret; j-- {
			ss[j], ss[j-1] = ss[j-1], ss[j]
		}
	}
}

// Mount is a host path or a volume mounted into a container.
type Mount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	Volume   bool   `json:"volume,omitempty"`
	ReadOnly bool   `json:"readonly,omitempty"`
}

// Directory is a directory's spec.
type Directory struct {
	Path string `json:"path"`
	Mode uint32 `json:"mode"` // permission bits, 0755 by default
}

// File is a file's spec, written in place.
type File struct {
	Path    string `json:"path"`
	Mode    uint32 `json:"mode"`
	Content string `json:"content"`
}

// Spec returns the part of r that its digest covers.
func (r Resource) Spec() any {
	switch {
	case r.Container != nil:
		return r.Container
	case r.Directory != nil:
		return r.Directory
	case r.File != nil:
		return r.File
	}
	return nil
}

// Digest returns "sha256:<hex>" of v's JSON encoding. encoding/json writes
// struct fields in declaration order and map keys sorted, so equal values
// digest equally.
func Digest(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("declaration: digest of unencodable value: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Resource returns the declared resource named name.
func (d *Declaration) Resource(name string) (Resource, bool) {
	for _, r := range d.Resources {
		if r.Name == name {
			return r, true
		}
	}
	return Resource{}, false
}
