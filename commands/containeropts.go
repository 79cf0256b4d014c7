package commands

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"meshplane/declaration"
	"meshplane/events"
)

// This file holds a container's options in compose's words (healthcheck,
// network, publish, restart, stop_grace_period, memory, cpus, entrypoint,
// user, cap_add, tmpfs, read_only, depends_on, named volumes): how the
// module file reads them, how ValidateSpec checks them and how compose
// turns them into the declaration's container spec.

// Restart policies a container may name (compose's restart).
var restartPolicies = []string{"always", "on-failure", "no", "unless-stopped"}

// minMemory is the least memory limit the engine accepts (Docker: 6 MiB).
const minMemory = 6 << 20

// containerKeys are the keys a container of a module file may hold.
const containerKeys = "name, image, artifact, command, entrypoint, env, ports, publish, network, networks, mounts, volumes, healthcheck, restart, stop_grace_period, memory, cpus, user, cap_add, tmpfs, read_only, depends_on"

// option reads key of a container into c; false when key is not one of
// the options of this file.
func (p *mfParser) option(c *events.ContainerSpec, f, key string, v *yaml.Node) bool {
	switch key {
	case "healthcheck":
		c.Healthcheck = p.healthcheck(v, f+".healthcheck")
	case "network":
		c.Network = p.str(v, f+".network")
	case "publish":
		p.seq(v, f+".publish", func(i int, pn *yaml.Node) {
			pf := fmt.Sprintf("%s.publish[%d]", f, i)
			var pub events.Publish
			p.mapping(pn, pf, func(key string, v *yaml.Node) {
				switch key {
				case "port":
					pub.Port = p.str(v, pf+".port")
				case "container":
					pub.Container = p.int(v, pf+".container")
				case "on":
					pub.On = p.str(v, pf+".on")
				default:
					p.fail(v, pf+"."+key, "unknown field (want port, container, on)")
				}
			})
			if p.err == nil && (pub.Port == "" || pub.Container == 0) {
				p.fail(pn, pf, "a publish names both port (the node's setting) and container (the container's port)")
			}
			c.Publish = append(c.Publish, pub)
		})
	case "restart":
		c.Restart = p.str(v, f+".restart")
	case "stop_grace_period":
		c.StopGracePeriod = p.str(v, f+".stop_grace_period")
	case "memory":
		c.Memory = p.str(v, f+".memory")
	case "cpus":
		c.CPUs = p.str(v, f+".cpus")
	case "entrypoint":
		c.Entrypoint = p.strs(v, f+".entrypoint")
	case "user":
		c.User = p.str(v, f+".user")
	case "cap_add":
		c.CapAdd = p.strs(v, f+".cap_add")
	case "tmpfs":
		if v.Kind == yaml.ScalarNode {
			c.Tmpfs = []string{p.str(v, f+".tmpfs")}
		} else {
			c.Tmpfs = p.strs(v, f+".tmpfs")
		}
	case "read_only":
		c.ReadOnly = p.bool(v, f+".read_only")
	case "depends_on":
		p.dependsOn(c, v, f+".depends_on")
	case "volumes":
		p.seq(v, f+".volumes", func(i int, vn *yaml.Node) {
			c.Mounts = append(c.Mounts, p.volume(vn, fmt.Sprintf("%s.volumes[%d]", f, i)))
		})
	default:
		return false
	}
	return true
}

// healthcheck reads compose's healthcheck: test as a list, or as a string
// (compose's shorthand for [CMD-SHELL, string]).
func (p *mfParser) healthcheck(n *yaml.Node, f string) *events.Healthcheck {
	var h events.Healthcheck
	p.mapping(n, f, func(key string, v *yaml.Node) {
		switch key {
		case "test":
			if v.Kind == yaml.ScalarNode {
				h.Test = []string{"CMD-SHELL", p.str(v, f+".test")}
			} else {
				h.Test = p.strs(v, f+".test")
			}
		case "interval":
			h.Interval = p.str(v, f+".interval")
		case "timeout":
			h.Timeout = p.str(v, f+".timeout")
		case "retries":
			h.Retries = p.int(v, f+".retries")
		case "start_period":
			h.StartPeriod = p.str(v, f+".start_period")
		default:
			p.fail(v, f+"."+key, "unknown field (want test, interval, timeout, retries, start_period)")
		}
	})
	if p.err == nil && len(h.Test) == 0 {
		p.fail(n, f+".test", "missing: a health check names its test ([CMD, ...], [CMD-SHELL, \"...\"] or [NONE])")
	}
	return &h
}

