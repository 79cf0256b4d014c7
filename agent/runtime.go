package agent

import (
	"context"
	"errors"

	"meshplane/declaration/nodeplan"
)

// Runtime errors. A Runtime wraps them with context ("simruntime: remove
// web: ..."); callers branch with errors.Is.
//
// "Does not exist" is a result, not an error, wherever a method's job is to
// look (ListContainers, Stat): Stat of a missing path returns
// PathInfo{Exists: false} and a nil error. ErrNotFound is only returned by a
// method that must act on something that is not there (RemoveContainer,
// Chmod, ReadFile). A failure to look is always an error.
var (
	// ErrRuntime means the runtime could not carry out a call: what it runs
	// on was unreachable or refused (a disk that refused a write), or an
	// injected fault fired (simruntime.FailNext). The state of the named
	// object is unknown.
	ErrRuntime = errors.New("runtime failure")

	// ErrNotFound means the container or path a call must act on does not
	// exist.
	ErrNotFound = errors.New("not found")

	// ErrExists means a container of that name, or something at that path,
	// already exists.
	ErrExists = errors.New("already exists")

	// ErrWrongKind means the path exists but is of the other kind: a file
	// where a directory is wanted, or a directory where a file is.
	ErrWrongKind = errors.New("exists as another kind")

	// ErrSymlink means a symbolic link is where the call would resolve a
	// path: at the path itself or at a directory above it. A runtime on a
	// real filesystem never follows one (a container that can write to a
	// mounted directory could otherwise point a declared file at
	// /etc/shadow) and never removes one: the link is left in place for the
	// operator, and the call changes nothing.
	ErrSymlink = errors.New("a symbolic link (never followed, left in place)")

	// ErrInvalid means the input was refused as malformed (nodeplan.ErrInvalid).
	ErrInvalid = nodeplan.ErrInvalid
)

// Runtime is the narrow part of a container runtime the agent uses. Today it
// is implemented by agent/simruntime (in memory), which passes the
// conformance suite in agent/runtimetest; a runtime over a real container
// engine is not written yet, and must pass the same suite.
//
// Every method honours ctx: a call made with a done context fails with an
// error wrapping ctx.Err() and changes nothing. Implementations are safe for
// concurrent use.
//
// Containers. A managed container carries, persisted with it (as labels, the
// way Docker would keep them), its module, its resource digest and its full
// spec as JSON; a later
// ListContainers returns exactly the spec it was created with. Containers the
// runtime holds that are not managed by the mesh are never listed and never
// touched.
//
// Paths are absolute and clean ("/var/lib/x", never "x" or "/var/lib/../x")
// and name the host filesystem as the agent sees it. Modes are permission
// bits (at most 07777) and are set exactly, whatever the process umask.
//
// A runtime on a real filesystem resolves every path without following a
// symbolic link, at the path or at any directory above it, even a link
// that points somewhere harmless: such a path is not a file or directory
// the agent can use. Stat reports it as nothing there (so the agent plans
// to make it, and that one resource fails), and Mkdir, Chmod, WriteFile
// and ReadFile fail with ErrSymlink, naming the link, and leave it where
// it is. Anything at a path that is neither a directory nor a regular file
// (a named pipe, a device) is not described by Stat either, and is never
// opened: Mkdir is ErrExists, the others ErrWrongKind. RunLinks in
// agent/runtimetest checks this.
type Runtime interface {
	// ListContainers returns every managed container, sorted by name.
	ListContainers(ctx context.Context) ([]Container, error)

	// CreateContainer creates and starts c in one call. A container of that
	// name, managed or not, is ErrExists.
	CreateContainer(ctx context.Context, c Container) error

	// RemoveContainer stops and removes the managed container name. A name no
	// managed container has is ErrNotFound.
	RemoveContainer(ctx context.Context, name string) error

	// StartContainer starts the managed container name, listed Stopped. A
	// name no managed container has is ErrNotFound; starting a running
	// container changes nothing.
	StartContainer(ctx context.Context, name string) error

	// Stat describes what is at p. Nothing there is PathInfo{Exists: false},
	// not an error.
	Stat(ctx context.Context, p string) (PathInfo, error)

	// Mkdir makes the directory p with mode, making missing parents with
	// mode 0755. Anything already at p is ErrExists.
	Mkdir(ctx context.Context, p string, mode uint32) error

	// Chmod sets the mode of the directory or file at p. Nothing at p is
	// ErrNotFound.
	Chmod(ctx context.Context, p string, mode uint32) error

	// WriteFile replaces the content of the file at p and sets its mode, in
	// place: an existing file keeps its inode, so a container that
	// bind-mounts it (the hosts file at /etc/hosts) reads the new content. A
	// file replaced by rename would stay old inside the container (rule 2).
	// A reader may see a partly written file while it runs. Missing parents
	// are made with mode 0755. A directory at p is ErrWrongKind.
	WriteFile(ctx context.Context, p string, content []byte, mode uint32) error

	// ReadFile returns the content of the file at p. Nothing at p is
	// ErrNotFound; a directory is ErrWrongKind.
	ReadFile(ctx context.Context, p string) ([]byte, error)
}

// Labels under which a runtime that persists metadata as key/value labels
// (Docker) keeps a managed container's module, digest and spec. A container
// is managed when it carries LabelManaged = "true"; a runtime shared by
// several nodes (one Docker engine) also keeps the node, and manages only
// its own node's containers, and the resource name, which the engine's
// container name may not be exactly.
const (
	LabelManaged  = "meshplane.managed"
	LabelModule   = "meshplane.module"
	LabelDigest   = "meshplane.digest"
	LabelSpec     = "meshplane.spec"
	LabelNode     = "meshplane.node"
	LabelResource = "meshplane.resource"
	// LabelRolloutOf is on the new container of a start-first roll-out
	// (LabelResource NAME.next): the resource it becomes once renamed to
	// it (Renamer), as labels cannot change.
	LabelRolloutOf = "meshplane.rollout-of"
)

// LabelData is the label `mesh up` puts on what it makes on an engine (the
// images it builds, and, through its agents, every container, network and
// volume) with its data directory's id, so that two data directories
// sharing an engine each list and clean up only their own.
const LabelData = "meshplane.data"
