package commands

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"meshplane/declaration"
	"meshplane/events"
)

// This file holds what modules give each other (docs/design.md, "What
// modules give each other"): a module's provided services (provides), and
// a container's bindings to them (reaches, grants): how the module file
// reads them, how ValidateSpec checks them, and how compose fills them.
//
// A reach composes ADDRESS:PORT, the private address of the node running
// the provider and that node's port setting, read where it is used (rule
// 6): a setting the provider's node was not given is a binding left
// unfilled, "nothing said" with a warning, never a literal. A provider
// that runs nowhere, or on two nodes without the binding's node: saying
// which, is a statement about the consumer's node: it does not compose,
// naming the binding. Every node is read by gather, so a failed read of
// the provider's node aborts the consumer's compose naming it (rule 1).

// bindingKeys are the keys of a container this file reads.
const bindingKeys = "reaches, grants"

// BindingFileMode is the mode of a binding's file on the node.
const BindingFileMode = 0o400

// binding reads key of a container into c; false when key is not one of
// bindingKeys.
func (p *mfParser) binding(c *events.ContainerSpec, f, key string, v *yaml.Node) bool {
	switch key {
	case "reaches":
		c.Reaches = p.bindingList(v, f+".reaches")
	case "grants":
		c.Grants = p.bindingList(v, f+".grants")
	default:
		return false
	}
	return true
}

func (p *mfParser) bindingList(n *yaml.Node, f string) []events.Binding {
	var out []events.Binding
	p.seq(n, f, func(i int, bn *yaml.Node) {
		bf := fmt.Sprintf("%s[%d]", f, i)
		var b events.Binding
		p.mapping(bn, bf, func(key string, v *yaml.Node) {
			switch key {
			case "module":
				b.Module = p.str(v, bf+".module")
			case "service":
				b.Service = p.str(v, bf+".service")
			case "env":
				b.Env = p.str(v, bf+".env")
			case "file":
				b.File = p.str(v, bf+".file")
			case "node":
				b.Node = p.str(v, bf+".node")
			default:
				p.fail(v, bf+"."+key, "unknown field (want module, service, env, file, node)")
			}
		})
		if p.err == nil {
			if err := checkBinding(b); err != nil {
				p.fail(bn, bf+err.Field, "%s", err.Msg)
			}
		}
		out = append(out, b)
	})
	return out
}

// provides reads a module's provided services.
func (p *mfParser) provides(n *yaml.Node) map[string]events.Provide {
	out := map[string]events.Provide{}
	p.mapping(n, "provides", func(name string, v *yaml.Node) {
		f := "provides." + name
		var pr events.Provide
		p.mapping(v, f, func(key string, v *yaml.Node) {
			switch key {
			case "port":
				pr.Port = p.str(v, f+".port")
			case "kind":
				pr.Kind = p.str(v, f+".kind")
			default:
				p.fail(v, f+"."+key, "unknown field (want port, kind)")
			}
		})
		if p.err == nil {
			if err := checkProvide(name, pr); err != nil {
				p.fail(v, f+err.Field, "%s", err.Msg)
			}
		}
		out[name] = pr
	})
	return out
}

// checkProvide checks a provided service on its own; its error's Field is
// relative to the service's (".port").
func checkProvide(name string, pr events.Provide) *SpecError {
	if bad := badName("service", name); bad != "" {
		return &SpecError{Msg: bad}
	}
	switch {
	case pr.Port == "":
		return &SpecError{Field: ".port", Msg: "missing: a provided service is reached on a port setting of its node"}
	case badName("port", pr.Port) != "":
		return &SpecError{Field: ".port", Msg: badName("port", pr.Port)}
	case pr.Kind == "":
		return &SpecError{Field: ".kind", Msg: fmt.Sprintf("missing (want %s)", strings.Join(events.ProvideKinds, ", "))}
	case !slices.Contains(events.ProvideKinds, pr.Kind):
		return &SpecError{Field: ".kind", Msg: fmt.Sprintf("%s is not a kind of service (want %s)", quote(pr.Kind), strings.Join(events.ProvideKinds, ", "))}
	}
	return nil
}