// dependsOn reads compose's depends_on: a list of container names, or a
// mapping of container name to {condition: ...}.
func (p *mfParser) dependsOn(c *events.ContainerSpec, n *yaml.Node, f string) {
	if n.Kind == yaml.SequenceNode {
		for _, name := range p.strs(n, f) {
			c.DependsOn = append(c.DependsOn, events.Dependency{Container: name})
		}
		return
	}
	p.mapping(n, f, func(name string, v *yaml.Node) {
		d := events.Dependency{Container: name}
		p.mapping(v, f+"."+name, func(key string, v *yaml.Node) {
			switch key {
			case "condition":
				d.Condition = p.str(v, f+"."+name+".condition")
			default:
				p.fail(v, f+"."+name+"."+key, "unknown field (want condition)")
			}
		})
		c.DependsOn = append(c.DependsOn, d)
	})
}

// volume reads one of compose's volumes: "NAME:/target[:ro]" (a named
// volume, which the engine keeps), "/host/dir:/target[:ro]" (a host
// directory, as mounts are), or the long form {type, source, target,
// read_only}.
func (p *mfParser) volume(n *yaml.Node, f string) events.Mount {
	var m events.Mount
	if n.Kind == yaml.ScalarNode {
		s := p.str(n, f)
		if p.err != nil {
			return m
		}
		p.lines[f+".source"] = n.Line
		parts := strings.Split(s, ":")
		if len(parts) < 2 || len(parts) > 3 {
			p.fail(n, f, "%s is not SOURCE:TARGET[:ro] (a volume name or a host directory, then the path in the container)", quote(s))
			return m
		}
		m.Source, m.Target = parts[0], parts[1]
		if len(parts) == 3 {
			switch parts[2] {
			case "ro":
				m.ReadOnly = true
			case "rw":
			default:
				p.fail(n, f, "%s: the mode is ro or rw", quote(s))
			}
		}
		m.Volume = !strings.HasPrefix(m.Source, "/")
		return m
	}
	kind := ""
	p.mapping(n, f, func(key string, v *yaml.Node) {
		switch key {
		case "type":
			kind = p.str(v, f+".type")
		case "source":
			m.Source = p.str(v, f+".source")
		case "target":
			m.Target = p.str(v, f+".target")
		case "read_only":
			m.ReadOnly = p.bool(v, f+".read_only")
		default:
			p.fail(v, f+"."+key, "unknown field (want type, source, target, read_only)")
		}
	})
	if p.err != nil {
		return m
	}
	switch kind {
	case "volume":
		m.Volume = true
	case "bind":
	case "":
		m.Volume = !strings.HasPrefix(m.Source, "/")
	default:
		p.fail(n, f+".type", "%s is not a volume type (want volume or bind)", quote(kind))
	}
	if p.err == nil && (m.Source == "" || m.Target == "") {
		p.fail(n, f, "a volume names both source and target")
	}
	return m
}

func (p *mfParser) int(n *yaml.Node, f string) int {
	s := p.str(n, f)
	if p.err != nil {
		return 0
	}
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 {
		p.fail(n, f, "%s is not a whole number", quote(s))
	}
	return i
}

