package agent

import (
	"meshplane/declaration"
	"meshplane/declaration/nodeplan"
	"meshplane/wire"
)

// The node's wire types live in package wire and the pure plan in package
// nodeplan, so that the controller's side reads them without linking the
// agent. The agent spells them under the names it has always used.
type (
	Report      = wire.Report
	Preview     = wire.Preview
	PreviewStep = wire.PreviewStep
	Change      = wire.Change

	Action    = nodeplan.Action
	Observed  = nodeplan.Observed
	PathState = nodeplan.PathState
	State     = nodeplan.State
	Last      = nodeplan.Last
	Step      = nodeplan.Step
	HostsStep = nodeplan.HostsStep
	Plan      = nodeplan.Plan
	Container = nodeplan.Container
	PathInfo  = nodeplan.PathInfo

	FailedRollout = nodeplan.FailedRollout
)

// Actions (nodeplan.Action).
const (
	Unchanged = nodeplan.Unchanged
	Create    = nodeplan.Create
	Replace   = nodeplan.Replace
	Update    = nodeplan.Update
	Remove    = nodeplan.Remove
	Hold      = nodeplan.Hold
	Reject    = nodeplan.Reject
)

// Modes (nodeplan's).
const (
	DefaultDirMode  = nodeplan.DefaultDirMode
	DefaultFileMode = nodeplan.DefaultFileMode
	HostsMode       = nodeplan.HostsMode
	MaxMode         = nodeplan.MaxMode
)

// Diff is nodeplan.Diff.
func Diff(d declaration.Declaration, obs Observed, st State) Plan { return nodeplan.Diff(d, obs, st) }

// PreviewOf is nodeplan.PreviewOf.
func PreviewOf(node string, d declaration.Declaration, p Plan) Preview {
	return nodeplan.PreviewOf(node, d, p)
}

// ValidateContainerName is nodeplan.ValidateContainerName.
func ValidateContainerName(name string) error { return nodeplan.ValidateContainerName(name) }

// ValidateContainer is nodeplan.ValidateContainer.
func ValidateContainer(c Container) error { return nodeplan.ValidateContainer(c) }

// ValidatePath is nodeplan.ValidatePath.
func ValidatePath(p string) error { return nodeplan.ValidatePath(p) }

// ValidateMode is nodeplan.ValidateMode.
func ValidateMode(mode uint32) error { return nodeplan.ValidateMode(mode) }
