package nodeplan

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"meshplane/declaration"
	"meshplane/events"
	"meshplane/wire"
)

// Action is what a plan does with one resource.
type Action int

// Actions. Unchanged, Update, Create and Replace count as applied once
// carried out; Hold and Reject never touch the node.
const (
	Unchanged Action = iota // the node already holds the declared spec
	Create                  // absent: make it
	Replace                 // a container whose spec changed: remove, then create
	Update                  // a directory's mode, a file's content/mode, a stopped container: change in place
	Remove                  // a managed container no longer declared
	Hold                    // found data of an untaken module on an adopted node: do not touch
	Reject                  // the declared resource cannot be applied (bad spec, unknown kind)
)

var actionNames = [...]string{"unchanged", "create", "replace", "update", "remove", "hold", "reject"}

func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("action(%d)", int(a))
}

// Default modes, used when a declaration leaves a mode at 0.
const (
	DefaultDirMode  = 0o755
	DefaultFileMode = 0o644
	HostsMode       = 0o644
)

// Observed is what the node holds, as the agent saw it just before planning.
type Observed struct {
	// Containers are the managed containers, by name.
	Containers map[string]Container
	// Paths are what was found at every declared directory and file path and
	// at declaration.HostsPath. A path missing from the map was not looked at,
	// which Diff treats as absent.
	Paths map[string]PathState
}

// PathState is what was found at one path.
type PathState struct {
	PathInfo
	Content []byte // the file's content, for an existing file
}

// State is what the agent remembers between applies, persisted beside the
// outbox.
//
// Invariant: Made holds the paths of directory resources this agent made
// itself and that are still declared, sorted and without duplicates. A
// directory it made is never "found"; once its resource leaves the
// declaration it is forgotten, so a later declaration finds the leftover.
type State struct {
	Made []string `json:"made"`
	// Last is what the agent's reports so far said that the next report may
	// name instead of repeating (the compact form of events.ApplyReported).
	Last Last `json:"last"`
	// Failed is, by container, the build whose start-first roll-out
	// failed (rollout.go): not tried again while it is the one declared,
	// so a build that crashes is never started again at every pass.
	Failed map[string]FailedRollout `json:"failed_rollouts,omitempty"`
}

// FailedRollout is a container's build (its resource digest) whose
// start-first roll-out failed, and why.
type FailedRollout struct {
	Digest string `json:"digest"`
	Why    string `json:"why"`
}

// Last is what a compact report may refer to.
//
// Invariant: HeldIn is empty, or the apply id of a report that carried Held
// in full (never one that named another); Held is then not empty.
type Last struct {
	Declaration string        `json:"declaration,omitempty"` // the declaration of the last report
	HeldIn      string        `json:"held_in,omitempty"`     // the last report that carried a held list in full
	Held        []events.Held `json:"held,omitempty"`        // that list, sorted by name
}

func (s State) made(p string) bool {
	_, ok := slices.BinarySearch(s.Made, p)
	return ok
}

// Step is the plan for one resource.
type Step struct {
	Name     string
	Kind     string
	Module   string // the resource's module; for Hold, the untaken module it waits on
	Action   Action
	Fields   []string             // what changed, for Replace and Update ("image", "env.PORT", "mode")
	Reason   string               // why, in words; for Hold the exact report wording
	Found    bool                 // held because of data found on an adopted node for an untaken module
	Resource declaration.Resource // the declared resource (zero for Remove)
	// Changes says, per changed field, what it was and what it becomes
	// (for Replace and Update; a plan shows them, a report names Fields).
	Changes []Change
}

// Change is one changed field of a resource (wire.Change).
type Change = wire.Change

// HostsStep is the plan for the node's hosts file (declaration.HostsPath). It
// is the node's own: it is never counted in a report.
type HostsStep struct {
	Write   bool   // the file is absent or differs
	Content string // what to write
	Reason  string
}

// Plan is what Diff decides. Steps holds one step per declared resource, in
// declaration order, then one Remove step per undeclared managed container,
// sorted by name.
type Plan struct {
	Declaration string
	Hosts       HostsStep
	Steps       []Step
}

