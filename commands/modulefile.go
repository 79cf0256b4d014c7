package commands

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"meshplane/events"
)

// ErrModuleFile wraps every error of ParseModuleFile.
var ErrModuleFile = errors.New("malformed module file")

// ModuleFileError names the file, line and field a module file is refused
// for.
type ModuleFileError struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *ModuleFileError) Error() string {
	at := e.File
	if e.Line > 0 {
		at = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Field == "" {
		return fmt.Sprintf("%s: %s", at, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", at, e.Field, e.Msg)
}

// MaxModuleFileSize is the largest module file accepted: 1 MiB, far above
// any module (the example modules are under 1 KiB). A larger file is refused
// having read no more than this and one byte.
const MaxModuleFileSize = 1 << 20

// ReadModuleFile reads a module file from r, refusing it unread past
// MaxModuleFileSize, and parses it as ParseModuleFile does.
func ReadModuleFile(file string, r io.Reader) (string, events.ModuleSpec, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxModuleFileSize+1))
	if err != nil {
		return "", events.ModuleSpec{}, fmt.Errorf("read %s: %w", file, err)
	}
	return ParseModuleFile(file, data)
}

// Is makes errors.Is(err, ErrModuleFile) true.
func (e *ModuleFileError) Is(target error) bool { return target == ErrModuleFile }

// ParseModuleFile parses a module file (YAML). file names it in errors.
//
//	module: forge                    # required
//	upgrade: manual                  # or roll-out: how a recorded build reaches the nodes
//	update: {min_healthy: 10s, healthy_deadline: 5m}  # how a roll-out replaces containers (update.go)
//	routes: [forge.zurag.be]
//	containers:
//	  - name: web
//	    artifact: forge/web          # or image: registry/name:tag
//	    command: [forge, serve]
//	    env: {LOG: info, DB_PASSWORD: {secret: forge-db}}  # a secret: its name, never its value
//	    ports:                       # node settings, read at compose time
//	      - {port: store, env: STORE_PORT}
//	    mounts:
//	      - /var/lib/forge           # source = target
//	      - {source: /srv/cfg, target: /etc/forge, readonly: true}
//	    volumes: ["forge-cache:/cache"]          # compose's keys (containeropts.go):
//	    publish: [{port: http, container: 8080}] # healthcheck, network, publish,
//	    healthcheck: {test: [CMD, forge, ping]}  # restart, stop_grace_period, memory,
//	    restart: always                          # cpus, entrypoint, user, cap_add,
//	                                             # tmpfs, read_only, depends_on, volumes
//	directories:
//	  - {path: /var/lib/forge, mode: "0700"}
//	files:
//	  - {path: /etc/forge.conf, mode: "0644", content: "..."}
//	provides:                        # services other modules' containers use (bindings.go)
//	  store: {port: store, kind: tcp}  # tcp, file, postgres, nats
//
// and, in a container, reaches: [{module: mesh-store, service: store, env:
// STORE_ADDR}] (or file: PATH; node: NODE when the provider runs on two).
//
// A file holds one YAML document: a second one (after "---") is refused,
// never dropped. Every mounted path is also a directory resource of the
// module. upgrade
// says what recording a build of one of its artifacts does: with manual (the
// default) nothing until `mesh deploy` (the artifact's first build excepted,
// which deploys itself); with roll-out, the build is deployed as it is
// recorded. Unknown
// fields, wrong types, duplicate container names, a file over
// MaxModuleFileSize and everything ValidateSpec refuses (paths not clean or
// declared twice among them) are errors naming the file, line and field.
func ParseModuleFile(file string, data []byte) (string, events.ModuleSpec, error) {
	if len(data) > MaxModuleFileSize {
		return "", events.ModuleSpec{}, &ModuleFileError{File: file, Msg: fmt.Sprintf("larger than %d bytes (1 MiB): not a module file", MaxModuleFileSize)}
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return "", events.ModuleSpec{}, &ModuleFileError{File: file, Line: yamlErrLine(err), Msg: err.Error()}
	}
	if err := oneDocument(file, dec); err != nil {
		return "", events.ModuleSpec{}, err
	}
	p := &mfParser{file: file, lines: map[string]int{}}
	name, spec := p.module(&doc)
	if p.err != nil {
		return "", events.ModuleSpec{}, p.err
	}
	return name, spec, nil
}

// oneDocument refuses a module file holding a second YAML document (after
// a "---"): a file defines one module, and a second document would be
// dropped unread. An empty document after the first (a trailing "---",
// comments) defines nothing and is let by.
func oneDocument(file string, dec *yaml.Decoder) error {
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return &ModuleFileError{File: file, Line: yamlErrLine(err), Msg: err.Error()}
		}
		if len(doc.Content) == 1 && doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null" && doc.Content[0].Value == "" {
			continue // empty
		}
		return &ModuleFileError{File: file, Line: doc.Line, Msg: "a second YAML document: a module file defines one module (put each module in a file of its own)"}
	}
}

