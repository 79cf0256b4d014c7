package api

import "meshplane/events"

// NodeList is every registered node, sorted (GET /v1/nodes/list; mesh node
// list).
type NodeList struct {
	Nodes []NodeSummary `json:"nodes"`
	AsOf  *Moment       `json:"as_of,omitempty"` // the moment answered for (At); absent: now
}

// NodeSummary is one node of the list: whether it was adopted, the
// modules assigned to it, and its sync and health as status says them.
type NodeSummary struct {
	Node    string   `json:"node"`
	Adopted bool     `json:"adopted"`
	Modules []string `json:"modules"` // assigned, sorted
	Sync    string   `json:"sync"`
	Health  string   `json:"health"`
}

// ModuleList is every defined module, sorted (GET /v1/modules; mesh module
// list).
type ModuleList struct {
	Modules []ModuleSummary `json:"modules"`
	AsOf    *Moment         `json:"as_of,omitempty"` // the moment answered for (At); absent: now
}

// ModuleSummary is one module of the list.
type ModuleSummary struct {
	Module     string   `json:"module"`
	Nodes      []string `json:"nodes"` // assigned to, sorted
	Containers int      `json:"containers"`
	Routes     []string `json:"routes"`
	Upgrade    string   `json:"upgrade"` // events.UpgradeManual or events.UpgradeRollOut
	Builds     int      `json:"builds"`  // recorded
}

// ModuleShow is one module: its definition now, the nodes it is assigned
// to, and every build recorded, with which compose runs (GET
// /v1/modules/{module}; mesh module show).
type ModuleShow struct {
	Module  string            `json:"module"`
	Spec    events.ModuleSpec `json:"spec"`
	Upgrade string            `json:"upgrade"`
	Nodes   []ModuleNode      `json:"nodes"`
	Builds  []BuildView       `json:"builds"`          // in the order first recorded
	AsOf    *Moment           `json:"as_of,omitempty"` // the moment answered for (At); absent: now
}

// ModuleNode is a node a module is assigned to.
type ModuleNode struct {
	Node  string `json:"node"`
	Taken bool   `json:"taken"`
}

// BuildView is one recorded build of a module's artifact: Latest when it
// is the artifact's latest recorded build, Deployed when compose runs it.
type BuildView struct {
	Name     string `json:"name"`
	Digest   string `json:"digest"`
	Latest   bool   `json:"latest"`
	Deployed bool   `json:"deployed"`
}

// RemoveModuleRequest removes a module; Release releases it from every
// node it is assigned to first, in the same request.
type RemoveModuleRequest struct {
	Operator string `json:"operator"`
	Module   string `json:"module"`
	Release  bool   `json:"release,omitempty"`
}

// RemoveNodeRequest removes a node, revoking its bus users; Drain releases
// every module assigned to it first, and pushes it the emptied declaration.
type RemoveNodeRequest struct {
	Operator string `json:"operator"`
	Node     string `json:"node"`
	Drain    bool   `json:"drain,omitempty"`
}
