// The sentences people read: an entry as shown, its summary, and runs of
// identical outcomes collapsed.

package projections

import (
	"fmt"
	"strings"
	"time"

	"meshplane/events"
)

// Run is a run of entries of one node with identical outcomes, collapsed
// into one line: the same type, declaration and summary (an apply that
// touched the same resources in the same way), and no churn mark.
type Run struct {
	Count         int       `json:"count"` // entries in the run, 2 or more
	From          time.Time `json:"from"`  // the first's time
	To            time.Time `json:"to"`    // the last's time
	FirstPosition uint64    `json:"first_position"`
	LastPosition  uint64    `json:"last_position"`
}

// show renders an entry.
func (t *Timeline) show(e *entry) Entry { return show(e) }

// show renders an entry: it reads the entry alone, nothing else of the
// timeline (so ShowEvent renders one read back from its event the same).
func show(e *entry) Entry {
	out := Entry{
		Position: e.position, At: e.time(), Stream: e.stream, Type: e.typ,
		Actor: e.actor, Correlation: e.correlation, Node: e.node, Modules: modules(e),
	}
	if e.decl != nil {
		out.Digest = e.decl.digest
	}
	switch v := e.p.(type) {
	case *events.DeclarationComposed:
		out.Declaration, out.Digest = v.Declaration, v.Digest
	case events.DeclarationPushed:
		out.Declaration = v.Declaration
		if v.Digest != "" {
			out.Digest = v.Digest
		}
	case events.DeclarationPushFailed:
		out.Declaration = v.Declaration
	case *tlApply:
		a := v.report()
		out.Declaration = a.Declaration
		if a.Digest != "" {
			out.Digest = a.Digest
		}
		out.Resources = touched(a)
		out.Heavy = v.heavy()
		out.Idle = a.Changes() == 0 && len(a.Updated) == 0 && len(a.Failed) == 0
		out.Held = a.Held
		out.HoldsUnknown = v.heldUnknown
	case events.ReportDeliveredLate:
		out.Declaration = v.Declaration
	case events.ReportRefused:
		out.Declaration = v.Declaration
	}
	out.Summary = summarize(e)
	if out.HoldsUnknown {
		out.Summary += "; " + HoldsUnknownNote
	}
	return out
}

// summaryNames is how many names a summary lists before "and N more".
const summaryNames = 5

// summarize is the one line an entry reads as.
func summarize(e *entry) string {
	switch v := e.p.(type) {
	case events.NodeRegistered:
		return fmt.Sprintf("node %s registered", e.node)
	case events.NodeAdopted:
		return fmt.Sprintf("node %s adopted", e.node)
	case events.NodeSettingSet:
		if v.Value == "" {
			return fmt.Sprintf("%s cleared on %s", v.Key, e.node)
		}
		return fmt.Sprintf("%s set to %s on %s", v.Key, v.Value, e.node)
	case events.ModuleDefined:
		return fmt.Sprintf("module %s defined: %d container(s), %d routed name(s)", v.Module, len(v.Spec.Containers), len(v.Spec.Routes))
	case events.ModuleAssigned:
		return fmt.Sprintf("%s assigned to %s", v.Module, v.Node)
	case events.ModuleReleased:
		return fmt.Sprintf("%s released from %s", v.Module, v.Node)
	case events.ModuleTaken:
		return fmt.Sprintf("%s taken on %s", v.Module, v.Node)
	case events.ArtifactRecorded:
		s := fmt.Sprintf("artifact %s of %s recorded at %s", v.Name, v.Module, v.Digest)
		if v.Upgrade == events.UpgradeManual {
			s += " (upgrade: manual)"
		}
		return s
	case events.ModuleDeployed:
		return deployedLine(v)
	case *events.DeclarationComposed:
		s := fmt.Sprintf("composed %s for %s: %d resource(s), %d routed name(s)", v.Declaration, e.node, e.resources, e.roster)
		if len(v.Warnings) > 0 {
			s += fmt.Sprintf(", %d warning(s)", len(v.Warnings))
		}
		if len(v.Skipped) > 0 {
			s += fmt.Sprintf(", %d node(s) skipped", len(v.Skipped))
		}
		if v.ResourcesUnknown != "" {
			s += "; its resources are unknown: " + v.ResourcesUnknown
		}
		return s
	case events.DeclarationComposeFailed:
		return fmt.Sprintf("compose for %s failed: %s", e.node, v.Error)
	case events.DeclarationPushed:
		return fmt.Sprintf("pushed %s to %s: %d resource(s)", v.Declaration, e.node, v.Resources)
	case events.DeclarationPushFailed:
		return fmt.Sprintf("push of %s to %s failed: %s", v.Declaration, e.node, v.Error)
	case *tlApply:
		return applyLine(v.report())
	case events.ReportDeliveredLate:
		s := fmt.Sprintf("report of %s delivered late, after %d attempt(s)", v.Declaration, v.Attempts)
		if v.LastError != "" {
			s += ": " + v.LastError
		}
		return s
	case events.ReportRefused:
		return refusedLine(e.node, v)
	case events.ReportThrottled:
		return fmt.Sprintf("%s sent reports faster than its limit (%g a second, bursts of %d): %d deferred from %s to %s, each recorded in its turn",
			e.node, v.Rate, v.Burst, v.Deferred, v.From.UTC().Format(time.TimeOnly), v.To.UTC().Format(time.TimeOnly))
	case events.NodeWentSilent:
		if v.LastSeen.IsZero() {
			return fmt.Sprintf("%s went silent: no heartbeat within %s of the controller leading", e.node, v.Bound)
		}
		return fmt.Sprintf("%s went silent: no heartbeat for %s, last seen %s", e.node, v.Bound, v.LastSeen.UTC().Format(time.TimeOnly))
	case events.NodeCameBack:
		return fmt.Sprintf("%s came back: heard at %s after %s silent", e.node, v.LastSeen.UTC().Format(time.TimeOnly), v.SilentFor)
	case events.NodeJoinTokenIssued:
		return fmt.Sprintf("join token %s issued for %s, good until %s", v.TokenID, e.node, v.ExpiresAt.UTC().Format(time.RFC3339))
	case events.NodeJoined:
		return fmt.Sprintf("%s joined with token %s from %s: bus user %s (agent %s)", e.node, v.TokenID, v.From, v.PublicKey, v.AgentVersion)
	case events.NodeCredentialsIssued:
		return fmt.Sprintf("bus credentials minted for %s: user %s", e.node, v.PublicKey)
	case events.NodeCredentialsRevoked:
		return fmt.Sprintf("%d bus user(s) of %s revoked: %s", len(v.PublicKeys), e.node, strings.Join(v.PublicKeys, ", "))
	case events.NodeRemoved:
		if len(v.Drained) > 0 {
			return fmt.Sprintf("node %s removed, drained of %s", e.node, strings.Join(v.Drained, ", "))
		}
		return fmt.Sprintf("node %s removed", e.node)
	case events.ModuleRemoved:
		return fmt.Sprintf("module %s removed", v.Module)
	case events.RolloutFailed:
		return rolloutLine(v)
	}
	return e.typ
}

