package commands

import (
	"fmt"

	"github.com/opencontainers/go-digest"
	"net/netip"
	"path"
	"strconv"
	"strings"

	"meshplane/declaration"
	"meshplane/events"
)

// Command is an operator's (or an agent's) request to change the mesh. Each
// names the stream it appends to; Decide turns it into events. A command
// whose work is already done appends nothing and is no error (see Decide);
// each type below says when its work is done.
type Command interface {
	// Stream is the stream the command's events are appended to.
	Stream() string
	command()
}

// RegisterNode adds a node to the mesh. Done when the node is registered.
type RegisterNode struct{ Node string }

// AdoptNode marks a node as adopted: it existed before the mesh. Done when
// the node is adopted.
type AdoptNode struct{ Node string }

// SetNodeSetting sets (or, with an empty Value, clears) a node setting. Done
// when the setting has that value (or none).
type SetNodeSetting struct{ Node, Key, Value string }

// DefineModule defines (or redefines) a module. Done when the module is
// defined with a spec of the same digest.
type DefineModule struct {
	Module string
	Spec   events.ModuleSpec
}

// AssignModule assigns a defined module to a node. Done when it is assigned
// there.
type AssignModule struct{ Module, Node string }

// ReleaseModule releases a module from a node. Done when the module (which
// must be defined) is not assigned there.
type ReleaseModule struct{ Module, Node string }

// TakeModule takes an assigned module on an adopted node. Done when it is
// taken there.
type TakeModule struct{ Module, Node string }

// RecordArtifact records a build of one of a module's artifacts; Digest is
// checked by CheckDigest. Done when it is the artifact's latest recorded
// build.
type RecordArtifact struct{ Module, Name, Digest string }

// DeployModule makes compose run a module's recorded builds: with Digest,
// that build (of whichever artifact it was recorded for); without, the
// latest recorded build of each of the module's artifacts. Done when compose
// already runs them.
type DeployModule struct{ Module, Digest string }

func (c DeployModule) Stream() string   { return events.ModuleStream(c.Module) }
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
func (DeployModule) command()   {}

// State is what Decide needs to know: the node and the module the command
// names (zero values when it names none, or they do not exist yet), and the
// routed names other modules claim.
type State struct {
	Node   Node
	Module Module
	// Token is the token stream a token command names.
	Token Token
	// Secret is the secret stream a SetSecret names.
	Secret Secret
	// SecretDigests is, for DefineModule, the current digest of every
	// secret its spec reads that is set.
	SecretDigests map[string]string
	// Then is the module as it stood at the moment a RevertModule names.
	Then Then
	// Claims maps a routed name to another module that routes it: for
	// DefineModule every other defined module's routes, for AssignModule
	// those of every other module assigned to a node. Nil for the other
	// commands.
	Claims map[string]string
	// AssignedTo is, for RemoveModule, the nodes the module is assigned
	// to, sorted.
	AssignedTo []string
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
	if isTokenCommand(c) {
		return decideToken(s.Token, c)
	}
	if c, ok := c.(SetSecret); ok {
		return decideSecret(s.Secret, c)
	}
	switch c := c.(type) {
	case IssueJoinToken, JoinNode, RecordCredentials, RevokeNode:
		return decideAccess(s, c)
	case RemoveModule, RemoveNode:
		return decideRemove(s, c)
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
		spec, err := withSecrets(c.Module, c.Spec, s.SecretDigests)
		if err != nil {
			return nil, err
		}
		c.Spec = spec
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
		if err := CheckArtifact(c.Name); err != nil {
			return nil, reject(CodeInvalid, "%v", err)
		}
		if err := CheckDigest(c.Digest); err != nil {
			return nil, reject(CodeInvalid, "artifact %s: %v", c.Name, err)
		}
		if s.Module.Artifacts[c.Name] == c.Digest {
			return nil, nil
		}
		// A build is not a deployment (seed 002): a manual module's build
		// waits for a deploy, a roll-out module's is deployed at once, and an
		// artifact's first build deploys itself (there is nothing else to run).
		policy := s.Module.Upgrade()
		out := []events.Payload{events.ArtifactRecorded{Module: c.Module, Name: c.Name, Digest: c.Digest, Upgrade: policy}}
		build := []events.Build{{Name: c.Name, Digest: c.Digest}}
		switch {
		case policy == events.UpgradeRollOut && s.Module.Deployed[c.Name] != c.Digest:
			out = append(out, events.ModuleDeployed{Module: c.Module, Builds: build, By: events.DeployedByRollOut})
		case s.Module.Deployed[c.Name] == "":
			out = append(out, events.ModuleDeployed{Module: c.Module, Builds: build, By: events.DeployedByFirstBuild})
		}
		return out, nil

	case RevertModule:
		return decideRevert(s, c)

	case DeployModule:
		if !s.Module.Defined {
			return nil, reject(CodeModuleUnknown, "cannot deploy module %s: it is not defined", short(c.Module))
		}
		if len(s.Module.Artifacts) == 0 {
			return nil, reject(CodeNoBuild, "cannot deploy module %s: no build of it is recorded (mesh artifact push records one)", c.Module)
		}
		if c.Digest == "" {
			pending := s.Module.Pending()
			if len(pending) == 0 {
				return nil, nil
			}
			return one(events.ModuleDeployed{Module: c.Module, Builds: pending, By: events.DeployedByOperator})
		}
		if err := CheckDigest(c.Digest); err != nil {
			return nil, reject(CodeInvalid, "cannot deploy module %s: %v", c.Module, err)
		}
		name, ok := s.Module.Builds[c.Digest]
		if !ok {
			return nil, reject(CodeNoBuild, "cannot deploy module %s at %s: no build of it with that digest is recorded", c.Module, c.Digest)
		}
		if s.Module.Deployed[name] == c.Digest {
			return nil, nil
		}
		return one(events.ModuleDeployed{Module: c.Module, Builds: []events.Build{{Name: name, Digest: c.Digest}}, By: events.DeployedByOperator})
	}
	return nil, reject(CodeInvalid, "unknown command %T", c)
}

