package main

import (
	"strings"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/meshup"
	"meshplane/render"
	"meshplane/session"
)

// runPlan asks for req's plan and prints it; a node that does not
// compose exits 5, else a heavy plan exits 4.
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
		if len(resp.NotComposed()) > 0 {
			return &exitError{exitNotComposed}
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
	req, err := meshup.PlanRequest(nil, []string{"module define " + strings.Join(files, " ")})
	if err != nil {
		return err
	}
	req.Reached = true
	return runPlan(cmd, req)
}
