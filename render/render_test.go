package render_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/events"
	"meshplane/render"
	"meshplane/replay"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// t0 is when the fixtures happen.
var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// skipped is an answer that left events out: an unknown type and two
// events that did not decode.
var skipped = api.Skipped{
	UnknownTypes:  map[string]int{"node.renamed": 2, "mesh.split": 1},
	Failures:      []api.Failure{{Position: 17, Stream: "node-novox", Type: "apply.reported", Err: "unexpected end of JSON input"}},
	FailuresTotal: 2,
}

var (
	converged = api.NodeStatus{
		Node: "novox", Sync: "in-sync", Health: "converged", Adopted: true,
		Modules: map[string]api.ModuleStatus{
			"route-proxy": {Assigned: true, Taken: true, State: "converged"},
			"forge":       {Assigned: true, Taken: true, State: "converged"},
		},
		Pushed:  &api.DeclMark{Declaration: "novox/3", Digest: "sha256:0123456789abcdef0123", Position: 12, At: at(time.Minute)},
		Applied: &api.ApplyRecord{DeclMark: api.DeclMark{Declaration: "novox/3", Position: 14, At: at(2 * time.Minute)}, Summary: "applied 4 of 4: 1 created, 3 unchanged"},
	}
	waiting = api.NodeStatus{
		Node: "d1", Sync: "stale", Health: "waiting-on-take",
		Modules: map[string]api.ModuleStatus{
			"photos":      {Assigned: true, State: "waiting-on-take", Held: 3},
			"route-proxy": {Assigned: true, State: "waiting-on-take", Held: 13, Failed: 1},
		},
		Held:          []events.ModuleCount{{Module: "route-proxy", Count: 13}, {Module: "photos", Count: 3}},
		ComposeFailed: &api.ComposeFailure{Read: "module forge", Error: "no build recorded", Position: 20, At: at(3 * time.Minute)},
		PushFailed:    &api.PushFailure{Declaration: "d1/2", Error: "nats: timeout", Position: 21, At: at(4 * time.Minute)},
		ReportRefused: &api.ReportRefusal{Reason: "too-large", Detail: "2 MB, at most 1 MB", Position: 22, At: at(5 * time.Minute)},
	}
	// composeFailing: its latest compose failed (two modules claim one
	// container name), while its agent re-applied the older declaration.
	composeFailing = api.NodeStatus{
		Node: "opx", Sync: "in-sync", Health: "failing",
		Modules: map[string]api.ModuleStatus{
			"opxweb":   {Assigned: true, State: "converged"},
			"opxtypo2": {Assigned: true, State: "pending", Reason: "the latest compose failed: modules opxtypo2 and opxweb both claim web"},
			"forge":    {Assigned: true, State: "pending", Reason: "the latest compose failed: modules opxtypo2 and opxweb both claim web"},
		},
		Pushed:        &api.DeclMark{Declaration: "opx/4", Digest: "sha256:44", Position: 40, At: at(time.Minute)},
		Applied:       &api.ApplyRecord{DeclMark: api.DeclMark{Declaration: "opx/4", Position: 52, At: at(6 * time.Minute)}, Summary: "applied 4 resource(s)"},
		ComposeFailed: &api.ComposeFailure{Error: "modules opxtypo2 and opxweb both claim web", Position: 50, At: at(5 * time.Minute)},
	}
	failing = api.NodeStatus{Node: "spare", Sync: "never-pushed", Health: "failing", Held: []events.ModuleCount{{Module: "x", Count: 1}}}
)

// The day-one verbs' answers.
var (
	nodeList = api.NodeList{Nodes: []api.NodeSummary{
		{Node: "d1", Sync: "stale", Health: "waiting-on-take", Modules: []string{"photos", "route-proxy"}},
		{Node: "novox", Adopted: true, Sync: "in-sync", Health: "converged", Modules: []string{"forge", "route-proxy"}},
		{Node: "spare", Modules: []string{}, Sync: "never-pushed", Health: "unknown"},
	}}
	moduleList = api.ModuleList{Modules: []api.ModuleSummary{
		{Module: "forge", Nodes: []string{"novox"}, Containers: 2, Routes: []string{"forge.zurag.be"}, Upgrade: events.UpgradeRollOut, Builds: 3},
		{Module: "idle", Nodes: []string{}, Containers: 1, Routes: []string{}, Upgrade: events.UpgradeManual},
	}}
	moduleShow = api.ModuleShow{
		Module: "forge", Upgrade: events.UpgradeManual,
		Spec: events.ModuleSpec{
			Routes: []string{"forge.zurag.be"},
			Containers: []events.ContainerSpec{
				{Name: "web", Artifact: "forge/web", Env: map[string]string{"GREETING": "hello"}, Ports: []events.PortRead{{Port: "store", Env: "STORE_PORT"}},
					Mounts: []events.Mount{{Source: "/var/lib/forge", Target: "/data"}, {Source: "/etc/forge", ReadOnly: true}}},
				{Name: "db", Image: "postgres:17"},
			},
			Directories: []events.DirectorySpec{{Path: "/var/lib/forge"}},
		},
		Nodes: []api.ModuleNode{{Node: "d1"}, {Node: "novox", Taken: true}},
		Builds: []api.BuildView{
			{Name: "forge/web", Digest: "sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0", Deployed: true},
			{Name: "forge/web", Digest: "sha256:5ac036b6109b0b9f2c41d0aa3ccce11a2a888784e88e862248d98651773d12ee", Latest: true},
		},
	}
)

// apply is an apply.reported entry of node at position p.
func apply(p uint64, node, decl, summary string, d time.Duration) api.Entry {
	return api.Entry{Position: p, At: at(d), Stream: "node-" + node, Type: events.TypeApplyReported, Actor: "agent:" + node, Node: node, Declaration: decl, Summary: summary}
}