// UnchangedNote is what the CLI tells an operator when c found its work
// already done (Decide produced no events and no error): a sentence naming
// what was already so.
func UnchangedNote(c Command) string {
	switch c := c.(type) {
	case RegisterNode:
		return fmt.Sprintf("node %s is already registered", c.Node)
	case AdoptNode:
		return fmt.Sprintf("node %s is already adopted", c.Node)
	case SetNodeSetting:
		if c.Value == "" {
			return fmt.Sprintf("node %s has no %s already", c.Node, c.Key)
		}
		return fmt.Sprintf("node %s already has %s %s", c.Node, c.Key, c.Value)
	case DefineModule:
		return fmt.Sprintf("module %s is already defined so", c.Module)
	case AssignModule:
		return fmt.Sprintf("module %s is already assigned to %s", c.Module, c.Node)
	case ReleaseModule:
		return fmt.Sprintf("module %s is not assigned to %s", c.Module, c.Node)
	case TakeModule:
		return fmt.Sprintf("module %s is already taken on %s", c.Module, c.Node)
	case RecordArtifact:
		return fmt.Sprintf("build %s of %s is already recorded", c.Digest, c.Name)
	case RevokeToken:
		return fmt.Sprintf("the token of %s is revoked already", c.Name)
	case DeployModule:
		if c.Digest != "" {
			return fmt.Sprintf("module %s already runs build %s", c.Module, c.Digest)
		}
		return fmt.Sprintf("module %s already runs its latest recorded builds", c.Module)
	case RevertModule:
		return fmt.Sprintf("module %s is already as it was at %s", c.Module, c.To)
	}
	if n := accessNote(c); n != "" {
		return n
	}
	if n := removeNote(c); n != "" {
		return n
	}
	return fmt.Sprintf("%T changes nothing", c)
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
	if isNodeCommand(c) {
		if err := checkName("node", nodeOf(c)); err != nil {
			return err
		}
	}
	if isModuleCommand(c) {
		return checkName("module", moduleOf(c))
	}
	if isTokenCommand(c) {
		return checkName("token", tokenOf(c))
	}
	if c, ok := c.(SetSecret); ok {
		return checkName("secret", c.Name)
	}
	return nil
}