// checkBinding checks a binding on its own; its error's Field is relative
// to the binding's (".env").
func checkBinding(b events.Binding) *SpecError {
	switch {
	case b.Module == "":
		return &SpecError{Field: ".module", Msg: "missing: a binding names the module providing the service"}
	case badName("module", b.Module) != "":
		return &SpecError{Field: ".module", Msg: badName("module", b.Module)}
	case b.Service == "":
		return &SpecError{Field: ".service", Msg: "missing: a binding names the service it uses"}
	case badName("service", b.Service) != "":
		return &SpecError{Field: ".service", Msg: badName("service", b.Service)}
	case b.Env == "" && b.File == "":
		return &SpecError{Msg: "names neither env nor file: say where the value goes"}
	case b.Env != "" && b.File != "":
		return &SpecError{Msg: "names both env and file: the value goes to one of them"}
	case b.Env != "" && strings.ContainsAny(b.Env, "= \t\n\x00"):
		return &SpecError{Field: ".env", Msg: fmt.Sprintf("%s is not a variable name", quote(b.Env))}
	case b.Node != "" && badName("node", b.Node) != "":
		return &SpecError{Field: ".node", Msg: badName("node", b.Node)}
	}
	if b.File != "" {
		if err := checkPath(b.File); err != nil {
			return &SpecError{Field: ".file", Msg: err.Error()}
		}
	}
	return nil
}

// validateProvides checks a module's provided services, each on its own.
func validateProvides(s events.ModuleSpec) error {
	for _, name := range slices.Sorted(maps.Keys(s.Provides)) {
		if err := checkProvide(name, s.Provides[name]); err != nil {
			return specErr("provides."+name+err.Field, "%s", err.Msg)
		}
	}
	return nil
}

// validateBindings checks container c's bindings (field f,
// "containers[i]"): each on its own, no variable set twice (by env, a
// secret, a port read or another binding), no file declared twice
// (declare is ValidateSpec's). Grants are refused: no login is minted yet.
func validateBindings(f string, c events.ContainerSpec, declare func(field, path string) error) error {
	vars := map[string]string{}
	for k := range c.Env {
		vars[k] = f + ".env." + k
	}
	for k := range c.Secrets {
		vars[k] = f + ".env." + k
	}
	for j, pr := range c.Ports {
		vars[pr.Env] = fmt.Sprintf("%s.ports[%d]", f, j)
	}
	for _, list := range []struct {
		name string
		bs   []events.Binding
	}{{"reaches", c.Reaches}, {"grants", c.Grants}} {
		for j, b := range list.bs {
			bf := fmt.Sprintf("%s.%s[%d]", f, list.name, j)
			if err := checkBinding(b); err != nil {
				return specErr(bf+err.Field, "%s", err.Msg)
			}
			if b.Env != "" {
				if prev, dup := vars[b.Env]; dup {
					return specErr(bf+".env", "%s is also set by %s", b.Env, prev)
				}
				vars[b.Env] = bf
			}
			if b.File != "" {
				if err := declare(bf+".file", b.File); err != nil {
					return err
				}
			}
		}
	}
	if len(c.Grants) > 0 {
		return specErr(f+".grants", "grants are not supported yet: no login is minted (reaches gives the address)")
	}
	return nil
}

