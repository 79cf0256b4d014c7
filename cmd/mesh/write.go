package main

import (
	"os"

	"github.com/spf13/cobra"

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
		res, err := session.Send(cmd.Context(), s.Service, operator(), cs)
		render.CommandResult(cmd.OutOrStdout(), res, cs)
		if len(res.Results) == 0 {
			return commands.BatchRefused(err, len(cs))
		}
		return err
	})
}
