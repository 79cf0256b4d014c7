package declaration

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrRosterNotHeld means a declaration names a roster revision (and
// digest) that the roster it is filled from is not: the agent does not
// hold the roster the declaration was composed against (yet).
var ErrRosterNotHeld = errors.New("declaration: roster revision not held")

// ErrBadRoster means a roster value is not a roster: no revision, routes
// out of order, or a digest that is not that of its routes.
var ErrBadRoster = errors.New("declaration: bad roster")

// Roster is the mesh's roster at a revision, as it travels once for every
// node (the bus's shared roster value): its revision (the version of the
// controller's roster.changed), the digest of its routes (RosterDigest) and
// the routes, sorted by name, then node. A declaration composed against it
// names its Revision and Digest and travels without the routes (Fill puts
// them back). Its JSON is a wire format: fields may be added, never renamed.
type Roster struct {
	Revision uint64  `json:"revision"`
	Digest   string  `json:"digest"`
	Routes   []Route `json:"routes"`

	hosts string // HostsFile(Routes), made once by NewRoster; "" until then
}

// NewRoster is the roster of routes (sorted) at revision, with its digest
// and its hosts file made once, for every declaration it fills to share.
func NewRoster(revision uint64, routes []Route) Roster {
	return Roster{Revision: revision, Digest: RosterDigest(routes), Routes: routes, hosts: HostsFile(routes)}
}

// RosterDigest is "sha256:<hex>" of the JSON of routes (nil encodes as an
// empty list): the same bytes as events.RosterDigest of the same routes.
func RosterDigest(routes []Route) string {
	if routes == nil {
		routes = []Route{}
	}
	return Digest(routes)
}

// Hosts is the hosts file of r's routes (HostsFile), made once by
// NewRoster and shared by every declaration Fill fills from r.
func (r Roster) Hosts() string {
	if r.hosts != "" {
		return r.hosts
	}
	return HostsFile(r.Routes)
}

// Check says what is wrong with r as a roster value: revision 0, a route
// without a name or node, routes out of order (by name, then node) or
// twice, or a digest that is not that of its routes. Each wraps
// ErrBadRoster.
func (r Roster) Check() error {
	if r.Revision == 0 {
		return fmt.Errorf("%w: revision 0", ErrBadRoster)
	}
	for i, rt := range r.Routes {
		if rt.Name == "" || rt.Node == "" {
			return fmt.Errorf("%w: revision %d: route %d has no name or node", ErrBadRoster, r.Revision, i)
		}
		if i > 0 && compareRoutes(r.Routes[i-1], rt) >= 0 {
			return fmt.Errorf("%w: revision %d: route %d (%s on %s) is out of order or twice", ErrBadRoster, r.Revision, i, rt.Name, rt.Node)
		}
	}
	if got := RosterDigest(r.Routes); got != r.Digest {
		return fmt.Errorf("%w: revision %d: digest %s, its routes' is %s", ErrBadRoster, r.Revision, r.Digest, got)
	}
	return nil
}

func compareRoutes(a, b Route) int {
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return strings.Compare(a.Node, b.Node)
}

// HostsFile is the hosts file of a roster's routes (sorted): one line a
// routed name and its address, a comment for a name whose node has no
// private address yet. It is the one writer of the hosts file's text.
func HostsFile(routes []Route) string {
	const head = "# meshplane roster: every routed name in the mesh. Rewritten in place.\n"
	var b strings.Builder
	b.Grow(len(head) + 40*len(routes))
	b.WriteString(head)
	for _, r := range routes {
		if r.Address == "" {
			b.WriteString("# " + r.Name + ": served by " + r.Node + ", which has no private address yet\n")
			continue
		}
		b.WriteString(r.Address + "\t" + r.Name + "\n")
	}
	return b.String()
}

// NamesRoster says d was composed against a roster revision and travels
// without it (RosterRevision set, no roster nor hosts file): it must be
// filled (Fill) before it is applied. A declaration that carries its roster
// in full (an older controller's, or one composed with RosterRevision 0)
// does not.
func (d Declaration) NamesRoster() bool {
	return d.RosterRevision != 0 && d.Roster == nil && d.Hosts == ""
}

// Wire is d as it travels: without its roster and hosts file when it names
// the roster revision it was composed against (the roster travels once, as
// a Roster), as it is otherwise.
func (d Declaration) Wire() Declaration {
	if d.RosterRevision != 0 {
		d.Roster, d.Hosts = nil, ""
	}
	return d
}

// RosterOf is the roster d carries, at its revision (NewRoster), and
// whether it carries one to give: it names a revision and carries the
// routes. What the controller's bus puts once before the declarations that
// name it.
func (d Declaration) RosterOf() (Roster, bool) {
	if d.RosterRevision == 0 || d.NamesRoster() {
		return Roster{}, false
	}
	r := Roster{Revision: d.RosterRevision, Digest: d.RosterDigest, Routes: d.Roster, hosts: d.Hosts}
	if r.Digest == "" {
		r.Digest = RosterDigest(d.Roster)
	}
	if r.Routes == nil {
		r.Routes = []Route{}
	}
	return r, true
}

// Fill returns d with its roster and hosts file set from r, which must be
// the roster d names (the same revision and digest); the routes and hosts
// text are r's, shared, never copied. A declaration that carries its roster
// (NamesRoster false) is returned as it is. Any other roster wraps
// ErrRosterNotHeld, naming both revisions.
func (d Declaration) Fill(r Roster) (Declaration, error) {
	if !d.NamesRoster() {
		return d, nil
	}
	if r.Revision != d.RosterRevision || r.Digest != d.RosterDigest {
		held := "none"
		if r.Revision != 0 {
			held = fmt.Sprintf("revision %d (%s)", r.Revision, r.Digest)
		}
		return d, fmt.Errorf("declaration %s: composed against roster revision %d (%s), holding %s: %w",
			d.ID, d.RosterRevision, d.RosterDigest, held, ErrRosterNotHeld)
	}
	d.Roster, d.Hosts = r.Routes, r.Hosts()
	if d.Roster == nil {
		d.Roster = []Route{}
	}
	return d, nil
}

// SpecDigest is the digest a declaration carries (Digest): "sha256:<hex>"
// of the JSON of Adopted, Taken, Resources and RosterDigest, in that order.
// It covers the roster by its digest, never its bytes, so a compose hashes
// its node's own part, not the mesh's (no N² hashing a pass), and two
// declarations differ exactly when their resources or their roster do.
func (d *Declaration) SpecDigest() string {
	rd := d.RosterDigest
	if rd == "" {
		rd = RosterDigest(d.Roster)
	}
	b, err := json.Marshal(struct {
		Adopted      bool
		Taken        []string
		Resources    []Resource
		RosterDigest string
	}{d.Adopted, d.Taken, d.Resources, rd})
	if err != nil {
		panic("declaration: digest of an unencodable declaration: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
