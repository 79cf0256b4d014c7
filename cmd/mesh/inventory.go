package main

// The day-one verbs: node list, node remove, module list, module show,
// module remove, version.

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/internal/buildinfo"
	"meshplane/render"
)

// listCmd is a query verb that asks q and prints with p (ask).
func listCmd[T any](use, short string, args cobra.PositionalArgs, q func(context.Context, api.Service, []string) (T, error), p func(io.Writer, render.Format, T) error) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Args: args, RunE: func(cmd *cobra.Command, args []string) error {
		return ask(cmd, false, func(ctx context.Context, svc api.Service) (T, error) { return q(ctx, svc, args) },
			func(w io.Writer, f render.Format, v T, _ api.Skipped) error { return p(w, f, v) })
	}}
	addQuery(cmd)
	return cmd
}

func (e *env) nodeListCmd() *cobra.Command {
	return listCmd("list", "every registered node: adopted, sync, health, its modules", noArgs,
		func(ctx context.Context, svc api.Service, _ []string) (api.NodeList, error) { return svc.NodeList(ctx) }, render.NodeList)
}

func (e *env) moduleListCmd() *cobra.Command {
	return listCmd("list", "every defined module: containers, builds, upgrade, routes, nodes", noArgs,
		func(ctx context.Context, svc api.Service, _ []string) (api.ModuleList, error) {
			return svc.ModuleList(ctx)
		}, render.ModuleList)
}

func (e *env) moduleShowCmd() *cobra.Command {
	return listCmd("show MODULE", "one module: its definition now, its nodes, its builds and which is deployed", exactArgs(1, "name one module"),
		func(ctx context.Context, svc api.Service, a []string) (api.ModuleShow, error) {
			return svc.ModuleShow(ctx, a[0])
		}, render.ModuleShow)
}

func (e *env) nodeRemoveCmd() *cobra.Command {
	var drain bool
	cmd := &cobra.Command{
		Use:   "remove NODE",
		Short: "remove a node and revoke its bus users (--drain: release its modules first)",
		Long:  controller.RemoveNodeHelp, Args: exactArgs(1, "name one node"), ValidArgsFunction: completeNodes,
		RunE: func(cmd *cobra.Command, a []string) error {
			return e.execute(cmd, commands.RemoveNode{Node: a[0], Drain: drain})
		},
	}
	cmd.Flags().BoolVar(&drain, "drain", false, "release every module assigned to the node first, and push it the emptied declaration")
	return cmd
}

func (e *env) moduleRemoveCmd() *cobra.Command {
	var release bool
	cmd := &cobra.Command{
		Use:   "remove MODULE",
		Short: "remove a module (--release: release it everywhere first)",
		Long:  controller.RemoveModuleHelp, Args: exactArgs(1, "name one module"),
		RunE: func(cmd *cobra.Command, a []string) error {
			return e.execute(cmd, commands.RemoveModule{Module: a[0], Release: release})
		},
	}
	cmd.Flags().BoolVar(&release, "release", false, "release the module from every node it is assigned to first, in the same request")
	return cmd
}

func (e *env) versionCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use: "version", Short: "this binary's version (mesh info: the controller's)", Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := outputOf(cmd)
			if err != nil {
				return err
			}
			return render.Version(e.stdout, render.Format(out), render.VersionInfo{Mesh: buildinfo.Version(), Go: buildinfo.Platform()})
		},
	}
	addOutput(cmd)
	return cmd
}