// Diff compares the declaration with what the node holds and decides, per
// resource, what to do and why. It is pure: no I/O, no clock, and it does not
// modify its arguments.
//
// The rules (docs/design.md 2, 3, 4 and 5; docs/scenario-steps.md for the hold wording):
//   - A container whose digest and spec equal the observed one is unchanged;
//     otherwise it is replaced, naming the changed fields.
//   - A directory at the declared mode, and a file byte-identical and at the
//     declared mode, are unchanged; otherwise updated in place.
//   - The hosts file is written when it differs; it is no resource.
//   - On an adopted node, a directory of a module that is assigned but not
//     taken, whose path exists and was not made by this agent, is found. A
//     found directory is held, whether or not its mode already matches: it
//     is never touched, and it counts as held, never as applied. Every
//     declared file or directory under a found path is held (nothing is
//     written inside found data), and every container that mounts a found
//     path or a path under it (whether or not it runs), whatever module the
//     file, directory or container belongs to. A held step's Module is the
//     untaken module it waits on (the found directory's), so the report
//     counts it for the module whose take releases it. A taken module, or a
//     node that is not adopted, finds nothing.
//   - Managed containers that are not declared are removed. Directories and
//     files are never removed.
func Diff(d declaration.Declaration, obs Observed, st State) Plan {
	p := Plan{Declaration: d.ID, Steps: make([]Step, 0, len(d.Resources))}

	hosts := obs.Paths[declaration.HostsPath]
	switch {
	case !hosts.Exists:
		p.Hosts = HostsStep{Write: true, Content: d.Hosts, Reason: "absent"}
	case hosts.Dir:
		p.Hosts = HostsStep{Write: true, Content: d.Hosts, Reason: "a directory is in its place"}
	case string(hosts.Content) != d.Hosts:
		p.Hosts = HostsStep{Write: true, Content: d.Hosts, Reason: "content differs"}
	case hosts.Mode != HostsMode:
		p.Hosts = HostsStep{Write: true, Content: d.Hosts, Reason: fmt.Sprintf("mode %o to %o", hosts.Mode, HostsMode)}
	default:
		p.Hosts = HostsStep{Content: d.Hosts, Reason: "unchanged"}
	}

	taken := make(map[string]bool, len(d.Taken))
	for _, m := range d.Taken {
		taken[m] = true
	}
	// found maps a found directory path to its module.
	found := map[string]string{}
	if d.Adopted {
		for _, r := range d.Resources {
			if r.Kind != declaration.KindDirectory || r.Directory == nil || taken[r.Module] {
				continue
			}
			if ps := obs.Paths[r.Directory.Path]; ps.Exists && !st.made(r.Directory.Path) {
				found[r.Directory.Path] = r.Module
			}
		}
	}

	declared := make(map[string]bool, len(d.Resources))
	for _, r := range d.Resources {
		declared[r.Name] = true
		s := Step{Name: r.Name, Kind: r.Kind, Module: r.Module, Resource: r}
		if err := checkResource(r); err != nil {
			s.Action, s.Reason = Reject, err.Error()
			p.Steps = append(p.Steps, s)
			continue
		}
		switch r.Kind {
		case declaration.KindContainer:
			diffContainer(&s, r, obs, found)
		case declaration.KindDirectory:
			diffDirectory(&s, r, obs, found)
		case declaration.KindFile:
			diffFile(&s, r, obs, found)
		}
		p.Steps = append(p.Steps, s)
	}

	var gone []string
	for name := range obs.Containers {
		if !declared[name] {
			gone = append(gone, name)
		}
	}
	sort.Strings(gone)
	for _, name := range gone {
		c := obs.Containers[name]
		p.Steps = append(p.Steps, Step{
			Name: name, Kind: declaration.KindContainer, Module: c.Module,
			Action: Remove, Reason: "no longer declared",
		})
	}
	return p
}

