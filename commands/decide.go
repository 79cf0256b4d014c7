package commands

import (
	"fmt"

	"github.com/opencontainers/go-digest"
	"net/netip"
	"strconv"
	"strings"

	"meshplane/declaration"
	"meshplane/events"
)

// Command is an operator's (or an agent's) request to change the mesh. Each
// names the stream it appends to; Decide turns it into events.
type Command interface {
	// Stream is the stream the command's events are appended to.
	Stream() string
	command()
}

// RegisterNode adds a node to the mesh.
type RegisterNode struct{ Node string }

// AdoptNode marks a node as adopted: it existed before the mesh.
type AdoptNode struct{ Node string }

// SetNodeSetting sets (or, with an empty Value, clears) a node setting.
type SetNodeSetting struct{ Node, Key, Value string }

// DefineModule defines (or redefines) a module.
type DefineModule struct {
	Module string
	Spec   events.ModuleSpec
}

// AssignModule assigns a defined module to a node.
type AssignModule struct{ Module, Node string }

// ReleaseModule releases a module from a node.
type ReleaseModule struct{ Module, Node string }

// TakeModule takes an assigned module on an adopted node.
type TakeModule struct{ Module, Node string }

// RecordArtifact records a build of one of a module's artifacts.
type RecordArtifact struct{ Module, Name, Digest string }

func (c RegisterNode) Stream() string   { return events.NodeStream(c.Node) }
func (c AdoptNode) Stream() string      { return events.NodeStream(c.Node) }
func (c SetNodeSetting) Stream() string { return events.NodeStream(c.Node) }
func (c DefineModule) Stream() string   { return events.ModuleStream(c.Module) }
func (c AssignModule) Stream() string   { return events.NodeStream(c.Node) }
func (c ReleaseModule) Stream() string  { return events.NodeStream(c.Node) }
func (c TakeModule) Stream() string     { return events.NodeStream(c.Node) }
func (c RecordArtifact) Stream() string { return events.ModuleStream(c.Module) }

func (RegisterNode) command()   {}
func (AdoptNode) command()      {}
func (SetNodeSetting) command() {}
func (DefineModule) command()   {}
func (AssignModule) command()   {}
func (ReleaseModule) command()  {}
func (TakeModule) command()     {}
func (RecordArtifact) command() {}

// State is what Decide needs to know: the node and the module the command
// names (zero values when it names none, or they do not exist yet), and the
// routed names other modules claim.
type State struct {
	Node   Node
	Module Module
	// Claims maps a routed name to another module that routes it: for
	// DefineModule every other defined module's routes, for AssignModule
	// those of every other module assigned to a node. Nil for the other
	// commands.
	Claims map[string]string
}