// rolloutLine is a rollout.failed's summary: "roll-out of forge on novox
// failed (web: exited with code 1: …): gave up, nothing reverted".
func rolloutLine(v events.RolloutFailed) string {
	why := make([]string, 0, len(v.Containers))
	for i, c := range v.Containers {
		if i == summaryNames {
			why = append(why, fmt.Sprintf("and %d more", len(v.Containers)-i))
			break
		}
		why = append(why, c.Container+": "+c.Why)
	}
	s := fmt.Sprintf("roll-out of %s on %s failed (%s): ", v.Module, v.Node, strings.Join(why, "; "))
	switch v.Action {
	case events.RolloutRevert:
		return s + fmt.Sprintf("reverting the module to position %d (on_failure: revert)", v.RevertTo)
	case events.RolloutStopped:
		return s + "it was the revert of a failed roll-out: stopped there, nothing reverted again"
	}
	return s + "gave up, nothing reverted (on_failure: pause)"
}

// refusedLine is a report.refused's summary: "report from n1 refused
// (bad-counts): …; 52 bytes, sha256:ab12…".
func refusedLine(node string, v events.ReportRefused) string {
	var b strings.Builder
	fmt.Fprintf(&b, "report from %s refused (%s)", node, v.Reason)
	if v.Detail != "" {
		b.WriteString(": ")
		b.WriteString(v.Detail)
	}
	fmt.Fprintf(&b, "; %d bytes, %s", v.Size, v.Digest)
	return b.String()
}

// deployedLine is a module.deployed's summary: "forge deployed: forge/web at
// sha256:…, deployed by roll-out policy".
func deployedLine(v events.ModuleDeployed) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s deployed:", v.Module)
	for i, bd := range v.Builds {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %s at %s", bd.Name, bd.Digest)
	}
	switch v.By {
	case events.DeployedByRollOut:
		b.WriteString("; deployed by roll-out policy")
	case events.DeployedByFirstBuild:
		b.WriteString("; the first build deploys itself")
	case events.DeployedByOperator:
		b.WriteString("; deployed by mesh deploy")
	case events.DeployedByRevert:
		b.WriteString("; deployed again by mesh revert")
	}
	return b.String()
}

// applyLine is an apply's Summary, then what it did by name:
// "applied 3 resource(s); replaced web (mounts); created db".
func applyLine(a *events.ApplyReported) string {
	var b strings.Builder
	b.WriteString(a.Summary())
	list := func(verb string, n int, name func(int) string) {
		if n == 0 {
			return
		}
		b.WriteString("; ")
		b.WriteString(verb)
		for i := 0; i < n && i < summaryNames; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(" ")
			b.WriteString(name(i))
		}
		if n > summaryNames {
			fmt.Fprintf(&b, " and %d more", n-summaryNames)
		}
	}
	withFields := func(r events.Replaced) string {
		if len(r.Fields) == 0 {
			return r.Name
		}
		return r.Name + " (" + strings.Join(r.Fields, ", ") + ")"
	}
	list("created", len(a.Created), func(i int) string { return a.Created[i] })
	list("replaced", len(a.Replaced), func(i int) string { return withFields(a.Replaced[i]) })
	list("updated", len(a.Updated), func(i int) string { return withFields(a.Updated[i]) })
	list("removed", len(a.Removed), func(i int) string { return a.Removed[i] })
	list("failed", len(a.Failed), func(i int) string { return a.Failed[i].Name + " (" + a.Failed[i].Error + ")" })
	return b.String()
}
