package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"meshplane/api"
)

// Churn shows each node's churn episodes, open and past, with their
// evidence (mesh churn); its JSON is the episodes by node. sk is what the
// answer left out.
func Churn(w io.Writer, f Format, resp api.ChurnResponse, sk api.Skipped) error {
	if f == JSON {
		all := map[string][]api.Episode{}
		for _, nc := range resp.Nodes {
			all[nc.Node] = nc.Episodes
		}
		if err := WriteJSON(w, all); err != nil {
			return err
		}
		return Partial(sk, false)
	}
	any := false
	for _, nc := range resp.Nodes {
		for _, ep := range nc.Episodes {
			any = true
			state := "cleared"
			if ep.Active() {
				state = "ACTIVE"
			}
			kind := []string{}
			if ep.Loop {
				kind = append(kind, "loop")
			}
			if ep.Flip {
				kind = append(kind, "flip")
			}
			fmt.Fprintf(w, "%s: %s %s, from #%d (%s), detected at #%d, %d passes, %d heavy\n",
				nc.Node, state, strings.Join(kind, "+"), ep.Start.Position, stamp(ep.Start.At), ep.Detected.Position, ep.Passes, ep.HeavyPasses)
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetIndent("    ", "  ")
			if err := enc.Encode(ep.Evidence); err != nil {
				return err
			}
			fmt.Fprintf(w, "    evidence: %s", b.String())
		}
	}
	if !any {
		fmt.Fprintln(w, "no churn: no heavy passes in a row and no flips")
	}
	return Partial(sk, false)
}
