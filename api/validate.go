package api

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"meshplane/events"
)

// The door of the API. A request body is decoded strictly
// (events.UnmarshalStrict: no key given twice, none in another case, no
// unknown field, one value; 400 invalid, naming the key). Then every field
// it names is checked before anything is read or appended, as the CLI's
// arguments are, and with the same words, so that a refusal reads alike
// on a local store and over HTTP: what a command names (nodes, modules,
// settings, specs, artifacts, digests) the commands check at their door
// (422 invalid, naming the rule); what only a request can name is checked
// here (422 invalid, naming the field): the operator, by
// CheckOperator as the controller does; the names of reads,
// pushes and plans, bounded (history may hold names an older build took,
// so they are not held to the name rule); every list, bounded.

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

// invalidField is a request refused for one of its fields.
func invalidField(field, format string, args ...any) error {
	return &Rejection{Code: CodeInvalid, Msg: field + ": " + fmt.Sprintf(format, args...)}
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
func checkOperator(op string) error { return CheckOperator(op) }

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

// Validate checks the fields of a RegisterNodesRequest, as the door above says.
func (r RegisterNodesRequest) Validate() error {
	if err := checkOperator(r.Operator); err != nil {
		return err
	}
	return checkItems("nodes", len(r.Nodes)) // each name: commands.CheckName
}

// Validate checks the fields of a NodeRequest, as the door above says.
func (r NodeRequest) Validate() error { return checkOperator(r.Operator) }

// Validate checks the fields of a SetSettingRequest, as the door above says.
func (r SetSettingRequest) Validate() error { return checkOperator(r.Operator) }

// Validate checks the fields of a DefineModulesRequest, as the door above says.
func (r DefineModulesRequest) Validate() error {
	if err := checkOperator(r.Operator); err != nil {
		return err
	}
	return checkItems("modules", len(r.Modules)) // names and specs: the commands
}

// Validate checks the fields of a ModuleNodeRequest, as the door above says.
func (r ModuleNodeRequest) Validate() error { return checkOperator(r.Operator) }

// Validate checks the fields of a RecordArtifactRequest, as the door above says.
func (r RecordArtifactRequest) Validate() error { return checkOperator(r.Operator) }

// Validate checks the fields of a DeployRequest, as the door above says.
func (r DeployRequest) Validate() error { return checkOperator(r.Operator) }

// Validate checks the fields of a PushRequest, as the door above says.
func (r PushRequest) Validate() error {
	if err := checkOperator(r.Operator); err != nil {
		return err
	}
	if r.Node != "" {
		return checkRef("node", r.Node)
	}
	return nil
}

// Validate checks the fields of a PlanRequest, as the door above says.
func (r PlanRequest) Validate() error {
	if err := each("nodes", r.Nodes, checkRef); err != nil {
		return err
	}
	if err := each("after", r.After, func(field, v string) error { return checkText(field, v, MaxPlanCommandLen) }); err != nil {
		return err
	}
	for path, d := range r.Files {
		if err := checkText("files", path, MaxPlanCommandLen); err != nil {
			return err
		}
		if err := checkRef("files."+path+".module", d.Module); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks the fields of a RebuildRequest, as the door above says.
func (r RebuildRequest) Validate() error {
	return each("projections", r.Projections, checkRef)
}

// Validate checks the fields of a StatusRequest, as the door above says.
func (r StatusRequest) Validate() error { return each("node", r.Nodes, checkRef) }

// Validate checks the fields of a ChurnRequest, as the door above says.
func (r ChurnRequest) Validate() error { return each("node", r.Nodes, checkRef) }

// Validate checks the fields of a TimelineRequest, as the door above says.
func (r TimelineRequest) Validate() error {
	for _, f := range []struct{ name, v string }{
		{"node", r.Node}, {"module", r.Module}, {"resource", r.Resource}, {"type", r.Type}, {"correlation", r.Correlation},
	} {
		if err := checkRef(f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks the fields of a WhyRequest, as the door above says.
func (r WhyRequest) Validate() error {
	if err := checkRef("node", r.Node); err != nil {
		return err
	}
	return checkRef("resource", r.Resource)
}

// Validate checks the fields of a RosterDiffRequest, as the door above says.
func (r RosterDiffRequest) Validate() error {
	for _, f := range []struct{ name, v string }{{"node", r.Node}, {"from", r.From}, {"to", r.To}} {
		if err := checkRef(f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

// NodeRef is a read of one node by name (NodeShow, Roster, RosterHistory).
type NodeRef string

// Validate checks the name: bounded, UTF-8, printable.
func (n NodeRef) Validate() error { return checkRef("node", string(n)) }

// ModuleRef is a module named in a path (GET /v1/modules/{module}).
type ModuleRef string

// Validate checks the module's length and bytes, as NodeRef does.
func (m ModuleRef) Validate() error { return checkRef("module", string(m)) }

// Validate checks the operator; the module's name is the command's.
func (r RemoveModuleRequest) Validate() error { return checkOperator(r.Operator) }

// Validate checks the operator; the node's name is the command's.
func (r RemoveNodeRequest) Validate() error { return checkOperator(r.Operator) }