func isNodeCommand(c Command) bool {
	switch c.(type) {
	case RegisterNode, AdoptNode, SetNodeSetting, AssignModule, ReleaseModule, TakeModule,
		IssueJoinToken, JoinNode, RecordCredentials, RevokeNode, RemoveNode:
		return true
	}
	return false
}

func isModuleCommand(c Command) bool {
	switch c.(type) {
	case DefineModule, AssignModule, ReleaseModule, TakeModule, RecordArtifact, DeployModule, RemoveModule, RevertModule:
		return true
	}
	return false
}

// checkName refuses a node or module name that is not a name
// (events.CheckName: the one rule, for every place a name goes), naming
// the rule it broke.
func checkName(what, name string) error {
	if bad := badName(what, name); bad != "" {
		return reject(CodeInvalid, "%s name %s", what, bad)
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
			return reject(CodeInvalid, "private address %s is not an IP address", quote(value))
		}
	case key == events.SettingArtifactStore, strings.HasPrefix(key, events.SettingPortPrefix):
		if key != events.SettingArtifactStore {
			if bad := badName("port", strings.TrimPrefix(key, events.SettingPortPrefix)); bad != "" {
				return reject(CodeInvalid, "setting %s: port name %s", quote(key), bad)
			}
		}
		if value == "" {
			return nil
		}
		if p, err := strconv.ParseUint(value, 10, 16); err != nil || p == 0 {
			return reject(CodeInvalid, "setting %s: %s is not a port (1-65535)", key, quote(value))
		}
	default:
		return reject(CodeInvalid, "unknown node setting %s (use %s, %s or %s<name>)",
			quote(key), events.SettingPrivateAddress, events.SettingArtifactStore, events.SettingPortPrefix)
	}
	return nil
}

// SpecError is a module spec ValidateSpec refuses: the field, in the module
// file's terms ("containers[0].mounts[1].source"), and what is wrong with it.
type SpecError struct {
	Field string
	Msg   string
}

func (e *SpecError) Error() string { return e.Field + ": " + e.Msg }

