package wire

import "meshplane/events"

// Preview is a dry run's answer: what Apply would do with a declaration,
// decided by the same Diff against the same observation, with nothing
// carried out and nothing kept. Its JSON is a wire format (the bus's
// dry-run reply, `mesh plan -o json`): fields may be added, never renamed.
//
//	{"node": "novox", "declaration": "novox/4", "digest": "sha256:…",
//	 "hosts": "content differs",
//	 "steps": [{"name": "web", "kind": "container", "module": "forge", "action": "replace",
//	            "fields": ["mounts./var/lib/forge"],
//	            "changes": [{"field": "mounts./var/lib/forge", "from": "/var/lib/forge", "to": "/srv/forge"}],
//	            "reason": "changed: mounts./var/lib/forge"}],
//	 "unchanged": 3,
//	 "outcome": {… the apply.reported the apply would make, if nothing failed …}}
type Preview struct {
	Node        string `json:"node"`
	Declaration string `json:"declaration"`
	Digest      string `json:"digest,omitempty"`
	// Hosts is why the hosts file would be rewritten in place; "" when it
	// would not. It is the node's own and never counted.
	Hosts string `json:"hosts,omitempty"`
	// Steps are the plan's steps that are not Unchanged, in plan order
	// (declared resources, then removals).
	Steps     []PreviewStep `json:"steps,omitempty"`
	Unchanged int           `json:"unchanged"`
	// Outcome is the report the apply would make if no runtime call
	// failed: the same buildOutcome as Apply's, so a plan and the pass
	// after it compare resource by resource.
	Outcome events.ApplyReported `json:"outcome"`
	// Images are the images the creates and replaces need, each present
	// on the node, pullable or unavailable, asked of a runtime that pulls;
	// absent on one that does not (the simulated runtime).
	Images []ImageCheck `json:"images,omitempty"`
}

// PreviewStep is one step of a Preview.
type PreviewStep struct {
	Name    string   `json:"name"`
	Kind    string   `json:"kind"`
	Module  string   `json:"module,omitempty"`
	Action  string   `json:"action"` // create, replace, update, remove, hold, reject
	Fields  []string `json:"fields,omitempty"`
	Changes []Change `json:"changes,omitempty"`
	Reason  string   `json:"reason,omitempty"`
}

// Change is one changed field of a resource: "mounts./data",
// "/var/lib/forge" → "/srv/forge".
type Change struct {
	Field string `json:"field"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// The states of an ImageCheck.
const (
	ImagePresent     = "present"     // the engine holds it
	ImagePullable    = "pullable"    // its registry has it: an apply would pull it
	ImageUnavailable = "unavailable" // neither: an apply would fail the containers that need it
	ImageUnknown     = "unknown"     // the agent could not look (Detail says why)
)

// ImageCheck is what a dry run found of one image an apply would need. Its
// JSON is part of the Preview's wire format.
type ImageCheck struct {
	Image  string `json:"image"`
	State  string `json:"state"` // ImagePresent, ImagePullable, ImageUnavailable, ImageUnknown
	Detail string `json:"detail,omitempty"`
	// Containers are the containers whose create or replace needs it,
	// sorted.
	Containers []string `json:"containers"`
}

// MaxImageDetail bounds an ImageCheck's Detail.
const MaxImageDetail = 512