type mfParser struct {
	file  string
	err   error
	lines map[string]int // field → the line it was read from, for ValidateSpec's errors
}

// line returns the line of field, or of the nearest enclosing field read.
func (p *mfParser) line(field string) (int, bool) {
	for field != "" {
		if l, ok := p.lines[field]; ok {
			return l, true
		}
		i := strings.LastIndexAny(field, ".[")
		if i < 0 {
			break
		}
		field = field[:i]
	}
	return 0, false
}

func (p *mfParser) fail(n *yaml.Node, field, format string, args ...any) {
	if p.err == nil {
		line := 0
		if n != nil {
			line = n.Line
		}
		p.err = &ModuleFileError{File: p.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
}

func (p *mfParser) module(doc *yaml.Node) (string, events.ModuleSpec) {
	var spec events.ModuleSpec
	root := doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	var name string
	nameSeen := false
	p.mapping(root, "", func(key string, v *yaml.Node) {
		switch key {
		case "module":
			name, nameSeen = p.str(v, "module"), true
			if p.err == nil {
				if bad := badName("module", name); bad != "" {
					p.fail(v, "module", "%s", bad)
				}
			}
		case "routes":
			spec.Routes = p.strs(v, "routes")
			for i, r := range spec.Routes {
				if !validHostname(r) {
					p.fail(v.Content[i], fmt.Sprintf("routes[%d]", i), "%s is not a host name", quote(r))
				}
			}
		case "containers":
			p.seq(v, "containers", func(i int, c *yaml.Node) {
				spec.Containers = append(spec.Containers, p.container(c, fmt.Sprintf("containers[%d]", i)))
			})
		case "directories":
			p.seq(v, "directories", func(i int, d *yaml.Node) {
				f := fmt.Sprintf("directories[%d]", i)
				var ds events.DirectorySpec
				p.mapping(d, f, func(key string, v *yaml.Node) {
					switch key {
					case "path":
						ds.Path = p.path(v, f+".path")
					case "mode":
						ds.Mode = p.mode(v, f+".mode")
					default:
						p.fail(v, f+"."+key, "unknown field (want path, mode)")
					}
				})
				if ds.Path == "" {
					p.fail(d, f+".path", "missing")
				}
				spec.Directories = append(spec.Directories, ds)
			})
		case "files":
			p.seq(v, "files", func(i int, n *yaml.Node) {
				f := fmt.Sprintf("files[%d]", i)
				var fs events.FileSpec
				p.mapping(n, f, func(key string, v *yaml.Node) {
					switch key {
					case "path":
						fs.Path = p.path(v, f+".path")
					case "mode":
						fs.Mode = p.mode(v, f+".mode")
					case "content":
						fs.Content = p.str(v, f+".content")
					default:
						p.fail(v, f+"."+key, "unknown field (want path, mode, content)")
					}
				})
				if fs.Path == "" {
					p.fail(n, f+".path", "missing")
				}
				spec.Files = append(spec.Files, fs)
			})
		case "upgrade":
			spec.Upgrade = p.str(v, "upgrade")
			if p.err == nil && spec.Upgrade != events.UpgradeManual && spec.Upgrade != events.UpgradeRollOut {
				p.fail(v, "upgrade", "%s is not an upgrade policy (want %s, the default, or %s)", quote(spec.Upgrade), events.UpgradeManual, events.UpgradeRollOut)
			}
		case "update":
			spec.Update = p.update(v)
		case "provides":
			spec.Provides = p.provides(v)
		default:
			p.fail(v, key, "unknown field (want module, upgrade, update, routes, containers, directories, files, provides)")
		}
	})
	if p.err == nil && !nameSeen {
		p.fail(root, "module", "missing: a module file names its module")
	}
	seen := map[string]int{}
	for i, c := range spec.Containers {
		f := fmt.Sprintf("containers[%d].name", i)
		if j, dup := seen[c.Name]; dup && p.err == nil {
			l, _ := p.line(f)
			p.err = &ModuleFileError{File: p.file, Line: l, Field: f, Msg: fmt.Sprintf("%q is also the name of containers[%d]", c.Name, j)}
		}
		seen[c.Name] = i
	}
	if p.err == nil {
		if err := ValidateSpec(spec); err != nil {
			var se *SpecError
			if errors.As(err, &se) {
				l, ok := p.line(se.Field)
				if !ok {
					l = root.Line
				}
				p.err = &ModuleFileError{File: p.file, Line: l, Field: se.Field, Msg: se.Msg}
			} else {
				p.fail(root, "", "%v", err)
			}
		}
	}
	return name, spec
}

func (p *mfParser) container(n *yaml.Node, f string) events.ContainerSpec {
	var c events.ContainerSpec
	p.mapping(n, f, func(key string, v *yaml.Node) {
		switch key {
		case "name":
			c.Name = p.str(v, f+".name")
			if p.err == nil {
				if bad := badName("container", c.Name); bad != "" {
					p.fail(v, f+".name", "%s", bad)
				}
			}
		case "image":
			c.Image = p.str(v, f+".image")
		case "artifact":
			c.Artifact = p.str(v, f+".artifact")
			if p.err == nil {
				if err := CheckArtifact(c.Artifact); err != nil {
					p.fail(v, f+".artifact", "%v", err)
				}
			}
		case "command":
			c.Command = p.strs(v, f+".command")
		case "env":
			c.Env = map[string]string{}
			p.mapping(v, f+".env", func(k string, ev *yaml.Node) { p.env(&c, ev, f+".env."+k, k) })
			if len(c.Env) == 0 && len(c.Secrets) > 0 {
				c.Env = nil
			}
		case "networks":
			c.Networks = p.strs(v, f+".networks")
		case "ports":
			p.seq(v, f+".ports", func(i int, pn *yaml.Node) {
				pf := fmt.Sprintf("%s.ports[%d]", f, i)
				var pr events.PortRead
				p.mapping(pn, pf, func(key string, v *yaml.Node) {
					switch key {
					case "port":
						pr.Port = p.str(v, pf+".port")
					case "env":
						pr.Env = p.str(v, pf+".env")
					default:
						p.fail(v, pf+"."+key, "unknown field (want port, env)")
					}
				})
				if p.err == nil && (pr.Port == "" || pr.Env == "") {
					p.fail(pn, pf, "a port read names both port and env")
				}
				c.Ports = append(c.Ports, pr)
			})
		case "mounts":
			p.seq(v, f+".mounts", func(i int, mn *yaml.Node) {
				mf := fmt.Sprintf("%s.mounts[%d]", f, i)
				var m events.Mount
				if mn.Kind == yaml.ScalarNode {
					m.Source = p.path(mn, mf)
					p.lines[mf+".source"] = mn.Line
				} else {
					p.mapping(mn, mf, func(key string, v *yaml.Node) {
						switch key {
						case "source":
							m.Source = p.path(v, mf+".source")
						case "target":
							m.Target = p.path(v, mf+".target")
						case "readonly":
							m.ReadOnly = p.bool(v, mf+".readonly")
						default:
							p.fail(v, mf+"."+key, "unknown field (want source, target, readonly)")
						}
					})
				}
				if p.err == nil && m.Source == "" {
					p.fail(mn, mf+".source", "missing")
				}
				c.Mounts = append(c.Mounts, m)
			})
		default:
			if !p.option(&c, f, key, v) && !p.binding(&c, f, key, v) {
				p.fail(v, f+"."+key, "unknown field (want %s, %s)", containerKeys, bindingKeys)
			}
		}
	})
	if p.err == nil {
		switch {
		case c.Name == "":
			p.fail(n, f+".name", "missing")
		case c.Image == "" && c.Artifact == "":
			p.fail(n, f, "container %s names neither an image nor an artifact", c.Name)
		case c.Image != "" && c.Artifact != "":
			p.fail(n, f, "container %s names both an image and an artifact", c.Name)
		}
	}
	return c
}

func (p *mfParser) mapping(n *yaml.Node, f string, each func(key string, v *yaml.Node)) {
	if p.err != nil {
		return
	}
	p.lines[f] = n.Line
	if n.Kind != yaml.MappingNode {
		p.fail(n, f, "want a mapping, found %s", kindName(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content) && p.err == nil; i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if seen[k.Value] {
			p.fail(k, join(f, k.Value), "given twice")
			return
		}
		seen[k.Value] = true
		each(k.Value, v)
	}
}

func (p *mfParser) seq(n *yaml.Node, f string, each func(i int, v *yaml.Node)) {
	if p.err != nil {
		return
	}
	if n.Kind != yaml.SequenceNode {
		p.fail(n, f, "want a list, found %s", kindName(n))
		return
	}
	for i, v := range n.Content {
		if p.err != nil {
			return
		}
		each(i, v)
	}
}

func (p *mfParser) str(n *yaml.Node, f string) string {
	if p.err != nil {
		return ""
	}
	p.lines[f] = n.Line
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.fail(n, f, "want a string, found %s", kindName(n))
		return ""
	}
	return n.Value
}

func (p *mfParser) strs(n *yaml.Node, f string) []string {
	var out []string
	p.seq(n, f, func(i int, v *yaml.Node) { out = append(out, p.str(v, fmt.Sprintf("%s[%d]", f, i))) })
	return out
}

func (p *mfParser) bool(n *yaml.Node, f string) bool {
	s := p.str(n, f)
	if p.err != nil {
		return false
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		p.fail(n, f, "%q is not true or false", s)
	}
	return b
}

func (p *mfParser) path(n *yaml.Node, f string) string {
	s := p.str(n, f)
	if p.err == nil {
		if err := checkPath(s); err != nil {
			p.fail(n, f, "%v", err)
		}
	}
	return s
}

func (p *mfParser) mode(n *yaml.Node, f string) string {
	s := p.str(n, f)
	if p.err == nil {
		if _, err := parseMode(s, 0); err != nil {
			p.fail(n, f, "%v (quote it: \"0700\")", err)
		}
	}
	return s
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "an empty document"
}

func join(f, k string) string {
	if f == "" {
		return k
	}
	return f + "." + k
}

// yamlErrLine pulls the line out of a yaml syntax error ("yaml: line 3: ...").
func yamlErrLine(err error) int {
	var line int
	if _, scanErr := fmt.Sscanf(err.Error(), "yaml: line %d:", &line); scanErr == nil {
		return line
	}
	return 0
}

// env reads one environment variable of container c: a plain string, or
// {secret: NAME}, a secret of the controller's secret store (mesh secret
// set NAME), whose value the module file never holds.
func (p *mfParser) env(c *events.ContainerSpec, v *yaml.Node, f, key string) {
	if v.Kind != yaml.MappingNode {
		c.Env[key] = p.str(v, f)
		return
	}
	var ref events.SecretRef
	p.mapping(v, f, func(k string, sv *yaml.Node) {
		if k != "secret" {
			p.fail(sv, f+"."+k, "unknown field (want secret)")
			return
		}
		ref.Secret = p.str(sv, f+".secret")
	})
	if p.err != nil {
		return
	}
	if bad := badName("secret", ref.Secret); bad != "" {
		p.fail(v, f+".secret", "%s", bad)
		return
	}
	if c.Secrets == nil {
		c.Secrets = map[string]events.SecretRef{}
	}
	c.Secrets[key] = ref
}