// Decide is the whole write-side policy: given the state of the aggregates a
// command names, the events it produces, or a *Rejection. It is pure.
//
// One rule for work already done: a command whose effect the state already
// holds (registering a registered node, adopting an adopted one, setting a
// setting to its value, defining a module as it is defined, assigning an
// assigned module, releasing one that is not assigned, taking a taken one,
// recording the build already recorded) is no error and produces no events,
// so an operator can run a script again. Unchanged says what such a command
// found. A command is still refused when its input is invalid or what it
// needs is missing (an unknown node or module, a take on a node that is not
// adopted, a take of a module not assigned), whether or not its work is done.
func Decide(s State, c Command) ([]events.Payload, error) {
	if err := checkNames(c); err != nil {
		return nil, err
	}
	switch c := c.(type) {
	case RegisterNode:
		if s.Node.Registered {
			return nil, nil
		}
		return one(events.NodeRegistered{Node: c.Node})

	case AdoptNode:
		if err := registered(s.Node, c.Node); err != nil {
			return nil, err
		}
		if s.Node.Adopted {
			return nil, nil
		}
		return one(events.NodeAdopted{Node: c.Node})

	case SetNodeSetting:
		if err := registered(s.Node, c.Node); err != nil {
			return nil, err
		}
		if err := validSetting(c.Key, c.Value); err != nil {
			return nil, err
		}
		if s.Node.Settings[c.Key] == c.Value {
			return nil, nil
		}
		return one(events.NodeSettingSet{Node: c.Node, Key: c.Key, Value: c.Value})

	case DefineModule:
		if err := ValidateSpec(c.Spec); err != nil {
			return nil, reject(CodeInvalid, "module %s: %v", c.Module, err)
		}
		if s.Module.Defined && declaration.Digest(s.Module.Spec) == declaration.Digest(c.Spec) {
			return nil, nil
		}
		for _, r := range c.Spec.Routes {
			if other, ok := s.Claims[r]; ok && other != c.Module {
				return nil, reject(CodeRouteClaimed, "module %s routes %s, which module %s already routes", c.Module, r, other)
			}
		}
		return one(events.ModuleDefined{Module: c.Module, Spec: c.Spec})

	case AssignModule:
		if err := registered(s.Node, c.Node); err != nil {
			return nil, err
		}
		if !s.Module.Defined {
			return nil, reject(CodeModuleUnknown, "cannot assign module %s to %s: module %s is not defined", short(c.Module), c.Node, short(c.Module))
		}
		if s.Node.Assigned[c.Module] {
			return nil, nil
		}
		for _, r := range s.Module.Spec.Routes {
			if other, ok := s.Claims[r]; ok && other != c.Module {
				return nil, reject(CodeRouteClaimed, "cannot assign module %s to %s: it routes %s, which module %s, assigned in the mesh, already routes", c.Module, c.Node, r, other)
			}
		}
		return one(events.ModuleAssigned{Module: c.Module, Node: c.Node})

	case ReleaseModule:
		if err := registered(s.Node, c.Node); err != nil {
			return nil, err
		}
		if !s.Node.Assigned[c.Module] {
			if !s.Module.Defined {
				return nil, reject(CodeModuleUnknown, "cannot release module %s from %s: module %s is not defined", short(c.Module), c.Node, short(c.Module))
			}
			return nil, nil
		}
		return one(events.ModuleReleased{Module: c.Module, Node: c.Node})

	case TakeModule:
		if err := registered(s.Node, c.Node); err != nil {
			return nil, err
		}
		if !s.Node.Adopted {
			return nil, reject(CodeNotAdopted, "cannot take module %s on %s: %s is not an adopted node, its modules need no take", short(c.Module), c.Node, c.Node)
		}
		if !s.Node.Assigned[c.Module] {
			return nil, reject(CodeNotAssigned, "cannot take module %s on %s: it is not assigned there", short(c.Module), c.Node)
		}
		if s.Node.Taken[c.Module] {
			return nil, nil
		}
		return one(events.ModuleTaken{Module: c.Module, Node: c.Node})

	case RecordArtifact:
		if !s.Module.Defined {
			return nil, reject(CodeModuleUnknown, "cannot record artifact %s: module %s is not defined", short(c.Name), short(c.Module))
		}
		if !validArtifact(c.Name) {
			return nil, reject(CodeInvalid, "artifact name %s: segments of lower-case letters, digits, '-', '_' and '.', joined by '/'", quote(c.Name))
		}
		if err := CheckDigest(c.Digest); err != nil {
			return nil, reject(CodeInvalid, "artifact %s: %v", c.Name, err)
		}
		if s.Module.Artifacts[c.Name] == c.Digest {
			return nil, nil
		}
		return one(events.ArtifactRecorded{Module: c.Module, Name: c.Name, Digest: c.Digest})
	}
	return nil, reject(CodeInvalid, "unknown command %T", c)
}

