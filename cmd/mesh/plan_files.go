package main

import (
	"strings"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/controller"
	"meshplane/render"
	"meshplane/session"
)

// planRequest is mesh plan's request: the module files its --after
// "module define FILE..." lines name are read here, on the caller's side,
// and sent with it (api.PlanRequest.Files).
func planRequest(nodes, after []string) (api.PlanRequest, error) {
	req := api.PlanRequest{Nodes: nodes, After: after}
	var paths []string
	for _, line := range after {
		paths = append(paths, controller.AfterFiles(line)...)
	}
	if len(paths) == 0 {
		return req, nil
	}
	defs, err := readModuleFiles(paths)
	if err != nil {
		return api.PlanRequest{}, err
	}
	req.Files = make(map[string]api.ModuleDefinition, len(defs))
	for i, d := range defs {
		req.Files[paths[i]] = api.ModuleDefinition{Module: d.Module, Spec: d.Spec}
	}
	return req, nil
}

// runPlan asks for req's plan and prints it; a heavy plan exits 4.
func runPlan(cmd *cobra.Command, req api.PlanRequest) error {
	out, err := outputOf(cmd)
	if err != nil {
		return err
	}
	return withSession(cmd, false, nil, func(s *session.Session) error {
		resp, err := s.Service.Plan(cmd.Context(), req)
		if err != nil {
			return err
		}
		if err := render.Plan(cmd.OutOrStdout(), render.Format(out), resp); err != nil {
			return err
		}
		if resp.Heavy {
			return &exitError{exitHeavy}
		}
		return nil
	})
}

// planDefine is mesh module define --plan: the plan of every node the
// definitions reach, as if they were defined; nothing is appended.
func planDefine(cmd *cobra.Command, files []string) error {
	req, err := planRequest(nil, []string{"module define " + strings.Join(files, " ")})
	if err != nil {
		return err
	}
	req.Reached = true
	return runPlan(cmd, req)
}