// reach composes the value of binding b of module mod's container c on
// node n: ADDRESS:PORT of the node running the provider, and the binding
// behind it (events.Bound, its Container and Field left to the caller).
// An empty value with a warning is a binding left unfilled (the provider's
// node was not given its port or private address: rule 6); an
// *IncoherentError says the binding cannot be told (the provider is not
// defined, provides no such service, runs nowhere, or on two nodes and the
// binding does not say which).
func (m *mesh) reach(n Node, mod Module, c events.ContainerSpec, b events.Binding) (string, events.Bound, string, error) {
	who := fmt.Sprintf("module %s's container %s reaches %s of module %s", mod.Name, c.Name, b.Service, b.Module)
	incoherent := func(format string, args ...any) (string, events.Bound, string, error) {
		return "", events.Bound{}, "", &IncoherentError{Node: n.Name, Reason: who + ", " + fmt.Sprintf(format, args...)}
	}
	var on []string // registered nodes the provider is assigned to
	for _, name := range m.names {
		nn := m.nodes[name]
		if name == n.Name {
			nn = n
		}
		if nn.Registered && nn.Assigned[b.Module] {
			on = append(on, name)
		}
	}
	prov, ok := m.modules[b.Module]
	switch {
	case len(on) == 0:
		return incoherent("which is assigned to no node (mesh module assign %s NODE)", b.Module)
	case !ok || !prov.Defined:
		return incoherent("which is not defined")
	}
	svc, ok := prov.Spec.Provides[b.Service]
	if !ok {
		provided := slices.Sorted(maps.Keys(prov.Spec.Provides))
		if len(provided) == 0 {
			return incoherent("which provides nothing")
		}
		return incoherent("which provides no %s (it provides %s)", b.Service, strings.Join(provided, ", "))
	}
	at := ""
	switch {
	case b.Node != "":
		if !slices.Contains(on, b.Node) {
			return incoherent("on node %s, which does not run it (it runs on %s)", b.Node, strings.Join(on, ", "))
		}
		at = b.Node
	case len(on) > 1:
		return incoherent("which runs on %s: say which with node:", strings.Join(on, ", "))
	default:
		at = on[0]
	}
	pn := m.nodes[at]
	if at == n.Name {
		pn = n
	}
	target := b.Env
	if target == "" {
		target = b.File
	}
	port, addr := pn.Port(svc.Port), pn.PrivateAddress()
	switch {
	case port == "":
		return "", events.Bound{}, fmt.Sprintf("%s on node %s, which was not given port %s (mesh node set %s port.%s PORT): %s is not set", who, at, svc.Port, at, svc.Port, target), nil
	case addr == "":
		return "", events.Bound{}, fmt.Sprintf("%s on node %s, which has no private address (mesh node set %s private-address ADDRESS): %s is not set", who, at, at, target), nil
	}
	return addr + ":" + port, events.Bound{Module: b.Module, Service: b.Service, Node: at, Setting: events.SettingPortPrefix + svc.Port}, "", nil
}

// reachEnv composes container c's reaches into env (by variable), with
// the warnings of those left unfilled; a reach into a file is mounted
// read-only at its path (reachFiles declares the file).
func (m *mesh) reachEnv(n Node, mod Module, c events.ContainerSpec, env map[string]string, spec *declaration.Container) ([]string, error) {
	var warnings []string
	for _, b := range c.Reaches {
		v, _, warn, err := m.reach(n, mod, c, b)
		if err != nil {
			return nil, err
		}
		if warn != "" {
			warnings = append(warnings, warn)
			continue
		}
		if b.Env != "" {
			env[b.Env] = v
		} else {
			spec.Mounts = append(spec.Mounts, declaration.Mount{Source: b.File, Target: b.File, ReadOnly: true})
		}
	}
	return warnings, nil
}

// reachFiles composes the files of container c's reaches into a file:
// each holds ADDRESS:PORT and a newline, mode BindingFileMode; and the
// binding behind every value c's reaches filled, file or variable. An
// unfilled one is neither (its warning is reachEnv's).
func (m *mesh) reachFiles(n Node, mod Module, c events.ContainerSpec) ([]declaration.Resource, []events.Bound, error) {
	var out []declaration.Resource
	var bound []events.Bound
	for _, b := range c.Reaches {
		v, bd, warn, err := m.reach(n, mod, c, b)
		if err != nil {
			return nil, nil, err
		}
		if warn != "" {
			continue
		}
		bd.Container = c.Name
		if b.Env != "" {
			bd.Field = "env." + b.Env
			bound = append(bound, bd)
			continue
		}
		bd.Field = "file." + b.File
		bound = append(bound, bd)
		out = append(out, declaration.Resource{Name: b.File, Kind: declaration.KindFile, Module: mod.Name, File: &declaration.File{Path: b.File, Mode: BindingFileMode, Content: v + "\n"}})
	}
	return out, bound, nil
}

// sortBound orders a declaration's bindings by container, then field.
func sortBound(bs []events.Bound) {
	slices.SortFunc(bs, func(a, b events.Bound) int {
		return cmp.Or(strings.Compare(a.Container, b.Container), strings.Compare(a.Field, b.Field))
	})
}
