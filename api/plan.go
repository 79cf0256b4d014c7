package api

// PlanRequest asks what the next push would do (mesh plan), appending
// nothing: on Nodes (every registered node when empty), as if the commands
// of After had run first, in order. Each is a mesh command line without
// "mesh": "deploy forge", "deploy forge --digest sha256:…", "assign
// route-proxy novox", "take route-proxy novox", "release route-proxy
// novox".
type PlanRequest struct {
	Nodes []string `json:"nodes,omitempty"`
	After []string `json:"after,omitempty"`
	// Files are the module files After's "module define FILE..." lines
	// name, by the path as written there, each as the caller read and
	// parsed it (the controller does not read the caller's files).
	Files map[string]ModuleDefinition `json:"files,omitempty"`
	// Reached, with no Nodes, plans only the nodes whose declaration the
	// After commands change (mesh module define --plan).
	Reached bool `json:"reached,omitempty"`
}

// PlanResponse is a plan per node, in node order. Heavy says at least one
// node's plan is heavy (mesh plan exits 4); a node whose declaration does
// not compose (NotComposed) makes mesh plan exit 5.
type PlanResponse struct {
	After []string   `json:"after,omitempty"`
	Nodes []NodePlan `json:"nodes"`
	Heavy bool       `json:"heavy"`
}

// NotComposed lists the nodes whose declaration does not compose
// (Source PlanNotComposed), in node order: the push would send them
// nothing, and they stay failing.
func (r PlanResponse) NotComposed() []string {
	var out []string
	for _, n := range r.Nodes {
		if n.Source == PlanNotComposed {
			out = append(out, n.Node)
		}
	}
	return out
}

// Where a node's plan was diffed (NodePlan.Source).
const (
	// PlanByAgent: the node's agent diffed the declaration against what it
	// observes, without applying (a dry run over the bus, or in process).
	PlanByAgent = "agent"
	// PlanByDeclarations: the node did not answer in time; the plan is the
	// declaration-to-declaration diff against the declaration its last
	// apply report applied (Against), which cannot know what the node
	// found or holds.
	PlanByDeclarations = "declarations"
	// PlanNotComposed: the node's declaration did not compose; the push
	// would send nothing.
	PlanNotComposed = "not-composed"
)

// NodePlan is what the next push would do on one node: the agent's
// Preview (its steps, with the changed fields and what they were and
// become; the report it would make), and where it was diffed. Its JSON
// field names are a public API.
type NodePlan struct {
	Preview
	// Source is PlanByAgent, PlanByDeclarations or PlanNotComposed.
	Source string `json:"source"`
	// NoAnswer is why the node's agent did not answer (Source
	// PlanByDeclarations).
	NoAnswer string `json:"no_answer,omitempty"`
	// Against is the declaration a PlanByDeclarations plan was diffed
	// against: the one the node's last apply report applied ("" when it
	// has reported none: the diff is against nothing).
	Against string `json:"against,omitempty"`
	// Unapplied is the declaration pushed to the node after Against and
	// not applied yet, by its reports ("" when the last push is applied).
	Unapplied string `json:"unapplied,omitempty"`
	// ComposeError is why the declaration did not compose (Source
	// PlanNotComposed).
	ComposeError string `json:"compose_error,omitempty"`
	// New says the push would compose a new declaration; false, it would
	// send the node's current one again.
	New      bool     `json:"new"`
	Warnings []string `json:"warnings,omitempty"`
	// Heavy: the plan creates, replaces or removes at least half of the
	// declaration's resources, or of its containers (docs/design.md rule 7,
	// events.Heavy); Headline says so first.
	Heavy bool `json:"heavy"`
	// Headline is the plan's first line.
	Headline string `json:"headline"`
}