func idle(en api.Entry) api.Entry { en.Idle = true; return en }

var timeline = []api.Entry{
	{Position: 1, At: at(0), Stream: "node-novox", Type: "node.registered", Actor: "operator:ana", Node: "novox", Summary: "registered novox"},
	{Position: 2, At: at(time.Second), Stream: "module-forge", Type: "module.defined", Actor: "operator:ana", Summary: "defined forge"},
	apply(3, "novox", "novox/1", "applied 2 of 2: 2 created", time.Minute),
	idle(apply(4, "novox", "novox/1", "applied 2 of 2: 2 unchanged", 2*time.Minute)),
	idle(apply(5, "novox", "novox/1", "applied 2 of 2: 2 unchanged", 7*time.Minute)),
	idle(apply(6, "novox", "novox/1", "applied 2 of 2: 2 unchanged", 25*time.Hour)),
	{Position: 7, At: at(25*time.Hour + time.Second), Stream: "node-d1", Type: "report.refused", Node: "d1", Summary: "refused: too-large"},
	{Position: 8, At: at(25*time.Hour + 2*time.Second), Stream: "node-d1", Type: "report.refused", Node: "d1", Summary: "refused: too-large"},
}

// hostileTimeline is a timeline holding the report of the hostile
// node: a resource name and a summary that clear the screen, colour it,
// and start a line that reads as a removal by the admin.
var hostileTimeline = []api.Entry{
	{Position: 998, At: at(0), Stream: "node-n1", Type: "apply.reported", Actor: "agent:n1", Node: "n1", Declaration: "n1/1",
		Resources: []string{"\u001b[2J\u001b[31mFAKE\n999 2026-11-30 10:00:00 n2 node.removed operator:admin"},
		Summary:   "failed: \u001b[2J\u001b[31mFAKE\n999 2026-11-30 10:00:00 n2 node.removed operator:admin\u0085\u202e\u007f\tend"},
}

// hostileStatus is a node whose agent sent a hostile version and whose
// last apply failed with a hostile message.
var hostileStatus = api.NodeStatus{
	Node: "n1", Sync: "in-sync", Health: "failing",
	AgentVersion:  "v1\u001b]0;owned\u0007",
	ComposeFailed: &api.ComposeFailure{At: at(time.Minute), Error: "\u001b[2Jboom\n999 forged"},
}

var why = api.WhyResponse{
	Node: "novox", Resource: "forge-web",
	Touches: []api.WhyTouch{
		{
			Touch: api.Touch{Entry: api.Entry{Position: 30, At: at(time.Hour), Node: "novox", Declaration: "novox/4", Correlation: "c-4"}, Action: "replaced", Fields: []string{"image", "mounts./data", "env.FORGE_TOKEN"}},
			Push: []api.Entry{
				{Position: 28, Type: events.TypeDeclarationComposed, Summary: "composed novox/4"},
				{Position: 29, Type: events.TypeDeclarationPushed, Summary: "pushed novox/4"},
				{Position: 30, Type: events.TypeApplyReported, Summary: "left out: an apply"},
				{Position: 31, Type: events.TypeReportDeliveredLate, Summary: "left out: late"},
			},
			Deploy: []api.Entry{
				{Position: 25, Type: events.TypeArtifactRecorded, Summary: "recorded forge/web sha256:aa", Actor: "operator:ana", At: at(50 * time.Minute)},
				{Position: 26, Type: events.TypeModuleDeployed, Summary: "deployed forge", Actor: "operator:ana", At: at(51 * time.Minute)},
			},
			Changes: []api.Change{
				{Field: "image", From: "forge@sha256:01", To: "forge@sha256:aa"},
				{Field: "mounts./data", From: "/var/lib/forge", To: "/srv/forge"},
				{Field: "env.FORGE_TOKEN", From: "", To: "sha256:5e884898da28"},
			},
			Commands: []api.Entry{
				{Position: 24, Type: events.TypeModuleDefined, Summary: "module forge defined: 1 container(s), 1 routed name(s)", Actor: "operator:ana", At: at(49 * time.Minute)},
				{Position: 26, Type: events.TypeModuleDeployed, Summary: "deployed forge", Actor: "operator:ana", At: at(51 * time.Minute)},
			},
		},
		{Touch: api.Touch{Entry: api.Entry{Position: 40, At: at(2 * time.Hour), Node: "novox", Declaration: "novox/5"}, Action: "held", Reason: "module forge is not taken"}},
		{Touch: api.Touch{Entry: api.Entry{Position: 41, At: at(2*time.Hour + 30*time.Second), Node: "novox", Declaration: "novox/5"}, Action: "held", Reason: "module forge is not taken"}},
		{Touch: api.Touch{Entry: api.Entry{Position: 42, At: at(2*time.Hour + 50*time.Second), Node: "novox", Declaration: "novox/5"}, Action: "held", Reason: "module forge is not taken"}},
		{Touch: api.Touch{Entry: api.Entry{Position: 50, At: at(3 * time.Hour), Node: "novox"}, Action: "removed"}},
	},
}

var composed = api.ComposedDecl{
	Declaration: "novox/7", Digest: "sha256:fedcba9876543210fedc", Position: 70, At: at(time.Hour), Correlation: "c-7",
	Roster:    []string{"forge.mesh", "photos.mesh"},
	Resources: []events.ResourceRef{{Name: "forge-web", Kind: "container", Module: "forge", Digest: "sha256:01"}},
}