// checkResource refuses a declared resource the agent cannot apply.
func checkResource(r declaration.Resource) error {
	switch r.Kind {
	case declaration.KindContainer:
		if r.Container == nil || r.Directory != nil || r.File != nil {
			return fmt.Errorf("kind container needs exactly a container spec")
		}
		if err := ValidateContainer(Container{Name: r.Name, Spec: *r.Container}); err != nil {
			return err
		}
	case declaration.KindDirectory:
		if r.Directory == nil || r.Container != nil || r.File != nil {
			return fmt.Errorf("kind directory needs exactly a directory spec")
		}
		if err := ValidatePath(r.Directory.Path); err != nil {
			return err
		}
		if err := ValidateMode(r.Directory.Mode); err != nil {
			return err
		}
	case declaration.KindFile:
		if r.File == nil || r.Container != nil || r.Directory != nil {
			return fmt.Errorf("kind file needs exactly a file spec")
		}
		if err := ValidatePath(r.File.Path); err != nil {
			return err
		}
		if r.File.Path == declaration.HostsPath {
			return fmt.Errorf("path %s is the node's hosts file", r.File.Path)
		}
		if err := ValidateMode(r.File.Mode); err != nil {
			return err
		}
	default:
		return fmt.Errorf("kind %q is not applied by this agent", r.Kind)
	}
	if got := declaration.Digest(r.Spec()); got != r.Digest {
		return fmt.Errorf("digest %s does not match its spec (%s)", r.Digest, got)
	}
	return nil
}

func diffContainer(s *Step, r declaration.Resource, obs Observed, found map[string]string) {
	for _, m := range r.Container.Mounts {
		if m.Volume {
			continue
		}
		if module, ok := under(m.Source, found); ok {
			s.Action, s.Found, s.Reason = Hold, true, holdContainer(m.Source, module)
			s.Module = module
			return
		}
	}
	have, ok := obs.Containers[r.Name]
	if !ok {
		s.Action, s.Reason = Create, "absent"
		return
	}
	s.Fields = ContainerFields(have.Spec, *r.Container)
	if have.Module != r.Module {
		s.Fields = append(s.Fields, "module")
	}
	same := declaration.Digest(have.Spec) == declaration.Digest(r.Container)
	if same && len(s.Fields) == 0 && have.Digest == r.Digest {
		s.Action, s.Reason = Unchanged, "spec unchanged"
		if have.Stopped {
			s.Action, s.Fields, s.Reason = Update, []string{"running"}, "stopped: start"
		}
		return
	}
	s.Changes = ContainerChanges(have.Spec, *r.Container)
	if have.Module != r.Module {
		s.Changes = append(s.Changes, Change{Field: "module", From: have.Module, To: r.Module})
	}
	switch {
	case len(s.Fields) > 0:
	case !same:
		s.Fields = []string{"spec"} // equal field by field, but not byte for byte
	default:
		s.Fields = []string{"digest"}
		s.Changes = []Change{{Field: "digest", From: have.Digest, To: r.Digest}}
	}
	s.Action, s.Reason = Replace, "changed: "+strings.Join(s.Fields, ", ")
}

// The hold reasons (docs/scenario-steps.md, "Report wording"), in one voice: what was
// found, and what is not done until the module is taken. docs/scenario-steps.md words the
// directory and container reasons; the reason for a file (or an unfound
// directory) under a found directory is ours, in the same voice: it names
// the found directory, as a container's names the path it would mount:
// "under PATH, found on this adopted node; not written until MODULE is
// taken" ("not made" for a directory).
func holdDirectory(module string) string {
	return fmt.Sprintf("found on this adopted node; not touched until %s is taken", module)
}

func holdContainer(source, module string) string {
	return fmt.Sprintf("would mount %s, found on this adopted node; not run until %s is taken", source, module)
}

func holdUnder(dir, verb, module string) string {
	return fmt.Sprintf("under %s, found on this adopted node; not %s until %s is taken", dir, verb, module)
}

// under reports whether p is a found path or lies under one, and the found
// directory's module.
func under(p string, found map[string]string) (string, bool) {
	_, m, ok := foundAt(p, found)
	return m, ok
}

