package commands

import (
	"fmt"
	"slices"
	"strings"

	"meshplane/api"
	"meshplane/events"
)

// Rejection codes of removing a module or a node.
const (
	CodeModuleAssigned  = api.CodeModuleAssigned
	CodeModulesAssigned = api.CodeModulesAssigned
)

// RemoveModule removes a defined module from the mesh (module.removed):
// refused while it is assigned to a node (CodeModuleAssigned, naming the
// nodes). Done when the module was removed and not defined since. Release
// is what the operator asked of the request: the controller sends a
// ReleaseModule for every node the module is assigned to before it, in
// the same request (Decide itself releases nothing).
type RemoveModule struct {
	Module  string
	Release bool
}

// RemoveNode removes a registered node from the mesh (node.removed),
// revoking every bus user of it first (node.credentials-revoked, when it
// has any left). Refused while modules are assigned to it
// (CodeModulesAssigned, naming them), unless Drain: then each is released
// first (module.released), in the same append. By is the actor recorded in
// the revocation. Released are the modules a drain released before this
// command, in requests of their own (the controller's, so that the emptied
// declaration is pushed first): node.removed names them in Drained, with
// those it releases itself. Done when the node was removed and not
// registered since.
type RemoveNode struct {
	Node     string
	Drain    bool
	By       string
	Released []string
}

func (c RemoveModule) Stream() string { return events.ModuleStream(c.Module) }
func (c RemoveNode) Stream() string   { return events.NodeStream(c.Node) }

func (RemoveModule) command() {}
func (RemoveNode) command()   {}

// decideRemove is Decide for RemoveModule and RemoveNode.
func decideRemove(s State, c Command) ([]events.Payload, error) {
	switch c := c.(type) {
	case RemoveModule:
		if !s.Module.Defined {
			if s.Module.Removed {
				return nil, nil
			}
			return nil, reject(CodeModuleUnknown, "cannot remove module %s: it is not defined", short(c.Module))
		}
		if len(s.AssignedTo) > 0 {
			return nil, reject(CodeModuleAssigned, "cannot remove module %s: it is assigned to %s (release it there first, or give --release to release it everywhere)",
				c.Module, strings.Join(s.AssignedTo, ", "))
		}
		return one(events.ModuleRemoved{Module: c.Module})
	case RemoveNode:
		if !s.Node.Registered {
			if s.Node.Removed {
				return nil, nil
			}
			return nil, reject(CodeNodeUnknown, "cannot remove node %s: it is not registered", short(c.Node))
		}
		assigned := s.Node.AssignedModules()
		if len(assigned) > 0 && !c.Drain {
			return nil, reject(CodeModulesAssigned, "cannot remove node %s: module(s) %s are assigned to it (release them first, or give --drain to release them all)",
				c.Node, strings.Join(assigned, ", "))
		}
		var out []events.Payload
		for _, m := range assigned {
			out = append(out, events.ModuleReleased{Module: m, Node: c.Node})
		}
		if keys := s.Node.Access.Unrevoked(); len(keys) > 0 {
			out = append(out, events.NodeCredentialsRevoked{Node: c.Node, PublicKeys: keys, By: c.By})
		}
		drained := slices.Concat(c.Released, assigned)
		slices.Sort(drained)
		return append(out, events.NodeRemoved{Node: c.Node, Drained: slices.Compact(drained)}), nil
	}
	return nil, reject(CodeInvalid, "unknown command %T", c)
}

// removeNote is UnchangedNote for the removals.
func removeNote(c Command) string {
	switch c := c.(type) {
	case RemoveModule:
		return fmt.Sprintf("module %s is removed already", c.Module)
	case RemoveNode:
		return fmt.Sprintf("node %s is removed already", c.Node)
	}
	return ""
}

// forgetNode is a node's state once it is removed: its registration,
// adoption, settings, assignments, declaration and unused join tokens
// forgotten; what its stream's later events need kept (the count of its
// declarations, so that ids stay unique, its recent applies, its bus users
// and their revocation).
func forgetNode(s Node) Node {
	return Node{
		Name: s.Name, Removed: true, Composed: s.Composed, Version: s.Version, Applies: s.Applies,
		Access: Access{Keys: s.Access.Keys, Revoked: s.Access.Revoked},
	}
}