// Unchanged is what the CLI tells an operator when c found its work already
// done (Decide produced no events and no error): a sentence naming what was
// already so.
func Unchanged(c Command) string {
	switch c := c.(type) {
	case RegisterNode:
		return fmt.Sprintf("node %s: already registered", c.Node)
	case AdoptNode:
		return fmt.Sprintf("node %s: already adopted", c.Node)
	case SetNodeSetting:
		if c.Value == "" {
			return fmt.Sprintf("node %s: %s already unset", c.Node, c.Key)
		}
		return fmt.Sprintf("node %s: %s already %s", c.Node, c.Key, c.Value)
	case DefineModule:
		return fmt.Sprintf("module %s: already defined so", c.Module)
	case AssignModule:
		return fmt.Sprintf("module %s: already assigned to %s", c.Module, c.Node)
	case ReleaseModule:
		return fmt.Sprintf("module %s: not assigned to %s", c.Module, c.Node)
	case TakeModule:
		return fmt.Sprintf("module %s: already taken on %s", c.Module, c.Node)
	case RecordArtifact:
		return fmt.Sprintf("artifact %s: build %s already recorded", c.Name, c.Digest)
	}
	return fmt.Sprintf("%T: nothing to change", c)
}

func one(p events.Payload) ([]events.Payload, error) { return []events.Payload{p}, nil }

func registered(n Node, name string) error {
	if !n.Registered {
		return reject(CodeNodeUnknown, "node %s is not registered", short(name))
	}
	return nil
}

// checkNames refuses a command naming a node or a module by a name that is
// not a valid name, before anything is read under that name.
func checkNames(c Command) error {
	if n := nodeOf(c); n != "" || isNodeCommand(c) {
		if err := checkName("node", n); err != nil {
			return err
		}
	}
	if m := moduleOf(c); m != "" || isModuleCommand(c) {
		if err := checkName("module", m); err != nil {
			return err
		}
	}
	return nil
}

func isNodeCommand(c Command) bool {
	switch c.(type) {
	case RegisterNode, AdoptNode, SetNodeSetting, AssignModule, ReleaseModule, TakeModule:
		return true
	}
	return false
}

func isModuleCommand(c Command) bool {
	switch c.(type) {
	case DefineModule, AssignModule, ReleaseModule, TakeModule, RecordArtifact:
		return true
	}
	return false
}

// checkName refuses a node or module name that is not a valid name,
// quoting it shortened.
func checkName(what, name string) error {
	if !validName(name) {
		return reject(CodeInvalid, "%s name %s: use up to %d lower-case letters, digits, '-', '_' and '.', starting with a letter or digit", what, quote(name), maxName)
	}
	return nil
}

// CheckDigest checks that d is a real build digest: "sha256:" and 64
// lower-case hex digits (github.com/opencontainers/go-digest). It is checked
// where an operator records a build; readers of the stream accept whatever
// history holds.
func CheckDigest(d string) error {
	dg, err := digest.Parse(d)
	if err == nil && dg.Algorithm() != digest.SHA256 {
		err = fmt.Errorf("algorithm %s", dg.Algorithm())
	}
	if err != nil {
		return fmt.Errorf("digest %s is not sha256: and 64 lower-case hex digits (%v)", quote(d), err)
	}
	return nil
}

func validSetting(key, value string) error {
	switch {
	case key == events.SettingPrivateAddress:
		if value == "" {
			return nil
		}
		if _, err := netip.ParseAddr(value); err != nil {
			return reject(CodeInvalid, "private address %q is not an IP address", value)
		}
	case key == events.SettingArtifactStore, strings.HasPrefix(key, events.SettingPortPrefix):
		if key != events.SettingArtifactStore && !validName(strings.TrimPrefix(key, events.SettingPortPrefix)) {
			return reject(CodeInvalid, "setting %q: port names use lower-case letters, digits, '-', '_' and '.'", key)
		}
		if value == "" {
			return nil
		}
		if p, err := strconv.ParseUint(value, 10, 16); err != nil || p == 0 {
			return reject(CodeInvalid, "setting %s: %q is not a port (1-65535)", key, value)
		}
	default:
		return reject(CodeInvalid, "unknown node setting %q (use %s, %s or %s<name>)",
			key, events.SettingPrivateAddress, events.SettingArtifactStore, events.SettingPortPrefix)
	}
	return nil
}