// meshDiff is a diff over an hour of the mesh: a module redefined, built
// and deployed, a node joining, another whose declaration and health moved.
var meshDiff = api.MeshDiff{
	From: api.DiffEnd{Position: 40, At: at(0)}, To: api.DiffEnd{Position: 90, At: at(time.Hour)}, Events: 50,
	Modules: []api.ModuleDiff{{
		Module: "forge",
		Definitions: []api.Definition{
			{DiffMark: api.DiffMark{Position: 41, At: at(time.Minute), Actor: "operator:jo"}, Fields: []string{"containers[web].env", "containers[web].image"}},
		},
		Builds:  []api.BuildMark{{DiffMark: api.DiffMark{Position: 42, At: at(2 * time.Minute), Actor: "operator:ci"}, Name: "forge/web", Digest: "sha256:3ccce11a2a888784e88e86"}},
		Deploys: []api.DeployMark{{DiffMark: api.DiffMark{Position: 43, At: at(3 * time.Minute), Actor: "operator:jo"}, By: "operator", Builds: []events.Build{{Name: "forge/web", Digest: "sha256:3ccce11a2a888784e88e86"}}}},
	}, {
		Module: "photos", Definitions: []api.Definition{{DiffMark: api.DiffMark{Position: 44, At: at(4 * time.Minute), Actor: "operator:jo"}, New: true}},
	}},
	Nodes: []api.NodeDiff{{
		Node: "d1", Registered: &api.DiffMark{Position: 45, At: at(5 * time.Minute), Actor: "operator:jo"}, Adopted: &api.DiffMark{Position: 46, At: at(5 * time.Minute), Actor: "operator:jo"},
		Modules:        []api.ModuleEvent{{DiffMark: api.DiffMark{Position: 47, At: at(6 * time.Minute), Actor: "operator:jo"}, Type: "module.assigned", Module: "photos"}},
		Sync:           &api.ValueChange{To: "in-sync"},
		Health:         &api.ValueChange{To: "waiting-on-take"},
		Composed:       1,
		Declaration:    &api.ValueChange{To: "d1/1"},
		RosterAdded:    []string{"photos.mesh"},
		ResourcesAdded: []events.ResourceRef{{Name: "photos-web", Kind: "container", Module: "photos", Digest: "sha256:aa"}},
		HoldsAppeared:  []api.Hold{{Name: "photos-web", Module: "photos", Reason: "module photos is not taken"}},
	}, {
		Node: "novox", Composed: 3,
		Health:           &api.ValueChange{From: "converged", To: "churning"},
		Declaration:      &api.ValueChange{From: "novox/3", To: "novox/6"},
		RosterAdded:      []string{"photos.mesh"},
		RosterRemoved:    []string{"old.mesh"},
		ResourcesRemoved: []events.ResourceRef{{Name: "old-web", Kind: "container", Module: "old", Digest: "sha256:bb"}},
		ResourcesChanged: []api.ResourceChange{{Name: "forge-web", Kind: "container", Module: "forge", From: "sha256:0123456789abcdef0123", To: "sha256:fedcba9876543210fedc",
			Changes: []api.Change{{Field: "image", From: "forge@sha256:0123", To: "forge@sha256:3ccc"}, {Field: "env.GREETING", From: "hello", To: "bonjour"}}}},
		HoldsCleared: []api.Hold{{Name: "forge-data", Module: "forge", Reason: "module forge is not taken"}},
		ChurnOpened:  []api.Episode{{Node: "novox", Loop: true, Start: api.Mark{Position: 60, At: at(20 * time.Minute)}, Detected: api.Mark{Position: 70, At: at(30 * time.Minute)}}},
		ChurnClosed:  []api.Episode{{Node: "novox", Flip: true, End: &api.Mark{Position: 50, At: at(10 * time.Minute)}}},
	}},
}

var rosterDiff = api.RosterDiff{From: "novox/3", To: "novox/7", Added: []string{"photos.mesh"}, ResourcesChanged: []string{"forge-web", "hosts"}}

var history = api.RosterHistory{Node: "novox", Declarations: []api.RosterHistoryEntry{
	{ComposedDecl: api.ComposedDecl{Declaration: "novox/1", Digest: "sha256:1111111111111111111111", Position: 3, At: at(0), Roster: []string{"forge.mesh"}}},
	{ComposedDecl: composed, Changed: &rosterDiff},
	{ComposedDecl: api.ComposedDecl{Declaration: "novox/8", Digest: "short", Position: 80, At: at(2 * time.Hour)}, Changed: &api.RosterDiff{From: "novox/7", To: "novox/8"}},
	{ComposedDecl: api.ComposedDecl{Declaration: "novox/9", Digest: "sha256:99", Position: 90, At: at(3 * time.Hour)}, Changed: &api.RosterDiff{Removed: []string{"forge.mesh"}, ResourcesRemoved: []string{"forge-web"}}},
}}

var plan = api.PlanResponse{
	After: []string{"deploy forge", "take route-proxy novox"},
	Heavy: true,
	Nodes: []api.NodePlan{
		{
			Preview: api.Preview{
				Node: "novox", Declaration: "novox/8", Hosts: "forge.mesh added",
				Steps: []api.PreviewStep{
					{Name: "forge-web", Kind: "container", Module: "forge", Action: "replace", Changes: []api.Change{{Field: "image", From: "sha256:aa", To: "sha256:bb"}, {Field: "mounts./data", To: "/srv/forge"}}},
					{Name: "route-proxy", Kind: "container", Module: "route-proxy", Action: "hold", Reason: "module route-proxy is not taken"},
					{Name: "/etc/forge", Kind: "directory", Action: "create"},
				},
				Unchanged: 1,
				Images: []api.ImageCheck{
					{Image: "127.0.0.1:5000/forge/web@sha256:bb", State: "pullable", Containers: []string{"forge-web"}},
					{Image: "127.0.0.1:5000/forge/cron@sha256:00", State: "unavailable", Detail: "manifest unknown", Containers: []string{"forge-cron", "forge-mail"}},
					{Image: "caddy:2", State: "present", Containers: []string{"route-proxy"}},
				},
				Outcome: events.ApplyReported{Node: "novox", Declaration: "novox/8", Sent: 4, Applied: 3, Created: []string{"/etc/forge"}, Replaced: []events.Replaced{{Name: "forge-web", Fields: []string{"image"}}}, Held: []events.Held{{Name: "route-proxy", Module: "route-proxy", Reason: "not taken"}}, Unchanged: 1},
			},
			Source: api.PlanByAgent, New: true, Heavy: true, Warnings: []string{"forge's build is older than its module"},
			Headline: "novox: HEAVY: would replace 1 and create 1 of 4 resources",
		},
		{
			Preview: api.Preview{Node: "d1", Declaration: "d1/2", Outcome: events.ApplyReported{Node: "d1", Declaration: "d1/2", Sent: 1, Unchanged: 1}, Unchanged: 1},
			Source:  api.PlanByDeclarations, NoAnswer: "no answer in 5s", Against: "d1/2", Unapplied: "d1/3", Headline: "d1: nothing to do",
		},
		{Preview: api.Preview{Node: "spare"}, Source: api.PlanNotComposed, ComposeError: "no module assigned", Headline: "spare: does not compose: no module assigned"},
	},
}

