package render

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"

	"meshplane/api"
)

// Status shows each node's sync and health, with the last failures of
// each (mesh status); its JSON is the nodes. resp.Skipped is what the
// answer left out, noted after the table.
func Status(w io.Writer, f Format, resp api.StatusResponse) error {
	return StatusAnswer(w, f, resp, api.Skipped{})
}

// StatusAnswer is Status for a query verb's printer (its answer carries
// what was skipped, locally and remotely: sk is not read).
func StatusAnswer(w io.Writer, f Format, resp api.StatusResponse, _ api.Skipped) error {
	sk := resp.Skipped
	if f == JSON {
		if err := writeJSONAt(w, resp.AsOf, "nodes", resp.Nodes); err != nil {
			return err
		}
		return Partial(sk, false)
	}
	tw := table(w)
	// LAST SEEN is there when the answer carries liveness (a controller
	// hearing heartbeats); a store read on its own knows none.
	live := slices.ContainsFunc(resp.Nodes, hasLiveness)
	head := "NODE\tSYNC\tHEALTH\tDECLARATION\tLAST APPLY"
	if live {
		head = "NODE\tSYNC\tHEALTH\tLAST SEEN\tDECLARATION\tLAST APPLY"
	}
	pf(tw, head+"\n") // the header: this package's own words, a format of no verb
	for _, st := range resp.Nodes {
		decl, apply := "-", "-"
		if st.Pushed != nil {
			decl = st.Pushed.Declaration
		}
		if st.Applied != nil {
			apply = st.Applied.Summary
		}
		if live {
			pf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", st.Node, st.Sync, Health(st.Health, st.Held), lastSeen(st), decl, apply)
			continue
		}
		pf(tw, "%s\t%s\t%s\t%s\t%s\n", st.Node, st.Sync, Health(st.Health, st.Held), decl, apply)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, st := range resp.Nodes {
		if st.ComposeFailed != nil {
			pf(w, "\n%s: last compose failed at %s: %s\n", st.Node, stamp(st.ComposeFailed.At), st.ComposeFailed.Error)
		}
		if p := pending(st); len(p) > 0 {
			pln(w)
			for _, m := range p {
				pf(w, "%s: module %s pending: %s\n", st.Node, m, orDash(st.Modules[m].Reason))
			}
		}
		if st.PushFailed != nil {
			pf(w, "\n%s: last push of %s failed at %s: %s\n", st.Node, st.PushFailed.Declaration, stamp(st.PushFailed.At), st.PushFailed.Error)
		}
		if r := st.ReportRefused; r != nil {
			pf(w, "\n%s: latest report refused at %s (%s): %s\n", st.Node, stamp(r.At), r.Reason, r.Detail)
		}
		if names := notRunning(st); len(names) > 0 {
			pln(w)
			for _, n := range names {
				c := st.Containers[n]
				pf(w, "%s: container %s (%s) %s%s\n", st.Node, n, c.Module, c.State, reasonOf(c))
			}
		}
	}
	return Noted(w, sk)
}

// notRunning is the containers of st that do not run as they should,
// sorted (a crash loop is a container's, never a churn loop).
func notRunning(st api.NodeStatus) []string {
	var out []string
	for n, c := range st.Containers {
		if c.State != workloadRunning {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// workloadRunning is the state of a container that runs as it should.
const workloadRunning = "running"

// reasonOf is ": " and c's reason, or "".
func reasonOf(c api.ContainerStatus) string {
	if c.Reason == "" {
		return ""
	}
	return ": " + c.Reason
}

// modulePending is the state of a module assigned and absent from the
// applied declaration (projections.ModulePending).
const modulePending = "pending"

// pending is the modules of st that are pending, sorted.
func pending(st api.NodeStatus) []string {
	var out []string
	for m, ms := range st.Modules {
		if ms.State == modulePending {
			out = append(out, m)
		}
	}
	sort.Strings(out)
	return out
}

// hasLiveness reports whether st carries what a controller heard of its
// node: a last heartbeat, or none within the bound.
func hasLiveness(st api.NodeStatus) bool {
	return st.LastSeen != nil || st.Sync == api.SyncUnreachable
}

// lastSeen is st's last heartbeat, or "never" when the controller heard
// none since it started.
func lastSeen(st api.NodeStatus) string {
	if st.LastSeen == nil {
		return "never"
	}
	return stamp(*st.LastSeen)
}

// NodeShow shows one node: its status, its modules and the holds of its
// own apply reports (mesh node show). sk is what the answer left out.
func NodeShow(w io.Writer, f Format, ns api.NodeShow, sk api.Skipped) error {
	if f == JSON {
		if err := WriteJSON(w, ns); err != nil {
			return err
		}
		return Partial(sk, false)
	}
	st := ns.Status
	pf(w, "node     %s\n", st.Node)
	pf(w, "adopted  %v\n", st.Adopted)
	pf(w, "sync     %s\n", st.Sync)
	if hasLiveness(st) {
		if st.LastSeen != nil {
			pf(w, "seen     %s (last heartbeat)\n", stamp(*st.LastSeen))
			if st.AgentVersion != "" {
				pf(w, "agent    %s\n", st.AgentVersion)
			}
		} else {
			pf(w, "seen     never (no heartbeat since the controller started)\n")
		}
	}
	pf(w, "health   %s\n", Health(st.Health, st.Held))
	if st.Workload == "unknown" {
		pf(w, "workload unknown (its agent says nothing of how its containers run)\n")
	} else if st.Workload != "" {
		pf(w, "workload %s\n", st.Workload)
	}
	if st.Pushed != nil {
		pf(w, "pushed   %s at %s\n", st.Pushed.Declaration, stamp(st.Pushed.At))
	}
	if st.Applied != nil {
		pf(w, "applied  %s at %s: %s\n", st.Applied.Declaration, stamp(st.Applied.At), st.Applied.Summary)
	}
	if st.ComposeFailed != nil {
		pf(w, "compose  failed at %s: %s\n", stamp(st.ComposeFailed.At), st.ComposeFailed.Error)
	}
	if r := st.ReportRefused; r != nil {
		pf(w, "report   refused at %s (%s): %s\n", stamp(r.At), r.Reason, r.Detail)
	}
	pf(w, "\nmodules:\n")
	tw := table(w)
	pf(tw, "  MODULE\tASSIGNED\tTAKEN\tSTATE\tHELD\tFAILED\n")
	names := make([]string, 0, len(st.Modules))
	for m := range st.Modules {
		names = append(names, m)
	}
	sort.Strings(names)
	for _, m := range names {
		ms := st.Modules[m]
		pf(tw, "  %s\t%v\t%v\t%s\t%d\t%d\n", m, ms.Assigned, ms.Taken, ms.State, ms.Held, ms.Failed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, m := range pending(st) {
		pf(w, "  %s is pending: %s\n", m, orDash(st.Modules[m].Reason))
	}
	if len(st.Containers) > 0 {
		pf(w, "\ncontainers (as the engine runs them):\n")
		ctw := table(w)
		pf(ctw, "  CONTAINER\tMODULE\tSTATE\tSINCE\tWHY\n")
		for _, n := range slices.Sorted(maps.Keys(st.Containers)) {
			c := st.Containers[n]
			pf(ctw, "  %s\t%s\t%s\t%s\t%s\n", n, c.Module, c.State, stamp(c.At), orDash(c.Reason))
		}
		if err := ctw.Flush(); err != nil {
			return err
		}
	}
	pf(w, "\nholds (from the node's own apply reports): %d\n", len(ns.Holds))
	for _, h := range ns.Holds {
		pf(w, "  %s (%s): %s\n", h.Name, h.Module, h.Reason)
	}
	if a := ns.Access; a != nil {
		pf(w, "\njoin tokens:\n")
		for _, t := range a.Tokens {
			used := "unused"
			if !t.UsedAt.IsZero() {
				used = fmt.Sprintf("used at %s from %s", stamp(t.UsedAt), t.From)
			}
			pf(w, "  %s  expires %s  %s\n", t.ID, stamp(t.ExpiresAt), used)
		}
		pf(w, "\nbus users:\n")
		for _, k := range a.Keys {
			state := "active"
			if k.Revoked {
				state = "revoked"
			}
			pf(w, "  %s  %s\n", k.PublicKey, state)
		}
	}
	return Partial(sk, false)
}
