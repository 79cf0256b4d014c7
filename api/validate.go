package api

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"meshplane/commands"
	"meshplane/events"
)

// The door of the API. A request body is decoded strictly
// (events.UnmarshalStrict: no key given twice, none in another case, no
// unknown field, one value; 400 invalid, naming the key), then every field
// it names is checked before the service sees it (422 invalid, naming the
// field), as the CLI's arguments are: an operator by commands.CheckOperator,
// the node and module names of a command by events.CheckName, artifact
// names and digests as commands check them, every other name (of a read, a
// push, a plan: such a name may be one an older build took, and history
// keeps) bounded, and every list bounded.

// Bounds of a request's fields.
const (
	// MaxRequestItems bounds each list a request names: nodes, modules,
	// plan commands, projections.
	MaxRequestItems = 10000
	// MaxRefLen bounds a name a request reads by (a node, a resource, a
	// declaration, a timeline filter): events.MaxNameSize, the longest a
	// stream name, a type or a correlation may be.
	MaxRefLen = events.MaxNameSize
	// MaxPlanCommandLen bounds one command of a plan request's After.
	MaxPlanCommandLen = 1024
)

// validator is a request that checks its own fields.
type validator interface{ validate() error }

// invalidField is a request refused for one of its fields.
func invalidField(field, format string, args ...any) error {
	return &commands.Rejection{Code: commands.CodeInvalid, Msg: field + ": " + fmt.Sprintf(format, args...)}
}

// checkName checks a name a command creates or acts on, by the one rule.
func checkName(field, what, name string) error {
	if err := events.CheckName(what, name); err != nil {
		return invalidField(field, "%v", err)
	}
	return nil
}

// checkRef checks a name a request reads or pushes by: bounded, UTF-8,
// printable.
func checkRef(field, v string) error {
	return checkText(field, v, MaxRefLen)
}

// checkText checks a string field: at most max bytes of UTF-8, no control
// character.
func checkText(field, v string, max int) error {
	switch {
	case len(v) > max:
		return invalidField(field, "%d bytes, over the limit of %d", len(v), max)
	case !utf8.ValidString(v):
		return invalidField(field, "not valid UTF-8")
	}
	for i, r := range v {
		if unicode.IsControl(r) {
			return invalidField(field, "byte %d is %U: no control characters", i, r)
		}
	}
	return nil
}

// checkOperator checks who asks; the refusal names the operator field.
func checkOperator(op string) error { return commands.CheckOperator(op) }

func checkItems(field string, n int) error {
	if n > MaxRequestItems {
		return invalidField(field, "%d items, over the limit of %d", n, MaxRequestItems)
	}
	return nil
}

// each checks every item of a list field with check.
func each(field string, items []string, check func(field, v string) error) error {
	if err := checkItems(field, len(items)); err != nil {
		return err
	}
	for i, v := range items {
		if err := check(fmt.Sprintf("%s[%d]", field, i), v); err != nil {
			return err
		}
	}
	return nil
}

func nodeName(field, v string) error   { return checkName(field, "node", v) }
func moduleName(field, v string) error { return checkName(field, "module", v) }

func (r RegisterNodesRequest) validate() error {
	if err := checkOperator(r.Operator); err != nil {
		return err
	}
	return each("nodes", r.Nodes, nodeName)
}

func (r NodeRequest) validate() error {
	if err := checkOperator(r.Operator); err != nil {
		return err
	}
	return nodeName("node", r.Node)
}

func (r SetSettingRequest) validate() error {
	if err := checkOperator(r.Operator); err != nil {
		return err
	}
	if err := nodeName("node", r.Node); err != nil {
		return err
	}
	if err := checkRef("key", r.Key); err != nil {
		return err
	}
	return checkRef("value", r.Value)
}

func (r DefineModulesRequest) validate() error {
	if err := checkOperator(r.Operator); err != nil {
		return err
	}
	if err := checkItems("modules", len(r.Modules)); err != nil {
		return err
	}
	for i, m := range r.Modules {
		if err := moduleName(fmt.Sprintf("modules[%d].module", i), m.Module); err != nil {
			return err
		}
	}
	return nil // the specs: commands.ValidateSpec, as for a module file
}

func (r ModuleNodeRequest) validate() error {
	if err := checkOperator(r.Operator); err != nil {
		return err
	}
	if err := moduleName("module", r.Module); err != nil {
		return err
	}
	return nodeName("node", r.Node)
}

func (r RecordArtifactRequest) validate() error {
	if err := checkOperator(r.Operator); err != nil {
		return err
	}
	if err := moduleName("module", r.Module); err != nil {
		return err
	}
	if err := commands.CheckArtifact(r.Name); err != nil {
		return invalidField("name", "%v", err)
	}
	if err := commands.CheckDigest(r.Digest); err != nil {
		return invalidField("digest", "%v", err)
	}
	return nil
}

func (r DeployRequest) validate() error {
	if err := checkOperator(r.Operator); err != nil {
		return err
	}
	if err := moduleName("module", r.Module); err != nil {
		return err
	}
	if r.Digest != "" {
		if err := commands.CheckDigest(r.Digest); err != nil {
			return invalidField("digest", "%v", err)
		}
	}
	return nil
}

func (r PushRequest) validate() error {
	if err := checkOperator(r.Operator); err != nil {
		return err
	}
	if r.Node != "" {
		return checkRef("node", r.Node)
	}
	return nil
}

func (r PlanRequest) validate() error {
	if err := each("nodes", r.Nodes, checkRef); err != nil {
		return err
	}
	return each("after", r.After, func(field, v string) error { return checkText(field, v, MaxPlanCommandLen) })
}

func (r RebuildRequest) validate() error {
	return each("projections", r.Projections, checkRef)
}

func (r StatusRequest) validate() error { return each("node", r.Nodes, checkRef) }

func (r ChurnRequest) validate() error { return each("node", r.Nodes, checkRef) }

func (r TimelineRequest) validate() error {
	for _, f := range []struct{ name, v string }{
		{"node", r.Node}, {"module", r.Module}, {"resource", r.Resource}, {"type", r.Type}, {"correlation", r.Correlation},
	} {
		if err := checkRef(f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

func (r WhyRequest) validate() error {
	if err := checkRef("node", r.Node); err != nil {
		return err
	}
	return checkRef("resource", r.Resource)
}

func (r RosterDiffRequest) validate() error {
	for _, f := range []struct{ name, v string }{{"node", r.Node}, {"from", r.From}, {"to", r.To}} {
		if err := checkRef(f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

// nodeRef is a read of one node by name (GET /v1/nodes/{node}, its roster).
type nodeRef string

func (n nodeRef) validate() error { return checkRef("node", string(n)) }