var churn = api.ChurnResponse{Nodes: []api.NodeChurn{
	{Node: "novox", Episodes: []api.Episode{{
		Node: "novox", Loop: true, Flip: true,
		Start: api.Mark{Position: 100, At: at(time.Hour)}, Detected: api.Mark{Position: 104, At: at(time.Hour + time.Minute)},
		Passes: 6, HeavyPasses: 4, Flips: 2,
		Evidence: api.Evidence{
			Declarations:  []api.DeclRef{{Declaration: "novox/10", Digest: "sha256:a", Position: 100}, {Declaration: "novox/11", Digest: "sha256:b", Position: 102}},
			Fields:        map[string]int{"image": 3},
			FailedReads:   []api.FailedRead{{Read: "module forge", Error: "timeout", Position: 101, Count: 2}},
			RosterChanged: []string{"photos.mesh"},
		},
	}}},
	{Node: "d1", Episodes: []api.Episode{{
		Node: "d1", Loop: true,
		Start: api.Mark{Position: 10, At: at(0)}, Detected: api.Mark{Position: 12, At: at(time.Minute)}, End: &api.Mark{Position: 15, At: at(5 * time.Minute)},
		Passes: 4, HeavyPasses: 2,
	}}},
	{Node: "calm"},
}}

var info = api.Info{Version: "v0.18.0", Role: "leader", Started: at(0), StoreHead: 420, ProjectionPosition: 419, Nodes: 3, Interval: "30s", Publishing: true, Chain: chainHead.String()}

var rebuilt = api.RebuildResult{
	Position: 420, Events: 420, Millis: 1532,
	Projections: []api.Compared{{Name: "roster", Same: true, OldBytes: 900, NewBytes: 900}, {Name: "timeline", OldBytes: 5000, NewBytes: 5120}},
}

// chainHead and chainAnchor are the chain printers' heads.
var (
	chainHead   = events.ChainHead{Position: 1240, Chain: events.Hash{0xab, 0xcd, 31: 0x01}, At: time.Date(2026, 12, 1, 23, 0, 0, 123456789, time.UTC)}
	chainAnchor = events.ChainHead{Position: 1234, Chain: events.Hash{0x12, 31: 0x34}, At: time.Date(2026, 12, 1, 22, 59, 0, 0, time.UTC)}
)

// replayed is a replay that diverges: a flip in the recorded run, a
// failed compose today.
var replayed = replay.Report{
	History: "incident.jsonl", Through: 84, At: at(25 * time.Minute), Events: 84, Passes: 4, Nodes: []string{"control", "novox"},
	Inputs:   replay.Inputs{Commands: 12, FailedReads: 1, Removed: 2, Unreplayed: []string{"read the node list"}},
	Recorded: replay.Totals{Composed: 5, ComposeFailed: 1, Applies: 8, Created: 3, Replaced: 6, ReplacingPasses: 2, Episodes: 1},
	Today:    replay.Totals{Composed: 3, ComposeFailed: 2, Applies: 8, Created: 3},
	Divergences: []replay.Divergence{
		{Pass: 2, At: at(10 * time.Minute), Position: 40, Node: "control", Kind: replay.KindDeclaration,
			Recorded: "composed control/2 sha256:a042c6cd070c (roster +searxng.zurag.be; 3 resource(s) changed)",
			Today:    "composed control/2 sha256:eec52b08132d (roster +searxng.zurag.be; 0 resource(s) changed)",
			Resources: []replay.ResourceDiff{
				{Name: "mesh-bus", Recorded: "sha256:01", Today: "sha256:02", Fields: []string{"extra_hosts", "mounts"}},
				{Name: "mesh-store", Recorded: "sha256:03", Today: "sha256:04", Fields: []string{"extra_hosts", "mounts"}},
				{Name: "web", Recorded: "sha256:05"},
			}},
		{Pass: 2, At: at(10 * time.Minute), Position: 40, Node: "novox", Kind: replay.KindDeclaration,
			Recorded: "composed novox/2 sha256:9ebc4ace0b5c (1 resource(s) changed)", Today: "composed novox/2 sha256:7b5df3e15c7c (1 resource(s) changed)"},
		{Pass: 3, At: at(16 * time.Minute), Position: 54, Node: "control", Kind: replay.KindCompose,
			Recorded: "composed control/3 sha256:a946f9a95744 (roster -searxng.zurag.be; 3 resource(s) changed)", Today: "compose failed: read node novox"},
		{Pass: 3, At: at(16 * time.Minute), Position: 54, Node: "control", Kind: replay.KindApply,
			Recorded: "control/3: applied 3 resource(s)", Today: "control/2: applied 3 resource(s)",
			Resources: []replay.ResourceDiff{
				{Name: "mesh-bus", Recorded: "replaced", Fields: []string{"extra_hosts"}},
				{Name: "mesh-store", Recorded: "replaced", Fields: []string{"extra_hosts"}},
				{Name: "web", Recorded: "replaced", Fields: []string{"extra_hosts"}},
				{Name: "www", Recorded: "replaced", Fields: []string{"extra_hosts"}},
			}},
		{Pass: 3, At: at(16 * time.Minute), Position: 54, Node: "control", Kind: replay.KindChurn,
			Recorded: "churn loop and flip from pass 3, detected at pass 4, still open (2 heavy pass(es), 1 flip(s))", Today: "no churn episode"},
		{Pass: 4, At: at(20 * time.Minute), Position: 70, Node: "novox", Kind: replay.KindHolds, Recorded: "1 held", Today: "0 held",
			Resources: []replay.ResourceDiff{{Name: "/srv/photos", Recorded: "held: photos: module photos is not taken"}}},
	},
	ChurnRecorded: []replay.Episode{{Node: "control", Loop: true, Flip: true, Start: 3, Detected: 4, HeavyPasses: 2, Flips: 1}},
	ChurnToday:    []replay.Episode{},
}