// foundAt returns the found path that is p or the nearest one above it, and
// its module.
func foundAt(p string, found map[string]string) (string, string, bool) {
	if len(found) == 0 {
		return "", "", false
	}
	for q := p; ; q = path.Dir(q) {
		if m, ok := found[q]; ok {
			return q, m, true
		}
		if q == "/" || q == "." {
			return "", "", false
		}
	}
}

func diffDirectory(s *Step, r declaration.Resource, obs Observed, found map[string]string) {
	want := r.Directory.Mode
	if want == 0 {
		want = DefaultDirMode
	}
	if _, ok := found[r.Directory.Path]; ok {
		s.Action, s.Found, s.Reason = Hold, true, holdDirectory(r.Module)
		return
	}
	if dir, module, ok := foundAt(path.Dir(r.Directory.Path), found); ok {
		s.Action, s.Found, s.Reason = Hold, true, holdUnder(dir, "made", module)
		s.Module = module
		return
	}
	have := obs.Paths[r.Directory.Path]
	switch {
	case !have.Exists:
		s.Action, s.Reason = Create, fmt.Sprintf("absent; make at %o", want)
	case !have.Dir:
		s.Action, s.Reason = Reject, fmt.Sprintf("%s is a file, not a directory", r.Directory.Path)
	case have.Mode == want:
		s.Action, s.Reason = Unchanged, fmt.Sprintf("mode %o", want)
	default:
		s.Action, s.Fields = Update, []string{"mode"}
		s.Reason = fmt.Sprintf("mode %o to %o", have.Mode, want)
		s.Changes = []Change{{Field: "mode", From: fmt.Sprintf("%o", have.Mode), To: fmt.Sprintf("%o", want)}}
	}
}

func diffFile(s *Step, r declaration.Resource, obs Observed, found map[string]string) {
	if dir, module, ok := foundAt(r.File.Path, found); ok {
		s.Action, s.Found, s.Reason = Hold, true, holdUnder(dir, "written", module)
		s.Module = module
		return
	}
	want := r.File.Mode
	if want == 0 {
		want = DefaultFileMode
	}
	have := obs.Paths[r.File.Path]
	switch {
	case !have.Exists:
		s.Action, s.Reason = Create, "absent"
		return
	case have.Dir:
		s.Action, s.Reason = Reject, fmt.Sprintf("%s is a directory, not a file", r.File.Path)
		return
	}
	var reasons []string
	if string(have.Content) != r.File.Content {
		s.Fields = append(s.Fields, "content")
		reasons = append(reasons, "content differs")
		s.Changes = append(s.Changes, Change{Field: "content", From: sizeOf(len(have.Content)), To: sizeOf(len(r.File.Content))})
	}
	if have.Mode != want {
		s.Fields = append(s.Fields, "mode")
		reasons = append(reasons, fmt.Sprintf("mode %o to %o", have.Mode, want))
		s.Changes = append(s.Changes, Change{Field: "mode", From: fmt.Sprintf("%o", have.Mode), To: fmt.Sprintf("%o", want)})
	}
	if len(s.Fields) == 0 {
		s.Action, s.Reason = Unchanged, "byte-identical, mode "+fmt.Sprintf("%o", want)
		return
	}
	s.Action, s.Reason = Update, strings.Join(reasons, "; ")
}

