package main

import (
	"github.com/spf13/cobra"

	"meshplane/api"
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
