package session

import (
	"context"
	"errors"
	"fmt"

	"meshplane/api"
	"meshplane/commands"
)

// Send sends cs to svc as the one request they make: several
// registrations or module definitions, or one command of any kind.
func Send(ctx context.Context, svc api.Service, op string, cs []commands.Command) (api.CommandResult, error) {
	if len(cs) == 0 {
		return api.CommandResult{}, errors.New("no command to send")
	}
	switch cs[0].(type) {
	case commands.RegisterNode:
		req := api.RegisterNodesRequest{Operator: op}
		for _, c := range cs {
			r, ok := c.(commands.RegisterNode)
			if !ok {
				return api.CommandResult{}, fmt.Errorf("%T in a batch of registrations", c)
			}
			req.Nodes = append(req.Nodes, r.Node)
		}
		return svc.RegisterNodes(ctx, req)
	case commands.DefineModule:
		req := api.DefineModulesRequest{Operator: op}
		for _, c := range cs {
			d, ok := c.(commands.DefineModule)
			if !ok {
				return api.CommandResult{}, fmt.Errorf("%T in a batch of module definitions", c)
			}
			req.Modules = append(req.Modules, api.ModuleDefinition{Module: d.Module, Spec: d.Spec})
		}
		return svc.DefineModules(ctx, req)
	}
	if len(cs) > 1 {
		return api.CommandResult{}, fmt.Errorf("%T cannot be batched", cs[0])
	}
	switch c := cs[0].(type) {
	case commands.AdoptNode:
		return svc.AdoptNode(ctx, api.NodeRequest{Operator: op, Node: c.Node})
	case commands.SetNodeSetting:
		return svc.SetSetting(ctx, api.SetSettingRequest{Operator: op, Node: c.Node, Key: c.Key, Value: c.Value})
	case commands.AssignModule:
		return svc.Assign(ctx, api.ModuleNodeRequest{Operator: op, Module: c.Module, Node: c.Node})
	case commands.TakeModule:
		return svc.Take(ctx, api.ModuleNodeRequest{Operator: op, Module: c.Module, Node: c.Node})
	case commands.ReleaseModule:
		return svc.Release(ctx, api.ModuleNodeRequest{Operator: op, Module: c.Module, Node: c.Node})
	case commands.RecordArtifact:
		return svc.RecordArtifact(ctx, api.RecordArtifactRequest{Operator: op, Module: c.Module, Name: c.Name, Digest: c.Digest})
	case commands.DeployModule:
		return svc.Deploy(ctx, api.DeployRequest{Operator: op, Module: c.Module, Digest: c.Digest})
	case commands.RemoveModule:
		return svc.RemoveModule(ctx, api.RemoveModuleRequest{Operator: op, Module: c.Module, Release: c.Release})
	case commands.RemoveNode:
		return svc.RemoveNode(ctx, api.RemoveNodeRequest{Operator: op, Node: c.Node, Drain: c.Drain})
	}
	return api.CommandResult{}, fmt.Errorf("%T has no request of the API", cs[0])
}