// changedKeys lists, sorted, the keys whose values differ between have and
// want, or that only one of them has.
func changedKeys[V comparable](have, want map[string]V) []string {
	var keys []string
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			keys = append(keys, k)
		}
	}
	for k := range have {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// ContainerFields names the fields in which two container specs differ, as
// report paths: "image", "command", "env.KEY" per changed, added or removed
// key (sorted), "mounts.TARGET" per changed, added or removed mount (sorted
// by target), "networks", "secret.KEY" per secret variable whose secret or
// digest changed (sorted), then each changed option in the module file's
// words (options.go: "healthcheck.test", "publish.8080", "memory", ...).
// Equal specs give none.
func ContainerFields(have, want declaration.Container) []string {
	var out []string
	if have.Image != want.Image {
		out = append(out, "image")
	}
	if !slices.Equal(have.Command, want.Command) {
		out = append(out, "command")
	}
	for _, k := range changedKeys(envMap(have.Env), envMap(want.Env)) {
		out = append(out, "env."+k)
	}
	targets := changedKeys(mountMap(have.Mounts), mountMap(want.Mounts))
	for _, t := range targets {
		out = append(out, "mounts."+t)
	}
	if len(targets) == 0 && !slices.Equal(have.Mounts, want.Mounts) {
		out = append(out, "mounts") // same mounts in another order, or a duplicated target
	}
	if !slices.Equal(have.Networks, want.Networks) {
		out = append(out, "networks")
	}
	if len(have.Secrets)+len(want.Secrets) > 0 {
		for _, k := range changedKeys(secretMap(have.Secrets), secretMap(want.Secrets)) {
			out = append(out, "secret."+k)
		}
	}
	for _, c := range optionChanges(have, want) {
		out = append(out, c.Field)
	}
	return out
}

// secretMap maps a container's secret variables to the secret and digest
// they read ("forge-db hmac-sha256:…"): what a report and why show of a
// secret, never its value.
func secretMap(ss []declaration.Secret) map[string]string {
	m := make(map[string]string, len(ss))
	for _, x := range ss {
		m[x.Env] = x.Secret + " " + x.Digest
	}
	return m
}

// ContainerChanges is ContainerFields with what each field was and what it
// becomes, in the same order: "image" from one reference to the other,
// "env.KEY" and "mounts.TARGET" from one value to the other ("" for absent;
// a mount reads as its source, with " (ro)" when read-only), "command" and
// "networks" as their words joined by spaces.
func ContainerChanges(have, want declaration.Container) []Change {
	var out []Change
	hm, wm := mountMap(have.Mounts), mountMap(want.Mounts)
	he, we := envMap(have.Env), envMap(want.Env)
	opts := map[string]Change{}
	for _, c := range optionChanges(have, want) {
		opts[c.Field] = c
	}
	for _, f := range ContainerFields(have, want) {
		c := Change{Field: f}
		switch {
		case f == "image":
			c.From, c.To = have.Image, want.Image
		case f == "command":
			c.From, c.To = strings.Join(have.Command, " "), strings.Join(want.Command, " ")
		case f == "networks":
			c.From, c.To = strings.Join(have.Networks, " "), strings.Join(want.Networks, " ")
		case f == "mounts":
			c.From, c.To = mountsWords(have.Mounts), mountsWords(want.Mounts)
		case strings.HasPrefix(f, "env."):
			c.From, c.To = he[f[4:]], we[f[4:]]
		case strings.HasPrefix(f, "mounts."):
			c.From, c.To = mountWords(hm, f[7:]), mountWords(wm, f[7:])
		case strings.HasPrefix(f, "secret."):
			c.From, c.To = secretShown(have.Secrets, f[7:]), secretShown(want.Secrets, f[7:])
		default:
			c.From, c.To = opts[f].From, opts[f].To
		}
		out = append(out, c)
	}
	return out
}

// secretShown is how why shows secret variable env of ss: the secret's
// name and its digest's first 12 hex digits ("forge-db
// hmac-sha256:3f2a…"); "" when absent.
func secretShown(ss []declaration.Secret, env string) string {
	for _, x := range ss {
		if x.Env == env {
			d := x.Digest
			if i := strings.IndexByte(d, ':'); i >= 0 && len(d) > i+13 {
				d = d[:i+13]
			}
			return x.Secret + " " + d
		}
	}
	return ""
}

func mountWords(m map[string]declaration.Mount, target string) string {
	x, ok := m[target]
	if !ok {
		return ""
	}
	if x.ReadOnly {
		return x.Source + " (ro)"
	}
	return x.Source
}

func mountsWords(ms []declaration.Mount) string {
	words := make([]string, len(ms))
	for i, m := range ms {
		words[i] = m.Source + ":" + m.Target
	}
	return strings.Join(words, " ")
}

func sizeOf(n int) string { return fmt.Sprintf("%d bytes", n) }

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

func mountMap(ms []declaration.Mount) map[string]declaration.Mount {
	m := make(map[string]declaration.Mount, len(ms))
	for _, x := range ms {
		m[x.Target] = x
	}
	return m
}