// validateOptions checks container c's options (field f, "containers[i]")
// on their own and against the module (depends_on names one of its
// containers).
func validateOptions(f string, c events.ContainerSpec, s events.ModuleSpec) error {
	if h := c.Healthcheck; h != nil {
		hf := f + ".healthcheck"
		if err := checkTest(h.Test); err != nil {
			return specErr(hf+".test", "%v", err)
		}
		for _, d := range []struct{ name, v string }{{"interval", h.Interval}, {"timeout", h.Timeout}, {"start_period", h.StartPeriod}} {
			if _, err := parseDuration(d.v); err != nil {
				return specErr(hf+"."+d.name, "%v", err)
			}
		}
		if h.Retries < 0 {
			return specErr(hf+".retries", "%d is not a whole number", h.Retries)
		}
		if h.Test[0] == "NONE" && (h.Interval != "" || h.Timeout != "" || h.Retries != 0 || h.StartPeriod != "") {
			return specErr(hf, "test [NONE] disables the health check: it takes no interval, timeout, retries or start_period")
		}
	}
	switch c.Network {
	case "":
	case "host":
		if len(c.Networks) > 0 {
			return specErr(f+".network", "network: host uses the node's network, and joins no networks (%s)", strings.Join(c.Networks, ", "))
		}
		if len(c.Publish) > 0 {
			return specErr(f+".network", "network: host listens on the node's addresses itself: it publishes nothing (remove publish)")
		}
	default:
		return specErr(f+".network", "%s is not a network mode (want host; networks: joins named networks)", quote(c.Network))
	}
	ports := map[int]int{}
	for j, pub := range c.Publish {
		pf := fmt.Sprintf("%s.publish[%d]", f, j)
		if bad := badName("port", pub.Port); bad != "" {
			return specErr(pf+".port", "%s", bad)
		}
		if pub.Container < 1 || pub.Container > 65535 {
			return specErr(pf+".container", "%d is not a port (1 to 65535)", pub.Container)
		}
		if k, dup := ports[pub.Container]; dup {
			return specErr(pf+".container", "port %d is published twice: also publish[%d]", pub.Container, k)
		}
		ports[pub.Container] = j
		if pub.On != "" && pub.On != "all" {
			return specErr(pf+".on", "%s is not where to publish (want all, or leave it out for the node's private address)", quote(pub.On))
		}
	}
	if c.Restart != "" && !containsStr(restartPolicies, c.Restart) {
		return specErr(f+".restart", "%s is not a restart policy (want %s)", quote(c.Restart), strings.Join(restartPolicies, ", "))
	}
	if _, err := parseDuration(c.StopGracePeriod); err != nil {
		return specErr(f+".stop_grace_period", "%v", err)
	}
	if c.Memory != "" {
		b, err := parseSize(c.Memory)
		if err != nil {
			return specErr(f+".memory", "%v", err)
		}
		if b < minMemory {
			return specErr(f+".memory", "%s is below the engine's least limit, 6m", quote(c.Memory))
		}
	}
	if _, err := parseCPUs(c.CPUs); err != nil {
		return specErr(f+".cpus", "%v", err)
	}
	if c.User != "" && (strings.ContainsAny(c.User, " \t\n\r\x00") || len(c.User) > 256) {
		return specErr(f+".user", "%s is not a user (name or uid, and :group or :gid)", quote(c.User))
	}
	for j, cp := range c.CapAdd {
		if !validCap(cp) {
			return specErr(fmt.Sprintf("%s.cap_add[%d]", f, j), "%s is not a capability (CAP_NET_ADMIN, NET_ADMIN, ALL)", quote(cp))
		}
	}
	targets := map[string]string{}
	for j, m := range c.Mounts {
		t := m.Target
		if t == "" {
			t = m.Source
		}
		targets[t] = fmt.Sprintf("mounts[%d]", j)
	}
	for j, t := range c.Tmpfs {
		tf := fmt.Sprintf("%s.tmpfs[%d]", f, j)
		if err := checkPath(t); err != nil {
			return specErr(tf, "%v", err)
		}
		if prev, dup := targets[t]; dup {
			return specErr(tf, "%s is mounted twice: also %s", t, prev)
		}
		targets[t] = fmt.Sprintf("tmpfs[%d]", j)
	}
	deps := map[string]bool{}
	for j, d := range c.DependsOn {
		df := fmt.Sprintf("%s.depends_on[%d]", f, j)
		if d.Container == c.Name {
			return specErr(df, "container %s depends on itself", c.Name)
		}
		if !slicesContainsContainer(s.Containers, d.Container) {
			return specErr(df, "%s is not a container of this module", quote(d.Container))
		}
		if deps[d.Container] {
			return specErr(df, "%s is named twice", d.Container)
		}
		deps[d.Container] = true
		if d.Condition != "" && d.Condition != "service_started" && d.Condition != "service_healthy" {
			return specErr(df+".condition", "%s is not a condition (want service_started or service_healthy)", quote(d.Condition))
		}
	}
	return nil
}

// dependencyCycle names a cycle among s's depends_on ("a → b → a"), "" when
// there is none.
func dependencyCycle(s events.ModuleSpec) string {
	deps := map[string][]string{}
	for _, c := range s.Containers {
		for _, d := range c.DependsOn {
			deps[c.Name] = append(deps[c.Name], d.Container)
		}
	}
	state := map[string]int{} // 1 visiting, 2 done
	var path []string
	var visit func(n string) string
	visit = func(n string) string {
		switch state[n] {
		case 1:
			for i, x := range path {
				if x == n {
					return strings.Join(append(path[i:], n), " → ")
				}
			}
		case 2:
			return ""
		}
		state[n] = 1
		path = append(path, n)
		for _, d := range deps[n] {
			if cyc := visit(d); cyc != "" {
				return cyc
			}
		}
		path = path[:len(path)-1]
		state[n] = 2
		return ""
	}
	for _, c := range s.Containers {
		if cyc := visit(c.Name); cyc != "" {
			return cyc
		}
	}
	return ""
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func slicesContainsContainer(cs []events.ContainerSpec, name string) bool {
	for _, c := range cs {
		if c.Name == name {
			return true
		}
	}
	return false
}

func checkTest(t []string) error {
	if len(t) == 0 {
		return fmt.Errorf("empty: want [CMD, ...], [CMD-SHELL, \"...\"] or [NONE]")
	}
	switch t[0] {
	case "NONE":
		if len(t) != 1 {
			return fmt.Errorf("[NONE] takes nothing after it")
		}
	case "CMD":
		if len(t) < 2 || t[1] == "" {
			return fmt.Errorf("[CMD] names the program to run after it")
		}
	case "CMD-SHELL":
		if len(t) != 2 || t[1] == "" {
			return fmt.Errorf("[CMD-SHELL] takes one command line after it")
		}
	default:
		return fmt.Errorf("%s: a test starts with CMD, CMD-SHELL or NONE", quote(t[0]))
	}
	return nil
}

// parseDuration reads a compose duration ("30s", "1m30s", "500ms"); ""
// is 0. A negative one or over a day is refused.
func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s is not a duration (30s, 1m30s, 500ms)", quote(s))
	}
	if d > 24*time.Hour {
		return 0, fmt.Errorf("%s is over a day", quote(s))
	}
	return d, nil
}

