package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"meshplane/api"
)

func (e *env) rebuildCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rebuild",
		Short: "rebuild every projection from position 0 and check it equals a second rebuild (local store only)",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q", args[0])
			}
			t, err := targetOf(cmd, true)
			if err != nil {
				return err
			}
			s, err := t.open(cmd.Context(), false, nil)
			if err != nil {
				return err
			}
			defer s.Close()
			if s.remote() {
				return fmt.Errorf("the store in %s is locked by a running controller: rebuild reads the store itself; stop the controller first", t.data)
			}
			ctx, r := cmd.Context(), s.ctrl.Runner()
			start := time.Now()
			if err := r.Rebuild(ctx); err != nil {
				return err
			}
			took := time.Since(start)
			first, err := json.Marshal(s.ctrl.Views())
			if err != nil {
				return err
			}
			if err := r.Rebuild(ctx); err != nil {
				return err
			}
			second, err := json.Marshal(s.ctrl.Views())
			if err != nil {
				return err
			}
			if !bytes.Equal(first, second) {
				return fmt.Errorf("two rebuilds differ: the projections are not deterministic (a bug: please report it)")
			}
			fmt.Fprintf(e.stdout, "rebuilt every projection from %d events in %s; a second rebuild is byte-identical (%d bytes)\n",
				r.Position(), took.Round(time.Millisecond), len(first))
			sk := s.skipped(api.Skipped{})
			noteSkipped(e.stdout, sk)
			return partial(sk, true)
		},
	}
}