// ValidateSpec checks what can be checked of a module on its own: names,
// paths, modes, and that each container runs exactly one image or artifact.
// Whether a module set composes on a node (container names claimed twice,
// ports and artifacts that reach nothing) is decided at compose time: that is
// a statement about the node, not about the module.
func ValidateSpec(s events.ModuleSpec) error {
	for i, r := range s.Routes {
		if !validHostname(r) {
			return fmt.Errorf("routes[%d]: %q is not a host name", i, r)
		}
	}
	for i, c := range s.Containers {
		f := fmt.Sprintf("containers[%d]", i)
		if !validName(c.Name) {
			return fmt.Errorf("%s.name: %q: use lower-case letters, digits, '-', '_' and '.'", f, c.Name)
		}
		switch {
		case c.Image == "" && c.Artifact == "":
			return fmt.Errorf("%s (%s): names neither an image nor an artifact", f, c.Name)
		case c.Image != "" && c.Artifact != "":
			return fmt.Errorf("%s (%s): names both an image and an artifact", f, c.Name)
		case c.Artifact != "" && !validArtifact(c.Artifact):
			return fmt.Errorf("%s.artifact: %q is not an artifact name", f, c.Artifact)
		}
		for k := range c.Env {
			if k == "" || strings.ContainsAny(k, "= \t\n") {
				return fmt.Errorf("%s.env: %q is not a variable name", f, k)
			}
		}
		for j, m := range c.Mounts {
			if !absPath(m.Source) {
				return fmt.Errorf("%s.mounts[%d].source: %q is not an absolute path", f, j, m.Source)
			}
			if m.Target != "" && !absPath(m.Target) {
				return fmt.Errorf("%s.mounts[%d].target: %q is not an absolute path", f, j, m.Target)
			}
			if m.Volume {
				return fmt.Errorf("%s.mounts[%d]: volume mounts are not supported yet", f, j)
			}
		}
		for j, p := range c.Ports {
			if !validName(p.Port) {
				return fmt.Errorf("%s.ports[%d].port: %q is not a port name", f, j, p.Port)
			}
			if p.Env == "" || strings.ContainsAny(p.Env, "= \t\n") {
				return fmt.Errorf("%s.ports[%d].env: %q is not a variable name", f, j, p.Env)
			}
		}
	}
	for i, d := range s.Directories {
		if !absPath(d.Path) {
			return fmt.Errorf("directories[%d].path: %q is not an absolute path", i, d.Path)
		}
		if _, err := parseMode(d.Mode, 0o755); err != nil {
			return fmt.Errorf("directories[%d].mode: %v", i, err)
		}
	}
	for i, f := range s.Files {
		if !absPath(f.Path) {
			return fmt.Errorf("files[%d].path: %q is not an absolute path", i, f.Path)
		}
		if _, err := parseMode(f.Mode, 0o644); err != nil {
			return fmt.Errorf("files[%d].mode: %v", i, err)
		}
	}
	if len(s.Volumes) > 0 || len(s.Networks) > 0 {
		return fmt.Errorf("volumes and networks are not supported yet")
	}
	return nil
}

func absPath(p string) bool {
	return strings.HasPrefix(p, "/") && !strings.Contains(p, "/../") && !strings.HasSuffix(p, "/..") && !strings.ContainsAny(p, "\x00\n:")
}

func validHostname(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// parseMode parses an octal permission string ("0700", "755"); "" is def.
func parseMode(s string, def uint32) (uint32, error) {
	if s == "" {
		return def, nil
	}
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m > 0o7777 {
		return 0, fmt.Errorf("%q is not an octal mode", s)
	}
	return uint32(m), nil
}