// parseSize reads compose's byte values: a number and b, k, m or g
// (kb, mb, gb too, case not minded), 1024 each.
func parseSize(s string) (int64, error) {
	bad := fmt.Errorf("%s is not a size (512m, 1g, 1048576)", quote(s))
	l := strings.ToLower(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1}} {
		if strings.HasSuffix(l, u.suffix) {
			l, mult = strings.TrimSuffix(l, u.suffix), u.mult
			break
		}
	}
	if l == "" || strings.ContainsAny(l, "+-eEx_ ") {
		return 0, bad
	}
	v, err := strconv.ParseFloat(l, 64)
	if err != nil || v <= 0 || v*float64(mult) > 1<<50 || math.IsNaN(v) {
		return 0, bad
	}
	return int64(v * float64(mult)), nil
}

// parseCPUs reads compose's cpus ("0.5", "2") as billionths of a CPU; "" is 0.
func parseCPUs(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || strings.ContainsAny(s, "eExX_+- ") || v <= 0 || v > 1024 || math.IsNaN(v) {
		return 0, fmt.Errorf("%s is not a number of CPUs (0.5, 2)", quote(s))
	}
	n := int64(math.Round(v * 1e9))
	if n < 1e6 {
		return 0, fmt.Errorf("%s is under a thousandth of a CPU", quote(s))
	}
	return n, nil
}

func validCap(s string) bool {
	s = strings.TrimPrefix(s, "CAP_")
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// options composes c's options into spec. Publishing reads the node's
// settings where they are used (rule 6): a port the node was not given, or
// a publish on its private address when it has none, is a setting that
// reaches nothing, and the node does not compose. Everything was validated
// when the module was defined.
func options(n Node, mod Module, c events.ContainerSpec, spec *declaration.Container) error {
	if h := c.Healthcheck; h != nil {
		dh := &declaration.Healthcheck{Test: h.Test, Retries: h.Retries}
		dh.Interval, _ = parseDuration(h.Interval)
		dh.Timeout, _ = parseDuration(h.Timeout)
		dh.StartPeriod, _ = parseDuration(h.StartPeriod)
		spec.Healthcheck = dh
	}
	spec.NetworkMode = c.Network
	for _, pub := range c.Publish {
		hp := n.Port(pub.Port)
		if hp == "" {
			return &IncoherentError{Node: n.Name, Reason: fmt.Sprintf("module %s's container %s publishes port %q of node %s, which was not given (mesh node set %s port.%s=PORT)", mod.Name, c.Name, pub.Port, n.Name, n.Name, pub.Port)}
		}
		port, err := strconv.Atoi(hp)
		if err != nil || port < 1 || port > 65535 {
			return &IncoherentError{Node: n.Name, Reason: fmt.Sprintf("module %s's container %s publishes port %q of node %s, whose value %s is not a port", mod.Name, c.Name, pub.Port, n.Name, quote(hp))}
		}
		dp := declaration.Published{HostPort: port, ContainerPort: pub.Container}
		if pub.On != "all" {
			dp.HostIP = n.PrivateAddress()
			if dp.HostIP == "" {
				return &IncoherentError{Node: n.Name, Reason: fmt.Sprintf("module %s's container %s publishes port %q on the private address of node %s, which has none yet (or say on: all)", mod.Name, c.Name, pub.Port, n.Name)}
			}
		}
		spec.Publish = append(spec.Publish, dp)
	}
	spec.Restart = c.Restart
	spec.StopGracePeriod, _ = parseDuration(c.StopGracePeriod)
	if c.Memory != "" {
		spec.Memory, _ = parseSize(c.Memory)
	}
	spec.NanoCPUs, _ = parseCPUs(c.CPUs)
	spec.Entrypoint = c.Entrypoint
	spec.User = c.User
	spec.CapAdd = c.CapAdd
	spec.Tmpfs = c.Tmpfs
	spec.ReadOnly = c.ReadOnly
	for _, d := range c.DependsOn {
		cond := d.Condition
		if cond == "" {
			cond = "service_started"
		}
		spec.DependsOn = append(spec.DependsOn, declaration.Dependency{Container: d.Container, Condition: cond})
	}
	return nil
}
