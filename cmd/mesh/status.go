package main

import (
	"context"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/render"
	"meshplane/session"
)

func (e *env) statusCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status [NODE...]",
		Short: "each node's sync and health, with held counts per module",
		Long: `Each node's status on two axes, as Argo CD's sync and health, and the state
of each module assigned to it.

Sync: how the declaration the node last applied relates to the last one pushed.
  in-sync       the last applied declaration is the last pushed
  pending       a later declaration was pushed and not applied (reported) yet
  unreported    the node never reported an apply
  unreachable   the controller has not heard the node's heartbeat within its
                bound (mesh up --silent-after): whatever its last apply says,
                nobody knows what runs there now (a running controller only)

Health: what the last apply did; the first that holds wins, in this order.
  churning         a churn loop or flip is open on the node (mesh churn)
  failing          the last apply failed resources, the node's latest compose
                   failed (until a compose for it succeeds), or its latest
                   report was refused
  unknown          the node never reported an apply: nothing is known of it
  waiting-on-take  the last apply held resources for modules not taken on the
                   adopted node (mesh take MODULE NODE); the held counts are
                   shown per module
  converged        the last apply did everything it was told

A module's state on a node is converged, waiting-on-take or failing as
above, or pending: assigned, and not in the applied declaration, with the
reason: "the latest compose failed: ...", "in NODE/N, not applied yet", or
"not composed yet".`,
		ValidArgsFunction: completeNodes,
		RunE: func(cmd *cobra.Command, args []string) error {
			return ask(cmd, true, func(ctx context.Context, svc api.Service) (api.StatusResponse, error) {
				return svc.Status(ctx, api.StatusRequest{Nodes: args})
			}, render.StatusAnswer)
		},
	}
	addQuery(cmd)
	return cmd
}

// completeNodes completes node names from the mesh the command would ask
// (nothing when it cannot be asked).
func completeNodes(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	var names []string
	_ = withQuery(cmd, func(s *session.Session) error {
		resp, err := s.Service.Status(cmd.Context(), api.StatusRequest{})
		for _, st := range resp.Nodes {
			names = append(names, st.Node)
		}
		return err
	})
	return names, cobra.ShellCompDirectiveNoFileComp
}
