package events

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrRosterUnresolved means a declaration.composed names a roster
// revision that the roster's stream (RosterStream) does not hold, or
// holds as a change that does not follow from the revision before.
var ErrRosterUnresolved = errors.New("roster revision does not resolve")

// StreamReader reads one stream (Store.ReadStream).
type StreamReader interface {
	ReadStream(ctx context.Context, stream string, after uint64, limit int) ([]Event, error)
}

// Roster is the mesh's roster at a revision: its routes sorted by name,
// then node (CompareRoutes), and their digest (RosterDigest). The zero
// Roster is revision 0, empty.
type Roster struct {
	Revision uint64
	Digest   string
	Routes   []RosterRoute
}

// CompareRoutes orders routes by name, then by the node serving them.
func CompareRoutes(a, b RosterRoute) int {
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return strings.Compare(a.Node, b.Node)
}

// RosterDigest is "sha256:<hex>" of the JSON of routes (sorted): the same
// bytes as the JSON of the declaration.Route list they are.
func RosterDigest(routes []RosterRoute) string {
	if routes == nil {
		routes = []RosterRoute{}
	}
	b, err := json.Marshal(routes)
	if err != nil {
		panic("events: a roster does not encode: " + err.Error()) // strings only
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Names lists the routed names of r, once each, sorted: what a
// declaration.composed's roster gives.
func (r Roster) Names() []string {
	out := make([]string, 0, len(r.Routes))
	for _, rt := range r.Routes {
		if len(out) == 0 || out[len(out)-1] != rt.Name {
			out = append(out, rt.Name)
		}
	}
	return out
}

// Change is the roster.changed that makes r into the roster of routes
// (sorted by CompareRoutes), at the next revision; ok is false when routes
// are r's own (nothing to record).
func (r Roster) Change(routes []RosterRoute) (RosterChanged, bool) {
	digest := RosterDigest(routes)
	if r.Revision > 0 && digest == r.Digest || r.Revision == 0 && len(routes) == 0 {
		return RosterChanged{}, false
	}
	c := RosterChanged{Revision: r.Revision + 1, Digest: digest}
	i, j := 0, 0
	for i < len(r.Routes) || j < len(routes) {
		switch {
		case j == len(routes) || i < len(r.Routes) && CompareRoutes(r.Routes[i], routes[j]) < 0:
			c.Removed = append(c.Removed, r.Routes[i])
			i++
		case i == len(r.Routes) || CompareRoutes(r.Routes[i], routes[j]) > 0:
			c.Added = append(c.Added, routes[j])
			j++
		default:
			if r.Routes[i] != routes[j] { // the address changed
				c.Removed = append(c.Removed, r.Routes[i])
				c.Added = append(c.Added, routes[j])
			}
			i, j = i+1, j+1
		}
	}
	return c, true
}

// Apply folds c into r: the roster at c's revision. A change that is not
// r's next revision, removes a route r does not hold (or one route twice),
// adds one it holds (or one twice), or whose digest is not that of the
// result wraps ErrRosterUnresolved; r is not modified (its routes are
// shared). It is one merge of r's routes with c's, sorted: a change of
// every route of a large mesh costs what its routes do, not their square.
func (r Roster) Apply(c RosterChanged) (Roster, error) {
	if c.Revision != r.Revision+1 {
		return r, fmt.Errorf("events: roster revision %d after %d: %w", c.Revision, r.Revision, ErrRosterUnresolved)
	}
	removed := sortedRoutes(c.Removed)
	added := sortedRoutes(c.Added)
	kept := make([]RosterRoute, 0, len(r.Routes)-min(len(removed), len(r.Routes)))
	j := 0
	for _, rt := range r.Routes {
		if j < len(removed) && CompareRoutes(rt, removed[j]) == 0 {
			if rt != removed[j] {
				break // the route r holds under that name and node differs: refused below
			}
			j++
			continue
		}
		if j < len(removed) && CompareRoutes(rt, removed[j]) > 0 {
			break // removed[j] is not in r
		}
		kept = append(kept, rt)
	}
	if j < len(removed) {
		rm := removed[j]
		return r, fmt.Errorf("events: roster revision %d removes %s (%s), which revision %d does not route: %w", c.Revision, rm.Name, rm.Node, r.Revision, ErrRosterUnresolved)
	}
	routes := make([]RosterRoute, 0, len(kept)+len(added))
	i := 0
	for k, add := range added {
		for i < len(kept) && CompareRoutes(kept[i], add) < 0 {
			routes = append(routes, kept[i])
			i++
		}
		if i < len(kept) && CompareRoutes(kept[i], add) == 0 || k > 0 && CompareRoutes(added[k-1], add) == 0 {
			return r, fmt.Errorf("events: roster revision %d adds %s (%s), which it routes already: %w", c.Revision, add.Name, add.Node, ErrRosterUnresolved)
		}
		routes = append(routes, add)
	}
	routes = append(routes, kept[i:]...)
	out := Roster{Revision: c.Revision, Digest: RosterDigest(routes), Routes: routes}
	if c.Digest != "" && c.Digest != out.Digest {
		return r, fmt.Errorf("events: roster revision %d: its digest %s is not that of its routes (%s): %w", c.Revision, c.Digest, out.Digest, ErrRosterUnresolved)
	}
	return out, nil
}

// sortedRoutes is routes in CompareRoutes order: routes itself when it is
// (what Change makes), else a sorted copy.
func sortedRoutes(routes []RosterRoute) []RosterRoute {
	if slices.IsSortedFunc(routes, CompareRoutes) {
		return routes
	}
	out := slices.Clone(routes)
	slices.SortFunc(out, CompareRoutes)
	return out
}

// MaxRosterChange is the most routes, added and removed, one roster.changed
// carries. A route is at most about 200 bytes of JSON (two names of at most
// 63 bytes and an address), so a change stays well inside an event's
// MaxDataSize: a mesh of 10,000 nodes routing 20,000 names is ten events at
// its first compose, not one of 2 MB that no store takes.
const MaxRosterChange = 2048

// Changes is Change cut into roster.changed events of at most
// MaxRosterChange routes each, at consecutive revisions, each with the
// digest of the roster it leaves: folded in order they make r into the
// roster of routes. Removals come first. ok is false when routes are r's
// own.
func (r Roster) Changes(routes []RosterRoute) ([]RosterChanged, bool) {
	whole, ok := r.Change(routes)
	if !ok || len(whole.Added)+len(whole.Removed) <= MaxRosterChange {
		return []RosterChanged{whole}, ok
	}
	var out []RosterChanged
	cur := r
	rm, add := whole.Removed, whole.Added
	for len(rm)+len(add) > 0 {
		c := RosterChanged{Revision: cur.Revision + 1}
		n := min(len(rm), MaxRosterChange)
		c.Removed, rm = rm[:n:n], rm[n:]
		m := min(len(add), MaxRosterChange-n)
		c.Added, add = add[:m:m], add[m:]
		next, err := cur.Apply(c)
		if err != nil {
			panic("events: a roster change of Change's does not apply: " + err.Error()) // Change made it from cur
		}
		c.Digest = next.Digest
		out = append(out, c)
		cur = next
	}
	return out, true
}

// RosterBook folds the roster's stream and resolves the revision a
// declaration.composed names into its routed names. It folds what it is
// given (Fold, in position order) and reads what it misses through its
// reader (nil: a revision it has not folded is ErrRosterUnresolved). It
// keeps the roster at the latest revision it holds and the
// rosterBookPast older revisions it used last: any other is read on from
// the newest it keeps below it, or from the stream's start. Not safe for
// concurrent use.
type RosterBook struct {
	reg   *Registry
	r     StreamReader
	cur   Roster
	names []string // cur.Names(), made when first asked
	past  []Roster // older revisions, the one used last at the end; at most rosterBookPast
}

// rosterBookPast is how many revisions below its latest a RosterBook
// keeps. A history read in order asks for the latest or one just below it
// (a declaration composed before a roster change and recorded after it);
// an export of flip-flopping rosters asks for the few it flips between.
// Each kept Roster shares nothing with the others (Apply makes new
// slices), so this bounds the book at rosterBookPast+1 rosters.
const rosterBookPast = 8

// NewRosterBook returns a book decoding with reg and reading through r.
func NewRosterBook(reg *Registry, r StreamReader) *RosterBook {
	return &RosterBook{reg: reg, r: r}
}

// Current is the roster at the latest revision the book holds.
func (b *RosterBook) Current() Roster { return b.cur }

// Fold folds a roster.changed seen in position order. One that is not the
// next revision is left for a read (Names reads the stream then).
func (b *RosterBook) Fold(c RosterChanged) {
	if next, err := b.cur.Apply(c); err == nil {
		b.advance(next)
	}
}

// advance makes next, a revision above cur, the latest, keeping cur among
// the past.
func (b *RosterBook) advance(next Roster) {
	b.keep(b.cur)
	b.cur, b.names = next, nil
}

// keep adds r to the past revisions as the one used last, dropping the one
// used longest ago beyond rosterBookPast. Revision 0 (the empty roster) is
// never kept: it costs no read.
func (b *RosterBook) keep(r Roster) {
	if r.Revision == 0 {
		return
	}
	if i := slices.IndexFunc(b.past, func(p Roster) bool { return p.Revision == r.Revision }); i >= 0 {
		b.past = slices.Delete(b.past, i, i+1)
	}
	b.past = append(b.past, r)
	if len(b.past) > rosterBookPast {
		b.past = slices.Delete(b.past, 0, len(b.past)-rosterBookPast)
	}
}

// below is the newest roster the book holds at or below rev (the empty
// roster when it holds none). A past one found is marked as used last.
func (b *RosterBook) below(rev uint64) Roster {
	if b.cur.Revision <= rev {
		return b.cur
	}
	best := -1
	for i, p := range b.past {
		if p.Revision <= rev && (best < 0 || p.Revision > b.past[best].Revision) {
			best = i
		}
	}
	if best < 0 {
		return Roster{}
	}
	r := b.past[best]
	b.keep(r)
	return r
}

// Roster returns the roster at revision rev, read through the book's
// reader when it does not hold it.
func (b *RosterBook) Roster(ctx context.Context, rev uint64) (Roster, error) {
	from := b.below(rev)
	if from.Revision == rev {
		return from, nil
	}
	if b.r == nil {
		return Roster{}, fmt.Errorf("events: roster revision %d: not seen, and no store to read it from: %w", rev, ErrRosterUnresolved)
	}
	at, err := ReadRoster(ctx, b.r, b.reg, from, rev)
	if err != nil {
		return Roster{}, err
	}
	if rev > b.cur.Revision {
		b.advance(at)
	} else {
		b.keep(at)
	}
	return at, nil
}

// Names returns the routed names of the roster at revision rev.
func (b *RosterBook) Names(ctx context.Context, rev uint64) ([]string, error) {
	if rev == b.cur.Revision && b.names != nil {
		return b.names, nil
	}
	r, err := b.Roster(ctx, rev)
	if err != nil {
		return nil, err
	}
	names := r.Names()
	if rev == b.cur.Revision {
		b.names = names
	}
	return names, nil
}

// Resolve gives c its roster in full when it names a revision and carries
// none (the stored form); other payloads are returned as they are.
func (b *RosterBook) Resolve(ctx context.Context, c DeclarationComposed) (DeclarationComposed, error) {
	if c.RosterRevision == 0 || c.Roster != nil {
		return c, nil
	}
	names, err := b.Names(ctx, c.RosterRevision)
	if err != nil {
		return c, fmt.Errorf("events: declaration %s: %w", c.Declaration, err)
	}
	c.Roster = names
	return c, nil
}

// ReadRoster reads through r the roster's stream from revision from up to
// revision rev and returns the roster at rev. What it cannot fold wraps
// ErrRosterUnresolved; a failed read is returned wrapped.
func ReadRoster(ctx context.Context, r StreamReader, reg *Registry, from Roster, rev uint64) (Roster, error) {
	if rev < from.Revision {
		from = Roster{}
	}
	if rev == from.Revision {
		return from, nil
	}
	evs, err := r.ReadStream(ctx, RosterStream, from.Revision, int(rev-from.Revision))
	if err != nil {
		return Roster{}, fmt.Errorf("events: read roster revision %d: %w", rev, err)
	}
	at := from
	for _, ev := range evs {
		c, err := DecodeAs[RosterChanged](reg, ev)
		if err != nil {
			return Roster{}, fmt.Errorf("events: roster revision %d: %w: %w", ev.Version, ErrRosterUnresolved, err)
		}
		if at, err = at.Apply(c); err != nil {
			return Roster{}, err
		}
	}
	if at.Revision != rev {
		return Roster{}, fmt.Errorf("events: roster revision %d: the roster's stream ends at %d: %w", rev, at.Revision, ErrRosterUnresolved)
	}
	return at, nil
}

// PublicComposedData is the data of a stored declaration.composed that
// names a roster revision, in the public form: roster, the names of that
// revision, added before the closing brace, so StoredComposedData gives
// the stored bytes back. Data that has a roster key already is returned as
// it is.
func PublicComposedData(data json.RawMessage, names []string) (json.RawMessage, error) {
	if names == nil {
		names = []string{}
	}
	list, err := json.Marshal(names)
	if err != nil {
		return nil, err
	}
	d := bytes.TrimSpace(data)
	if len(d) < 2 || d[0] != '{' || d[len(d)-1] != '}' {
		return nil, fmt.Errorf("events: composed declaration data is not a JSON object: %w", ErrInvalid)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(d, &keys); err != nil {
		return nil, fmt.Errorf("events: composed declaration data: %w", err)
	}
	if _, ok := keys["roster"]; ok {
		return data, nil
	}
	out := make([]byte, 0, len(d)+len(list)+11)
	out = append(out, d[:len(d)-1]...)
	if len(keys) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"roster":`...)
	out = append(out, list...)
	return append(out, '}'), nil
}

// StoredComposedData is PublicComposedData undone: the data of a
// declaration.composed naming roster_revision beside its roster (the public
// form), with roster left out, as the store keeps it. Data in the exact
// shape PublicComposedData writes gets its stored bytes back; other data
// has its roster key dropped and its keys written again in order.
func StoredComposedData(data json.RawMessage, names []string) (json.RawMessage, error) {
	if names == nil {
		names = []string{}
	}
	list, err := json.Marshal(names)
	if err != nil {
		return nil, err
	}
	d := bytes.TrimSpace(data)
	suffix := append(append([]byte(`,"roster":`), list...), '}')
	if bytes.HasSuffix(d, suffix) {
		return append(bytes.Clone(d[:len(d)-len(suffix)]), '}'), nil
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(d, &keys); err != nil {
		return nil, fmt.Errorf("events: composed declaration data: %w", err)
	}
	delete(keys, "roster")
	return json.Marshal(keys)
}