// replayAgree is a replay that finds nothing.
var replayAgree = replay.Report{
	History: "mine.jsonl", Through: 120, At: at(time.Hour), Events: 120, Passes: 12, Nodes: []string{"n1", "n2"}, Agree: true,
	Inputs:   replay.Inputs{Commands: 9, Builds: 1, Cuts: 1},
	Recorded: replay.Totals{Composed: 4, Applies: 24, Created: 8}, Today: replay.Totals{Composed: 4, Applies: 24, Created: 8},
	Divergences: []replay.Divergence{}, ChurnRecorded: []replay.Episode{}, ChurnToday: []replay.Episode{},
}

// TestPrinters: every printer, in each of its forms, against its golden
// file in testdata (go test ./render -update rewrites them). A golden file
// holds what the printer wrote and then, after "--- error:", the error it
// returned, if any; the error is ErrPartial exactly when the answer
// skipped events that did not decode.
func TestPrinters(t *testing.T) {
	partialRebuild := rebuilt
	partialRebuild.Skipped = skipped
	resumedRebuild := rebuilt
	resumedRebuild.Projections = []api.Compared{{Name: "roster", Same: true, OldBytes: 410, NewBytes: 410, Kept: true}, {Name: "timeline", Same: true, OldBytes: 1200, NewBytes: 1200, Kept: true}}
	for _, c := range []struct {
		name    string
		print   func(w *bytes.Buffer) error
		partial bool
	}{
		{"status", func(w *bytes.Buffer) error {
			return render.Status(w, render.Table, api.StatusResponse{Nodes: []api.NodeStatus{converged, waiting, failing}})
		}, false},
		{"status-compose-failed", func(w *bytes.Buffer) error {
			return render.Status(w, render.Table, api.StatusResponse{Nodes: []api.NodeStatus{converged, composeFailing}})
		}, false},
		{"node-show-compose-failed", func(w *bytes.Buffer) error {
			return render.NodeShow(w, render.Table, api.NodeShow{Status: composeFailing}, api.Skipped{})
		}, false},
		{"status-skipped", func(w *bytes.Buffer) error {
			return render.Status(w, render.Table, api.StatusResponse{Nodes: []api.NodeStatus{converged}, Skipped: skipped})
		}, true},
		{"status-unknown-only", func(w *bytes.Buffer) error {
			return render.Status(w, render.Table, api.StatusResponse{Nodes: []api.NodeStatus{converged}, Skipped: api.Skipped{UnknownTypes: map[string]int{"node.renamed": 1}}})
		}, false},
		{"status-skipped-no-first", func(w *bytes.Buffer) error {
			return render.Status(w, render.Table, api.StatusResponse{Skipped: api.Skipped{FailuresTotal: 3}})
		}, true},
		{"status-json", func(w *bytes.Buffer) error {
			return render.Status(w, render.JSON, api.StatusResponse{Nodes: []api.NodeStatus{converged, waiting}, Skipped: skipped})
		}, true},
		{"status-as-of", func(w *bytes.Buffer) error { // mesh status --at: the header, then the answer
			r := api.StatusResponse{Nodes: []api.NodeStatus{converged}, AsOf: &api.Moment{Position: 1234, Time: at(3 * time.Minute)}}
			return errors.Join(render.AsOfAnswer(w, render.Table, r), render.Status(w, render.Table, r))
		}, false},
		{"status-as-of-json", func(w *bytes.Buffer) error {
			r := api.StatusResponse{Nodes: []api.NodeStatus{converged}, AsOf: &api.Moment{Position: 1234, Time: at(3 * time.Minute)}}
			return errors.Join(render.AsOfAnswer(w, render.JSON, r), render.Status(w, render.JSON, r))
		}, false},
		{"status-liveness", func(w *bytes.Buffer) error {
			return render.Status(w, render.Table, api.StatusResponse{Nodes: []api.NodeStatus{heard, silent}})
		}, false},
		{"node-show-liveness", func(w *bytes.Buffer) error {
			h := heard
			h.AgentVersion = "v0.21.0"
			return render.NodeShow(w, render.Table, api.NodeShow{Status: h}, api.Skipped{})
		}, false},
		{"node-show", func(w *bytes.Buffer) error {
			return render.NodeShow(w, render.Table, api.NodeShow{Status: waiting, Holds: []api.Hold{{Name: "route-proxy", Module: "route-proxy", Reason: "module route-proxy is not taken"}}}, api.Skipped{})
		}, false},
		{"node-show-converged", func(w *bytes.Buffer) error {
			return render.NodeShow(w, render.Table, api.NodeShow{Status: converged}, skipped)
		}, true},
		{"node-show-json", func(w *bytes.Buffer) error {
			return render.NodeShow(w, render.JSON, api.NodeShow{Status: converged, Holds: []api.Hold{}}, api.Skipped{})
		}, false},
		{"timeline", func(w *bytes.Buffer) error { return render.Timeline(w, render.Table, timeline, api.Skipped{}) }, false},
		{"timeline-skipped", func(w *bytes.Buffer) error { return render.Timeline(w, render.Table, timeline[:2], skipped) }, true},
		{"timeline-empty", func(w *bytes.Buffer) error { return render.Timeline(w, render.Table, nil, api.Skipped{}) }, false},
		// A hostile node's report: what it named and said is escaped, in
		// the table and in JSON, and forges no line.
		{"timeline-hostile", func(w *bytes.Buffer) error {
			return render.Timeline(w, render.Table, hostileTimeline, api.Skipped{})
		}, false},
		{"timeline-hostile-json", func(w *bytes.Buffer) error {
			return render.Timeline(w, render.JSON, hostileTimeline, api.Skipped{})
		}, false},
		{"status-hostile", func(w *bytes.Buffer) error {
			return render.Status(w, render.Table, api.StatusResponse{Nodes: []api.NodeStatus{hostileStatus}})
		}, false},
		{"timeline-json", func(w *bytes.Buffer) error { return render.Timeline(w, render.JSON, timeline[2:6], api.Skipped{}) }, false},
		{"why", func(w *bytes.Buffer) error { return render.Why(w, render.Table, why, api.Skipped{}) }, false},
		{"why-none", func(w *bytes.Buffer) error {
			return render.Why(w, render.Table, api.WhyResponse{Node: "novox", Resource: "ghost"}, skipped)
		}, true},
		{"why-json", func(w *bytes.Buffer) error { return render.Why(w, render.JSON, why, api.Skipped{}) }, false},
		{"roster", func(w *bytes.Buffer) error { return render.Roster(w, render.Table, "novox", composed, api.Skipped{}) }, false},
		{"roster-json", func(w *bytes.Buffer) error { return render.Roster(w, render.JSON, "novox", composed, skipped) }, true},
		{"roster-history", func(w *bytes.Buffer) error { return render.RosterHistory(w, render.Table, history, api.Skipped{}) }, false},
		{"roster-history-json", func(w *bytes.Buffer) error { return render.RosterHistory(w, render.JSON, history, api.Skipped{}) }, false},
		{"roster-diff", func(w *bytes.Buffer) error {
			return render.RosterDiff(w, render.Table, "novox", rosterDiff, api.Skipped{})
		}, false},
		{"roster-diff-json", func(w *bytes.Buffer) error {
			return render.RosterDiff(w, render.JSON, "novox", rosterDiff, api.Skipped{})
		}, false},
		{"diff", func(w *bytes.Buffer) error { return render.Diff(w, render.Table, meshDiff, api.Skipped{}) }, false},
		{"diff-none", func(w *bytes.Buffer) error {
			return render.Diff(w, render.Table, api.MeshDiff{From: api.DiffEnd{Position: 90, At: at(time.Hour)}, To: api.DiffEnd{Position: 90, At: at(time.Hour)}}, skipped)
		}, true},
		{"diff-json", func(w *bytes.Buffer) error { return render.Diff(w, render.JSON, meshDiff, api.Skipped{}) }, false},
		{"plan", func(w *bytes.Buffer) error { return render.Plan(w, render.Table, plan) }, false},
		{"plan-one-heavy", func(w *bytes.Buffer) error {
			return render.Plan(w, render.Table, api.PlanResponse{Nodes: plan.Nodes[:1], Heavy: true})
		}, false},
		{"plan-json", func(w *bytes.Buffer) error { return render.Plan(w, render.JSON, plan) }, false},
		{"churn", func(w *bytes.Buffer) error { return render.Churn(w, render.Table, churn, api.Skipped{}) }, false},
		{"churn-none", func(w *bytes.Buffer) error {
			return render.Churn(w, render.Table, api.ChurnResponse{Nodes: []api.NodeChurn{{Node: "calm"}}}, skipped)
		}, true},
		{"churn-json", func(w *bytes.Buffer) error { return render.Churn(w, render.JSON, churn, api.Skipped{}) }, false},
		{"info", func(w *bytes.Buffer) error { return render.Info(w, render.Table, info) }, false},
		{"info-local", func(w *bytes.Buffer) error {
			return render.Info(w, render.Table, api.Info{Version: "dev", Role: "local", StoreHead: 7, ProjectionPosition: 7, Nodes: 1})
		}, false},
		{"info-json", func(w *bytes.Buffer) error { return render.Info(w, render.JSON, info) }, false},
		{"push", func(w *bytes.Buffer) error {
			return render.Push(w, render.Table, api.PushResponse{Pushes: []api.PushResult{
				{Node: "novox", Declaration: "novox/8", Digest: "sha256:0123456789abcdef0123"},
				{Node: "d1", Error: "nats: no responders"},
				{Node: "spare", Declaration: "spare/1", Digest: "sha256:01"},
			}})
		}, false},
		{"push-json", func(w *bytes.Buffer) error {
			return render.Push(w, render.JSON, api.PushResponse{Pushes: []api.PushResult{{Node: "d1", Error: "nats: no responders"}}})
		}, false},
		{"command-result", func(w *bytes.Buffer) error {
			render.CommandResult(w, api.CommandResult{Results: []api.Appended{
				{Stream: "node-novox", Events: []api.EventRef{{ID: "e1", Stream: "node-novox", Position: 9, Type: "node.registered"}, {ID: "e2", Stream: "node-novox", Position: 10, Type: "node.setting-set"}}},
				{Stream: "node-d1"},
			}}, []commands.Command{commands.RegisterNode{Node: "novox"}, commands.RegisterNode{Node: "d1"}})
			return nil
		}, false},
		{"reverted", func(w *bytes.Buffer) error {
			r := api.RevertResult{
				Module: "forge", To: "41", Position: 38, At: at(3 * time.Minute), SpecDigest: "sha256:0123456789abcdef0123",
				Builds: []events.Build{{Name: "forge/web", Digest: "sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0"}, {Name: "forge/worker", Digest: "sha256:5ac0"}},
				Events: []api.EventRef{{ID: "e1", Stream: "module-forge", Position: 90, Type: "module.defined"}, {ID: "e2", Stream: "module-forge", Position: 91, Type: "module.deployed"}},
			}
			render.Reverted(w, r)
			r.Events, r.To, r.Builds = []api.EventRef{}, "2026-11-30T10:04:00Z", nil
			render.Reverted(w, r)
			return nil
		}, false},
		{"token-list", func(w *bytes.Buffer) error {
			at := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
			return render.Tokens(w, api.TokenList{Tokens: []api.TokenInfo{
				{Name: "admin", ID: "0123456789abcdef", Created: at, By: "controller"},
				{Name: "alice", ID: "fedcba9876543210", Created: at.Add(time.Minute), By: "operator:root", ExpiresAt: at.Add(720 * time.Hour), Revoked: at.Add(time.Hour), RevokedBy: "operator:root"},
				{Name: "bob", ID: "00112233445566ff", Created: at.Add(2 * time.Minute), By: "operator:alice", ExpiresAt: at.Add(24 * time.Hour)},
			}})
		}, false},
		{"secret-list", func(w *bytes.Buffer) error {
			at := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
			if err := render.SecretList(w, render.Table, api.SecretList{}); err != nil {
				return err
			}
			return render.SecretList(w, render.Table, api.SecretList{Secrets: []api.SecretInfo{
				{Name: "forge-db", Digest: "hmac-sha256:" + strings.Repeat("ab", 32), Set: at, By: "operator:ana", Version: 2, Modules: []string{"forge"}},
				{Name: "spare", Digest: "hmac-sha256:" + strings.Repeat("cd", 32), Set: at.Add(time.Hour), By: "operator:root", Version: 1},
			}})
		}, false},
		{"join-token", func(w *bytes.Buffer) error {
			at := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
			tok := api.JoinToken{URL: "https://10.213.0.1:7480", Node: "n4", Secret: strings.Repeat("A", 43), CAFingerprint: strings.Repeat("ab", 32)}.String()
			render.JoinToken(w, w, api.JoinTokenResponse{Node: "n4", Token: tok, ExpiresAt: at.Add(15 * time.Minute)})
			return nil
		}, false},
		{"imported", func(w *bytes.Buffer) error {
			render.ImportBad(w, "mesh.jsonl", []string{"line 3: not JSON", "and 2 more line(s)"}, true)
			render.Imported(w, "mesh.jsonl", 40, 12, 3)
			return nil
		}, false},
		{"revoked", func(w *bytes.Buffer) error {
			render.Revoked(w, api.RevokeResponse{Node: "n4", Revoked: []string{"UABC", "UDEF"}, All: []string{"UABC", "UDEF"}})
			render.Revoked(w, api.RevokeResponse{Node: "n4", All: []string{"UABC", "UDEF"}})
			return nil
		}, false},
		{"chain-head", func(w *bytes.Buffer) error {
			render.ChainHead(w, chainHead)
			render.ChainHead(w, events.ChainHead{})
			return nil
		}, false},
		{"chain-verified", func(w *bytes.Buffer) error {
			render.ChainReport(w, events.ChainReport{Start: 1, Checked: 1240, Head: chainHead, Anchor: &chainAnchor, AnchorChecked: true})
			render.ChainReport(w, events.ChainReport{Start: 17, Checked: 1240, Head: chainHead})
			render.ChainReport(w, events.ChainReport{Checked: 3})
			return nil
		}, false},
		{"chain-broken", func(w *bytes.Buffer) error {
			render.ChainReport(w, events.ChainReport{Start: 1, Checked: 1233, Anchor: &chainAnchor, Break: &events.ChainBreak{
				Position: 1234, Reason: "the history ends at position 1233, and the anchor is at position 1234: positions 1234 to 1234 were removed (truncated)"}})
			return nil
		}, false},
		{"chain-anchor-differs", func(w *bytes.Buffer) error {
			head := chainAnchor
			head.Chain = events.Hash{0x77, 31: 0x01}
			render.ChainReport(w, events.ChainReport{Start: 1, Checked: 1234, Head: head, Anchor: &chainAnchor, Break: &events.ChainBreak{
				Position: 1234, Reason: "the chain value here is " + head.Chain.String() + ", the anchor says " + chainAnchor.Chain.String()}})
			return nil
		}, false},
		{"migrated", func(w *bytes.Buffer) error {
			render.Migrated(w, []int{3, 4}, 4)
			render.Migrated(w, nil, 4)
			return nil
		}, false},
		{"joined", func(w *bytes.Buffer) error {
			render.Joined(w, "/var/lib/mesh-agent", "n4", "/var/lib/mesh-agent/node.creds", false)
			render.Joined(w, "/var/lib/mesh-agent", "n4", "/var/lib/mesh-agent/node.creds", true)
			return nil
		}, false},
		{"artifact-pushed", func(w *bytes.Buffer) error {
			render.ArtifactPushed(w, "web.tar", "10.0.0.2:5000", "forge/web", "sha256:ab")
			return nil
		}, false},
		{"replay", func(w *bytes.Buffer) error { return render.Replay(w, render.Table, &replayed) }, false},
		{"replay-agree", func(w *bytes.Buffer) error { return render.Replay(w, render.Table, &replayAgree) }, false},
		{"replay-json", func(w *bytes.Buffer) error { return render.Replay(w, render.JSON, &replayed) }, false},
		{"node-list", func(w *bytes.Buffer) error { return render.NodeList(w, render.Table, nodeList) }, false},
		{"node-list-json", func(w *bytes.Buffer) error { return render.NodeList(w, render.JSON, nodeList) }, false},
		{"node-list-none", func(w *bytes.Buffer) error { return render.NodeList(w, render.Table, api.NodeList{}) }, false},
		{"module-list", func(w *bytes.Buffer) error { return render.ModuleList(w, render.Table, moduleList) }, false},
		{"module-list-json", func(w *bytes.Buffer) error { return render.ModuleList(w, render.JSON, moduleList) }, false},
		{"module-list-none", func(w *bytes.Buffer) error { return render.ModuleList(w, render.Table, api.ModuleList{}) }, false},
		{"module-show", func(w *bytes.Buffer) error { return render.ModuleShow(w, render.Table, moduleShow) }, false},
		{"module-show-bare", func(w *bytes.Buffer) error {
			return render.ModuleShow(w, render.Table, api.ModuleShow{Module: "bare", Upgrade: events.UpgradeManual, Spec: events.ModuleSpec{Containers: []events.ContainerSpec{{Name: "web", Image: "nginx:1"}}}})
		}, false},
		{"module-show-json", func(w *bytes.Buffer) error { return render.ModuleShow(w, render.JSON, moduleShow) }, false},
		{"version", func(w *bytes.Buffer) error {
			return render.Version(w, render.Table, render.VersionInfo{Mesh: "0.20.0", Go: "go1.26.0 linux/amd64", Controller: "0.19.3"})
		}, false},
		{"version-json", func(w *bytes.Buffer) error {
			return render.Version(w, render.JSON, render.VersionInfo{Mesh: "0.20.0", Go: "go1.26.0 linux/amd64"})
		}, false},
		{"rebuild", func(w *bytes.Buffer) error { return render.Rebuild(w, nil, rebuilt) }, false},
		{"rebuild-resumed", func(w *bytes.Buffer) error { return render.Rebuild(w, nil, resumedRebuild) }, false},
		{"rebuild-some-skipped", func(w *bytes.Buffer) error { return render.Rebuild(w, []string{"roster", "timeline"}, partialRebuild) }, true},
		{"rebuild-local", func(w *bytes.Buffer) error {
			render.RebuildLocal(w, nil, 24, 1234567*time.Microsecond, 12664)
			render.SnapshotSaved(w, 24, "projections.snap", "timeline.db")
			return render.Noted(w, api.Skipped{})
		}, false},
		{"rebuild-local-some", func(w *bytes.Buffer) error {
			render.RebuildLocal(w, []string{"status"}, 24, 3*time.Millisecond, 100)
			return render.Noted(w, skipped)
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			err := c.print(&b)
			if got := errors.Is(err, render.ErrPartial); got != c.partial {
				t.Errorf("err %v: partial %v, want %v", err, got, c.partial)
			}
			if err != nil {
				fmt.Fprintf(&b, "--- error: %v\n", err)
			}
			golden(t, c.name, b.String())
		})
	}
}

