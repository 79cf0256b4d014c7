package events

// Rule 7's heavy pass, in one place. The churn projection, the timeline,
// mesh plan and the simulator's summary all weigh an apply with Heavy, so a
// pass is heavy on every surface or on none.

// kindContainer is declaration.KindContainer: the kind of a container among
// a composed declaration's resources (ResourceRef.Kind).
const kindContainer = "container"

// PassContext is what Heavy weighs an apply against besides its report: the
// declaration it applied, and the node's history.
type PassContext struct {
	// Resources is how many resources the declaration has. It stands in
	// for the report's Sent when that is 0 (a report written by hand).
	Resources int
	// Containers is how many of them are containers.
	Containers int
	// ContainerNames holds every name the node's declarations composed as a
	// container: this declaration's, and earlier ones' (a container the
	// apply removed is in none but an earlier one).
	ContainerNames map[string]bool
	// FailedBefore holds the containers the node's apply before this one
	// failed: creating one now is a retry, not churn.
	FailedBefore map[string]bool
}

// Heavy reports whether r is a heavy pass (docs/design.md rule 7, seed 000):
// Weigh(r, c).Heavy().
func Heavy(r *ApplyReported, c PassContext) bool { return Weigh(r, c).Heavy() }

// Weight is an apply as rule 7 measures it (Weigh).
type Weight struct {
	// Resources is the declaration's size (the report's Sent, or the
	// context's Resources when it does not say); Changed, how many
	// resources the apply created, replaced or removed.
	Resources, Changed int
	// Containers is how many of the declaration's resources are
	// containers; ContainersChanged, how many containers the apply
	// created (a retry not counted), replaced or removed.
	Containers, ContainersChanged int
}

// Heavy reports whether the apply is a heavy pass (docs/design.md rule 7, seed
// 000):
//
//   - it created, replaced or removed at least half of its declaration's
//     resources (a declaration of no resources is never heavy); or
//   - it created, replaced or removed at least half of its declaration's
//     containers, a container it created after the node's apply before it
//     failed that container not counted (a retry).
//
// The second clause is seed 000's loop as it reads once rule 4 holds: every
// container of the node replaced each pass, its directories and files
// untouched. On a node of 110 containers among 330 resources that is a third
// of the resources, and by resources alone it was never heavy (issue 12's
// simulator found it). The retry exception is mesh up's first apply on a
// Docker node, which finds no image yet: the next creates the container, and
// that is no loop.
func (w Weight) Heavy() bool { return w.ByResources() || w.ByContainers() }

// ByResources reports whether the first clause of Heavy holds: at least
// half of the declaration's resources changed.
func (w Weight) ByResources() bool { return w.Resources > 0 && 2*w.Changed >= w.Resources }

// ByContainers reports whether the second clause of Heavy holds: at least
// half of the declaration's containers changed, retries aside.
func (w Weight) ByContainers() bool { return w.Containers > 0 && 2*w.ContainersChanged >= w.Containers }

// Weigh measures r, an apply of a declaration c describes, by rule 7.
func Weigh(r *ApplyReported, c PassContext) Weight {
	w := Weight{Resources: r.Sent, Changed: r.Changes(), Containers: c.Containers}
	if w.Resources == 0 {
		w.Resources = c.Resources
	}
	if w.Containers == 0 {
		return w
	}
	for _, name := range r.Created {
		if c.ContainerNames[name] && !c.FailedBefore[name] {
			w.ContainersChanged++
		}
	}
	for _, x := range r.Replaced {
		if c.ContainerNames[x.Name] {
			w.ContainersChanged++
		}
	}
	for _, name := range r.Removed {
		if c.ContainerNames[name] {
			w.ContainersChanged++
		}
	}
	return w
}

// PassHistory is what Heavy needs of one node's history, kept as its events
// are folded: every name its declarations composed as a container, and the
// containers its last apply failed. The zero value is an empty history. It
// is not safe for concurrent use.
type PassHistory struct {
	// Containers holds every name a declaration of the node composed as a
	// container.
	Containers map[string]bool
	// FailedLast holds the containers the node's last apply failed.
	FailedLast map[string]bool
}

// Composed notes a declaration composed for the node (its resources), and
// returns how many of them are containers.
func (h *PassHistory) Composed(resources []ResourceRef) int {
	n := 0
	for _, r := range resources {
		if r.Kind != kindContainer {
			continue
		}
		n++
		if !h.Containers[r.Name] {
			if h.Containers == nil {
				h.Containers = map[string]bool{}
			}
			h.Containers[r.Name] = true
		}
	}
	return n
}

// Applied weighs r, an apply of a declaration of resources resources,
// containers of them (Heavy), and keeps the containers r failed for the
// node's next apply.
func (h *PassHistory) Applied(r *ApplyReported, resources, containers int) bool {
	heavy := Heavy(r, PassContext{Resources: resources, Containers: containers, ContainerNames: h.Containers, FailedBefore: h.FailedLast})
	clear(h.FailedLast)
	for _, f := range r.Failed {
		if h.Containers[f.Name] {
			if h.FailedLast == nil {
				h.FailedLast = map[string]bool{}
			}
			h.FailedLast[f.Name] = true
		}
	}
	return heavy
}
