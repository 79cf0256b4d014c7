package render

import (
	"fmt"
	"io"
	"strings"
	"time"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/events"
)

// CommandResult shows what the write verbs did: for each command of cs,
// the events it appended, or, when it appended none, that its work was
// already done (commands.UnchangedNote). res holds a result per command
// sent, in order.
func CommandResult(w io.Writer, res api.CommandResult, cs []commands.Command) {
	for i, a := range res.Results {
		if len(a.Events) == 0 && i < len(cs) {
			pf(w, "%s, nothing to do\n", commands.UnchangedNote(cs[i]))
		}
		for _, ev := range a.Events {
			pln(w, EventLine(ev))
		}
	}
}

// EventLine says what an appended event did, in words first, then the
// event as the store names it: "defined module forge (module-forge #3
// module.defined)". A type this build has no words for is said as
// "recorded TYPE". Its names are escaped (Escape): the line is safe to
// print as it is.
func EventLine(ev api.EventRef) string {
	what, ok := eventWords[ev.Type]
	if !ok {
		what = "recorded " + ev.Type + " on"
	}
	return Escape(fmt.Sprintf("%s %s (%s #%d %s)", what, streamSubject(ev.Stream), ev.Stream, ev.Position, ev.Type))
}

// eventWords are the words for each event type a command appends, before
// the subject its stream names (streamSubject).
var eventWords = map[string]string{
	events.TypeNodeRegistered:           "registered",
	events.TypeNodeAdopted:              "adopted",
	events.TypeNodeSettingSet:           "set a setting of",
	events.TypeNodeRemoved:              "removed",
	events.TypeModuleDefined:            "defined",
	events.TypeModuleRemoved:            "removed",
	events.TypeModuleAssigned:           "assigned a module to",
	events.TypeModuleReleased:           "released a module from",
	events.TypeModuleTaken:              "took a module on",
	events.TypeArtifactRecorded:         "recorded a build of",
	events.TypeModuleDeployed:           "deployed builds of",
	events.TypeDeclarationComposed:      "composed a declaration for",
	events.TypeDeclarationComposeFailed: "could not compose a declaration for",
	events.TypeDeclarationPushed:        "pushed a declaration to",
	events.TypeDeclarationPushFailed:    "could not push a declaration to",
	events.TypeApplyReported:            "recorded an apply on",
	events.TypeNodeJoinTokenIssued:      "issued a join token for",
	events.TypeNodeJoined:               "joined",
	events.TypeNodeCredentialsIssued:    "issued bus credentials for",
	events.TypeNodeCredentialsRevoked:   "revoked the bus users of",
	events.TypeTokenCreated:             "created an API token for",
	events.TypeTokenRevoked:             "revoked the API token of",
	events.TypeSecretSet:                "set",
	events.TypeRosterChanged:            "changed",
	events.TypeNodeWentSilent:           "heard nothing from",
	events.TypeNodeCameBack:             "heard again from",
	events.TypeReportDeliveredLate:      "recorded a late report of",
	events.TypeReportRefused:            "refused a report of",
	events.TypeReportThrottled:          "deferred reports of",
	events.TypeContainerStarting:        "saw a container start on",
	events.TypeContainerRecovered:       "saw a container run on",
	events.TypeContainerUnhealthy:       "saw a container fail its health check on",
	events.TypeContainerCrashLooping:    "saw a container crash-loop on",
	events.TypeContainerExited:          "saw a container exit on",
	events.TypeContainerOOMKilled:       "saw a container killed for memory on",
	events.TypeContainerVanished:        "saw a container vanish from",
	events.TypeRolloutFailed:            "saw a roll-out fail on",
}

// streamSubject is what a stream is of, in words: "node novox", "module
// forge", "secret forge-db", "operator alice", "the roster".
func streamSubject(stream string) string {
	if stream == events.RosterStream {
		return "the roster"
	}
	for prefix, what := range map[string]string{"node-": "node ", "module-": "module ", "secret-": "secret ", "token-": "operator "} {
		if name, ok := strings.CutPrefix(stream, prefix); ok {
			return what + name
		}
	}
	return "stream " + stream
}

// Push shows each node's push (mesh push), and returns an error counting
// the pushes that failed; its JSON is the response.
func Push(w io.Writer, f Format, resp api.PushResponse) error {
	if f == JSON {
		return WriteJSON(w, resp)
	}
	failed := 0
	for _, p := range resp.Pushes {
		if p.Error != "" {
			failed++
			pf(w, "%s: push failed: %s\n", p.Node, p.Error)
			continue
		}
		pf(w, "%s: pushed %s (%s)\n", p.Node, p.Declaration, short(p.Digest))
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d push(es) failed (each is recorded on its node's stream)", failed, len(resp.Pushes))
	}
	return nil
}

// ArtifactPushed says that an image tarball is in the artifact store at
// addr, as name@digest (mesh artifact push, before the build is recorded).
func ArtifactPushed(w io.Writer, tarball, addr, name, digest string) {
	pf(w, "pushed %s to %s/%s@%s\n", tarball, addr, name, digest)
}

// Rebuild shows a rebuild in the shadow of a running controller (mesh
// rebuild --server): of the projections named (every one when none is),
// and for each whether the rebuilt one differed from the live one (on what
// a checkpoint keeps of each, said once, when the live projections were
// resumed from one). What the rebuild skipped is noted after it.
func Rebuild(w io.Writer, names []string, res api.RebuildResult) error {
	pf(w, "rebuilt %s in the shadow from %d events in %s; swapped in at position %d\n",
		projectionsNamed(names), res.Events, (time.Duration(res.Millis) * time.Millisecond).String(), res.Position)
	for _, c := range res.Projections {
		if c.Kept {
			pf(w, "  (the live projections were resumed from a checkpoint: each is compared on what a checkpoint keeps of it, its state and recent history)\n")
			break
		}
	}
	for _, c := range res.Projections {
		if c.Same {
			pf(w, "  %-9s same as before (%d bytes)\n", c.Name, c.NewBytes)
		} else {
			pf(w, "  %-9s DIFFERED from the live one (%d bytes before, %d after): the rebuilt one, from the events, is now live\n", c.Name, c.OldBytes, c.NewBytes)
		}
	}
	return Noted(w, res.Skipped)
}

// RebuildLocal shows a local rebuild of the projections named (every one
// when none is) from n events, checked against a second one of size
// bytes (mesh rebuild on a local store).
func RebuildLocal(w io.Writer, names []string, n uint64, took time.Duration, bytes int) {
	pf(w, "rebuilt %s from %d events in %s; a second rebuild is byte-identical (%d bytes)\n",
		projectionsNamed(names), n, took.Round(time.Millisecond), bytes)
}

// SnapshotSaved says that a rebuild of every projection was saved, at
// position, as the files named.
func SnapshotSaved(w io.Writer, position uint64, files ...string) {
	pf(w, "saved the snapshot of every projection at position %d (%s)\n", position, strings.Join(files, ", "))
}

// projectionsNamed names the projections rebuilt.
func projectionsNamed(names []string) string {
	if len(names) == 0 {
		return "every projection"
	}
	return strings.Join(names, ", ")
}