// golden compares got with testdata/name.golden (rewritten under -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./render -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s:\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

// TestPartial: no error for an answer that skipped nothing that failed
// to decode (unknown types are kept and counted, not an error); else
// ErrPartial, its text the note, or, once the note is printed, a count.
func TestPartial(t *testing.T) {
	for _, c := range []struct {
		name    string
		sk      api.Skipped
		printed bool
		want    string // "" for no error
	}{
		{"nothing", api.Skipped{}, false, ""},
		{"unknown types only", api.Skipped{UnknownTypes: map[string]int{"a.b": 1}}, false, ""},
		{"failures, the note in the error", skipped, false, "skipped events of types this build does not know (kept in the store): mesh.split: 1, node.renamed: 2\n\n2 event(s) could not be folded; the first at position 17 (apply.reported): unexpected end of JSON input"},
		{"failures, the note printed", skipped, true, "2 event(s) could not be folded: the answer above leaves them out"},
		{"a count without a first", api.Skipped{FailuresTotal: 4}, false, "4 event(s) could not be folded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := render.Partial(c.sk, c.printed)
			if c.want == "" {
				if err != nil {
					t.Fatalf("err %v, want none", err)
				}
				return
			}
			if !errors.Is(err, render.ErrPartial) || err.Error() != c.want {
				t.Errorf("err %q (ErrPartial %v), want %q", err, errors.Is(err, render.ErrPartial), c.want)
			}
		})
	}
}

// TestHealth: a waiting node's held counts, in the order given; any other
// health as it is.
func TestHealth(t *testing.T) {
	held := []events.ModuleCount{{Module: "route-proxy", Count: 13}, {Module: "photos", Count: 3}}
	for _, c := range []struct {
		state string
		held  []events.ModuleCount
		want  string
	}{
		{"waiting-on-take", held, "waiting-on-take (route-proxy: 13, photos: 3)"},
		{"waiting-on-take", nil, "waiting-on-take"},
		{"failing", held, "failing"},
		{"converged", nil, "converged"},
	} {
		if got := render.Health(c.state, c.held); got != c.want {
			t.Errorf("Health(%q, %v) = %q, want %q", c.state, c.held, got, c.want)
		}
	}
}

// Every golden file is some case's: none is left behind by a renamed one.
func TestNoStrayGoldens(t *testing.T) {
	files, err := filepath.Glob("testdata/*.golden")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("render_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".golden")
		if !strings.Contains(string(src), `{"`+name+`", func`) {
			t.Errorf("%s is no case's golden file", f)
		}
	}
}
