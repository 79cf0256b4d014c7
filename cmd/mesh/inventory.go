package main

// The day-one verbs: node list, node remove, module list, module show,
// module remove, version.

import (
	"github.com/spf13/cobra"

	"meshplane/commands"
	"meshplane/controller"
	"meshplane/internal/buildinfo"
	"meshplane/render"
	"meshplane/session"
)

// query is a query verb: fn asks the session's Service and prints.
func query(use, short string, args cobra.PositionalArgs, fn func(cmd *cobra.Command, s *session.Session, f render.Format, args []string) error) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Args: args, RunE: func(cmd *cobra.Command, args []string) error {
		out, err := outputOf(cmd)
		if err != nil {
			return err
		}
		return withSession(cmd, false, nil, func(s *session.Session) error { return fn(cmd, s, render.Format(out), args) })
	}}
	addOutput(cmd)
	return cmd
}

func (e *env) inventoryCmds() (nodeVerbs, moduleVerbs []*cobra.Command) {
	var drain, release bool
	nodeRemove := &cobra.Command{Use: "remove NODE", Short: "remove a node and revoke its bus users (--drain: release its modules first)", Long: controller.RemoveNodeHelp,
		Args: exactArgs(1, "name one node"), ValidArgsFunction: completeNodes,
		RunE: func(cmd *cobra.Command, a []string) error {
			return e.execute(cmd, commands.RemoveNode{Node: a[0], Drain: drain})
		}}
	nodeRemove.Flags().BoolVar(&drain, "drain", false, "release every module assigned to the node first, and push it the emptied declaration")
	moduleRemove := &cobra.Command{Use: "remove MODULE", Short: "remove a module (--release: release it everywhere first)", Long: controller.RemoveModuleHelp,
		Args: exactArgs(1, "name one module"),
		RunE: func(cmd *cobra.Command, a []string) error {
			return e.execute(cmd, commands.RemoveModule{Module: a[0], Release: release})
		}}
	moduleRemove.Flags().BoolVar(&release, "release", false, "release the module from every node it is assigned to first, in the same request")
	return []*cobra.Command{query("list", "every registered node: adopted, sync, health, its modules", noArgs, func(cmd *cobra.Command, s *session.Session, f render.Format, _ []string) error {
			return render.Printed(e.stdout, f, render.NodeList)(s.Service.NodeList(cmd.Context()))
		}), nodeRemove}, []*cobra.Command{query("list", "every defined module: containers, builds, upgrade, routes, nodes", noArgs, func(cmd *cobra.Command, s *session.Session, f render.Format, _ []string) error {
			return render.Printed(e.stdout, f, render.ModuleList)(s.Service.ModuleList(cmd.Context()))
		}), query("show MODULE", "one module: its definition now, its nodes, its builds and which is deployed", exactArgs(1, "name one module"), func(cmd *cobra.Command, s *session.Session, f render.Format, a []string) error {
			return render.Printed(e.stdout, f, render.ModuleShow)(s.Service.ModuleShow(cmd.Context(), a[0]))
		}), moduleRemove}
}

func (e *env) versionCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "version", Short: "this binary's version (mesh info: the controller's)", Args: noArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		out, err := outputOf(cmd)
		if err != nil {
			return err
		}
		return render.Version(e.stdout, render.Format(out), render.VersionInfo{Mesh: buildinfo.Version(), Go: buildinfo.Platform()})
	}}
	addOutput(cmd)
	return cmd
}
