package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/render"
	"meshplane/session"
)

// operator is who the CLI acts as ($MESH_OPERATOR, else $USER, else
// "cli"); the controller records "operator:<name>" as the events' actor.
func operator() string {
	name := os.Getenv("MESH_OPERATOR")
	if name == "" {
		name = os.Getenv("USER")
	}
	if name == "" {
		name = "cli"
	}
	return name
}

// execute runs cs through cmd's Service as one request, all or nothing
// (the controller checks them with commands.Handler.ExecuteAll: if one is
// refused, none is written). It reports each: the events it appended, or
// that its work was already done.
func (e *env) execute(cmd *cobra.Command, cs ...commands.Command) error {
	return withSession(cmd, true, cs, func(s *session.Session) error {
		res, err := call(cmd.Context(), s.Service, operator(), cs)
		render.CommandResult(cmd.OutOrStdout(), res, cs)
		if len(res.Results) == 0 {
			return commands.BatchRefused(err, len(cs))
		}
		return err
	})
}

// call sends cs to svc as the one request they make: several
// registrations or module definitions, or one command of any kind.
func call(ctx context.Context, svc api.Service, op string, cs []commands.Command) (api.CommandResult, error) {
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
	}
	return api.CommandResult{}, fmt.Errorf("%T has no request of the API", cs[0])
}