func specErr(field, format string, args ...any) error {
	return &SpecError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// ValidateSpec checks what can be checked of a module on its own: names,
// paths, modes, and that each container runs exactly one image or artifact.
// Every path is absolute and clean (path.Clean leaves it as it is: no "//",
// no "." or ".." segment, no trailing "/"), and is declared once: no two
// directories or files share a path (a file and a directory included), no
// container mounts a declared file (every mounted path is a directory), and
// no container mounts two paths at one target. Its errors are *SpecError.
//
// Whether a module set composes on a node (container names claimed twice,
// ports and artifacts that reach nothing) is decided at compose time: that is
// a statement about the node, not about the module.
func ValidateSpec(s events.ModuleSpec) error {
	for i, r := range s.Routes {
		if !validHostname(r) {
			return specErr(fmt.Sprintf("routes[%d]", i), "%s is not a host name", quote(r))
		}
	}
	declared := map[string]string{} // path → the field declaring it
	declare := func(field, p string) error {
		if err := checkPath(p); err != nil {
			return specErr(field, "%v", err)
		}
		if prev, ok := declared[p]; ok {
			return specErr(field, "%s is declared twice: also %s", p, prev)
		}
		declared[p] = field
		return nil
	}
	for i, d := range s.Directories {
		if err := declare(fmt.Sprintf("directories[%d].path", i), d.Path); err != nil {
			return err
		}
		if _, err := parseMode(d.Mode, 0o755); err != nil {
			return specErr(fmt.Sprintf("directories[%d].mode", i), "%v", err)
		}
	}
	files := map[string]string{}
	for i, f := range s.Files {
		field := fmt.Sprintf("files[%d].path", i)
		if err := declare(field, f.Path); err != nil {
			return err
		}
		files[f.Path] = field
		if _, err := parseMode(f.Mode, 0o644); err != nil {
			return specErr(fmt.Sprintf("files[%d].mode", i), "%v", err)
		}
	}
	for i, c := range s.Containers {
		f := fmt.Sprintf("containers[%d]", i)
		if bad := badName("container", c.Name); bad != "" {
			return specErr(f+".name", "%s", bad)
		}
		switch {
		case c.Image == "" && c.Artifact == "":
			return specErr(f, "container %s names neither an image nor an artifact", c.Name)
		case c.Image != "" && c.Artifact != "":
			return specErr(f, "container %s names both an image and an artifact", c.Name)
		case c.Artifact != "":
			if err := CheckArtifact(c.Artifact); err != nil {
				return specErr(f+".artifact", "%v", err)
			}
		}
		for k := range c.Env {
			if k == "" || strings.ContainsAny(k, "= \t\n") {
				return specErr(f+".env", "%s is not a variable name", quote(k))
			}
		}
		for k, ref := range c.Secrets {
			if k == "" || strings.ContainsAny(k, "= \t\n") {
				return specErr(f+".env", "%s is not a variable name", quote(k))
			}
			if _, dup := c.Env[k]; dup {
				return specErr(f+".env."+k, "is both a value and a secret")
			}
			if bad := badName("secret", ref.Secret); bad != "" {
				return specErr(f+".env."+k+".secret", "%s", bad)
			}
		}
		targets := map[string]int{}
		for j, m := range c.Mounts {
			mf := fmt.Sprintf("%s.mounts[%d]", f, j)
			if m.Volume {
				// A named volume: the engine's, mounted at its target.
				if bad := badName("volume", m.Source); bad != "" {
					return specErr(mf+".source", "%s", bad)
				}
				if err := checkPath(m.Target); err != nil {
					return specErr(mf+".target", "%v", err)
				}
				if k, dup := targets[m.Target]; dup {
					return specErr(mf, "mounts at %s, as mounts[%d] does", m.Target, k)
				}
				targets[m.Target] = j
				continue
			}
			if err := checkPath(m.Source); err != nil {
				return specErr(mf+".source", "%v", err)
			}
			if file, ok := files[m.Source]; ok {
				return specErr(mf+".source", "%s is declared as a file (%s); a mounted path is a directory", m.Source, file)
			}
			target := m.Target
			if target != "" {
				if err := checkPath(target); err != nil {
					return specErr(mf+".target", "%v", err)
				}
			} else {
				target = m.Source
			}
			if k, dup := targets[target]; dup {
				return specErr(mf, "mounts at %s, as mounts[%d] does", target, k)
			}
			targets[target] = j
		}
		if err := validateOptions(f, c, s); err != nil {
			return err
		}
		if err := validateBindings(f, c, declare); err != nil {
			return err
		}
		for j, p := range c.Ports {
			if bad := badName("port", p.Port); bad != "" {
				return specErr(fmt.Sprintf("%s.ports[%d].port", f, j), "%s", bad)
			}
			if p.Env == "" || strings.ContainsAny(p.Env, "= \t\n") {
				return specErr(fmt.Sprintf("%s.ports[%d].env", f, j), "%s is not a variable name", quote(p.Env))
			}
		}
	}
	if err := validateProvides(s); err != nil {
		return err
	}
	if cyc := dependencyCycle(s); cyc != "" {
		return specErr("containers", "depends_on goes round: %s", cyc)
	}
	if len(s.Volumes) > 0 {
		return specErr("volumes", "volumes are not supported yet")
	}
	if len(s.Networks) > 0 {
		return specErr("networks", "networks are not supported yet")
	}
	if err := validUpdate(s.Update); err != nil {
		return err
	}
	switch s.Upgrade {
	case "", events.UpgradeManual, events.UpgradeRollOut:
	default:
		return specErr("upgrade", "%s is not an upgrade policy (want %s or %s)", quote(s.Upgrade), events.UpgradeManual, events.UpgradeRollOut)
	}
	return nil
}

// checkPath checks that p is an absolute, clean path a host can hold.
func checkPath(p string) error {
	switch {
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("%s is not an absolute path", quote(p))
	case strings.ContainsAny(p, "\x00\n:"):
		return fmt.Errorf("%s: a path holds no NUL, newline or ':'", quote(p))
	case path.Clean(p) != p:
		return fmt.Errorf("%s is not a clean path: write %s", quote(p), quote(path.Clean(p)))
	}
	return nil
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
		return 0, fmt.Errorf("%s is not an octal mode", quote(s))
	}
	return uint32(m), nil
}
