package api

import (
	"time"

	"meshplane/events"
)

// DiffRequest asks what changed in the mesh between two moments (mesh
// diff): From and To each a time in RFC 3339 or a store position, as
// ReadMoment reads them, a time standing for the last event at
// or before it; To empty is the store's head.
type DiffRequest struct {
	From string `json:"from"`
	To   string `json:"to,omitempty"`
}

// Validate checks the fields of a DiffRequest, as the door says: From
// given, both bounded (the diff reads them: ReadMoment).
func (r DiffRequest) Validate() error {
	if r.From == "" {
		return invalidField("from", "empty: a time (RFC 3339) or a store position")
	}
	if err := checkRef("from", r.From); err != nil {
		return err
	}
	return checkRef("to", r.To)
}

// MeshDiff is what changed in the mesh from one position to another: per
// node and per module, only those anything changed on, by name.
type MeshDiff struct {
	From    DiffEnd      `json:"from"`
	To      DiffEnd      `json:"to"`
	Events  int          `json:"events"` // events in (from, to]
	Nodes   []NodeDiff   `json:"nodes"`
	Modules []ModuleDiff `json:"modules"`
}

// DiffEnd is one end of a diff: the position it stands for (the last event
// at or before the moment asked) and that event's time.
type DiffEnd struct {
	Position uint64    `json:"position"`
	At       time.Time `json:"at,omitzero"`
}

// DiffMark is an event a diff names.
type DiffMark struct {
	Position uint64    `json:"position"`
	At       time.Time `json:"at"`
	Actor    string    `json:"actor,omitempty"`
}

// ValueChange is a value at the start and at the end ("" where the node
// was not known).
type ValueChange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// NodeDiff is what changed on one node.
type NodeDiff struct {
	Node       string    `json:"node"`
	Registered *DiffMark `json:"registered,omitempty"`
	Removed    *DiffMark `json:"removed,omitempty"`
	Adopted    *DiffMark `json:"adopted,omitempty"`
	// Modules are its module.assigned, module.taken and module.released,
	// in order.
	Modules     []ModuleEvent `json:"modules,omitempty"`
	Sync        *ValueChange  `json:"sync,omitempty"`
	Health      *ValueChange  `json:"health,omitempty"`
	Composed    int           `json:"composed,omitempty"`    // declarations composed in between
	Declaration *ValueChange  `json:"declaration,omitempty"` // its current declaration, when another
	// RosterAdded and RosterRemoved are routed names, sorted.
	RosterAdded      []string             `json:"roster_added,omitempty"`
	RosterRemoved    []string             `json:"roster_removed,omitempty"`
	ResourcesAdded   []events.ResourceRef `json:"resources_added,omitempty"`
	ResourcesRemoved []events.ResourceRef `json:"resources_removed,omitempty"`
	ResourcesChanged []ResourceChange     `json:"resources_changed,omitempty"`
	HoldsAppeared    []Hold               `json:"holds_appeared,omitempty"`
	HoldsCleared     []Hold               `json:"holds_cleared,omitempty"`
	// ChurnOpened: episodes detected in between; ChurnClosed: ended in
	// between.
	ChurnOpened []Episode `json:"churn_opened,omitempty"`
	ChurnClosed []Episode `json:"churn_closed,omitempty"`
}

// ModuleEvent is an assignment, a take or a release of a module on a node.
type ModuleEvent struct {
	DiffMark
	Type   string `json:"type"`
	Module string `json:"module"`
}

// ResourceChange is a resource declared at both ends with another spec:
// its two digests, and each field that differs (as why words them:
// agent.DeclaredChanges), when both specs are known.
type ResourceChange struct {
	Name    string   `json:"name"`
	Kind    string   `json:"kind"`
	Module  string   `json:"module"`
	From    string   `json:"from"`
	To      string   `json:"to"`
	Changes []Change `json:"changes,omitempty"`
}

// ModuleDiff is what changed of one module.
type ModuleDiff struct {
	Module      string       `json:"module"`
	Definitions []Definition `json:"definitions,omitempty"`
	Removed     *DiffMark    `json:"removed,omitempty"`
	Builds      []BuildMark  `json:"builds,omitempty"`
	Deploys     []DeployMark `json:"deploys,omitempty"`
}

// Definition is one module.defined: New (first defined, or again after a
// removal), or a redefinition with the spec's fields it changed
// ("containers[web].env").
type Definition struct {
	DiffMark
	New    bool     `json:"new,omitempty"`
	Fields []string `json:"fields,omitempty"`
}

// BuildMark is one artifact.recorded.
type BuildMark struct {
	DiffMark
	Name   string `json:"name"`
	Digest string `json:"digest"`
}

// DeployMark is one module.deployed.
type DeployMark struct {
	DiffMark
	By     string         `json:"by"`
	Builds []events.Build `json:"builds"`
}
