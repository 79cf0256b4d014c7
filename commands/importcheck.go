package commands

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"meshplane/events"
)

// ErrImportLine marks a line of an import file refused at the door. The
// concrete error is an *ImportLineError.
var ErrImportLine = errors.New("not an event to import")

// ImportLineError is a line of an import file that Import refused: its
// number (from 1) and why.
type ImportLineError struct {
	Line int
	Err  error
}

func (e *ImportLineError) Error() string {
	return fmt.Sprintf("line %d: %v: %v", e.Line, ErrImportLine, e.Err)
}

// Unwrap makes errors.Is(err, ErrImportLine) true, and reaches the reason.
func (e *ImportLineError) Unwrap() []error { return []error{ErrImportLine, e.Err} }

// Need is what an event needs the mesh to hold before it: its node
// registered (Kind "node") or its module defined (Kind "module").
type Need struct {
	Kind string
	Name string
}

func (n Need) String() string {
	switch n.Kind {
	case needNode:
		return "node " + n.Name + " is not registered"
	case needAdopted:
		return "node " + n.Name + " is not adopted"
	case needDeclaration:
		node, _, _ := strings.Cut(n.Name, "/")
		return "declaration " + quote(n.Name) + " was never composed for node " + node
	}
	return "module " + n.Name + " is not defined"
}

// Import checks the lines of an import file (mesh export's JSON lines, one
// event a line) at the door, in the file's order, as the live path checks
// the commands and reports that append such events, so that an import
// never writes what the readers cannot read:
//
//   - the envelope decodes strictly (events.UnmarshalStrict: no key given
//     twice, no key of another case, no unknown field), carries an id seen
//     on no earlier line and a time, and is valid as every store checks it
//     (events.Event.Validate);
//   - the type is registered, the schema no newer than this build's, and
//     the payload decodes to its type strictly (events.DecodeStrict; a
//     field it does not know is let by, as readers pass over it);
//   - the payload's node is the stream's (node-NAME; a module's events on
//     module-NAME), an agent's event is that node's, and every node and
//     module name passes events.CheckName;
//   - what the command behind the event checks: a node setting's key and
//     value, a module's spec, an artifact's name and digest, a deploy's
//     builds; an apply report passes the door's CheckReport, names a
//     declaration of its node, and its apply id (if it gives one) is the
//     event's;
//   - an event on a node's stream follows that node's registration, and one
//     naming a module follows the module's definition: earlier in the file,
//     or in the store (Pending, then Settle);
//   - what the live door checks against what came before (importdoor.go):
//     a printable actor; declarations composed once, and named by pushes
//     and reports only once composed (and, for a report, pushed: the
//     report passes CheckReport); a held_since naming an earlier report
//     of the node that held something; a take on an adopted node; nothing
//     of a node or module after its removal; tokens as their commands make
//     them (secret.set and roster.changed are checked as their commands
//     make them too);
//   - the chain values the lines carry follow each other (importchain.go),
//     checked last, so that a line refused for what it says is told so.
//
// An import reads its file twice: Line checks every line, Settle what the
// lines need of the store, then Replay hands over the accepted events for
// the append, refusing a line whose bytes are not those Line checked (the
// file changed in between). Readers are never held to any of this: they
// read whatever history holds. An Import is used by one goroutine.
type Import struct {
	reg     *events.Registry
	ids     map[uuid.UUID]int // line of each id decoded
	held    map[Need]bool     // registered or defined on an accepted line
	pending map[Need][]needer // needs no earlier line met, and the lines needing them
	settled map[Need]bool     // after Settle: what the store holds; nil before
	seen    []seenLine        // every line Line checked, in order
	next    int               // the next of seen that Replay hands over
	pub     publicForms       // apply reports in the public form (importheld.go)
	roster  importRoster      // the file's roster (importroster.go)
	res     importResources   // the file's composed declarations' resources (importresources.go)
	// stripped says the line Line checks last is a composed declaration
	// stored without its roster (seenLine.stripped); resStripped, one
	// stored by reference to its resources (seenLine.resStripped).
	stripped, resStripped bool
	// What the file said of nodes, removed modules and tokens
	// (importdoor.go).
	nodes          map[string]*fileNode
	modulesRemoved map[string]int
	tokens         map[string]*fileToken
	chain          chainCheck // the chain values the lines carry (importchain.go)
	lastSeen       int        // the line Line saw last
	chainErr       error      // what chainLine found of the line Line checks
}

// seenLine is a line Line checked: its number, a digest of its bytes, and
// whether it was accepted.
type seenLine struct {
	n           int
	sum         [16]byte
	ok          bool
	stripped    bool // a composed declaration stored without its roster
	resStripped bool // a composed declaration stored by reference to its resources
}

func lineSum(line []byte) [16]byte {
	sum := sha256.Sum256(line)
	return [16]byte(sum[:16])
}

// needer is a line that needs what the store may hold.
type needer struct {
	line        int
	typ, stream string
}

// NewImport returns a checker of one import file, decoding with reg.
func NewImport(reg *events.Registry) *Import {
	return &Import{reg: reg, ids: map[uuid.UUID]int{}, held: map[Need]bool{}, pending: map[Need][]needer{}}
}

// Line decodes and checks line n (its bytes, trimmed). The event is ready
// to append: its time in UTC, version and position cleared, empty data as
// {}. A refusal is an *ImportLineError. A line whose node or module no
// earlier line registered or defined is accepted pending what the store
// holds (Pending, Settle) until Settle has run; after it, it is refused
// unless the store holds it.
func (im *Import) Line(line []byte, n int) (events.Event, error) {
	im.stripped, im.resStripped = false, false
	ev, err := im.line(line, n)
	im.chainDone(n, err == nil)
	im.lastSeen = n
	im.seen = append(im.seen, seenLine{n: n, sum: lineSum(line), ok: err == nil, stripped: im.stripped, resStripped: im.resStripped})
	return ev, err
}

func (im *Import) line(line []byte, n int) (events.Event, error) {
	ev, err := im.envelope(line, n)
	if err == nil {
		ev, err = im.public(ev, n)
	}
	if err != nil {
		return events.Event{}, &ImportLineError{Line: n, Err: err}
	}
	p, subj, needs, err := im.check(ev)
	if err == nil {
		err = im.chainErr
	}
	if err != nil {
		return events.Event{}, &ImportLineError{Line: n, Err: err}
	}
	for _, need := range needs {
		if im.held[need] {
			continue
		}
		if why, ok := im.known(need); ok {
			return events.Event{}, &ImportLineError{Line: n, Err: fmt.Errorf("%s on %s: %s", ev.Type, ev.Stream, why)}
		}
	}
	var pending []Need
	for _, need := range needs {
		switch {
		case im.held[need]:
		case im.settled == nil:
			pending = append(pending, need)
		case !im.settled[need]:
			return events.Event{}, &ImportLineError{Line: n, Err: unmet(ev.Type, ev.Stream, need)}
		}
	}
	for _, need := range pending {
		im.pending[need] = append(im.pending[need], needer{n, ev.Type, ev.Stream})
	}
	im.effects(ev, p, subj, n)
	return ev, nil
}

func unmet(typ, stream string, need Need) error {
	return fmt.Errorf("%s on %s: %s, in the store or earlier in the file", typ, stream, need)
}

// Pending lists what lines accepted so far need the store to hold, each
// with the lines needing it, in the order of their first line (a node or
// module before what else that line needs).
func (im *Import) Pending() []Need {
	needs := slices.Collect(maps.Keys(im.pending))
	// A line's node or module first: what else it needs is of them.
	rank := func(n Need) int {
		switch n.Kind {
		case needNode:
			return 1
		case needModule:
			return 2
		}
		return 3
	}
	slices.SortFunc(needs, func(a, b Need) int {
		return cmp.Or(cmp.Compare(im.pending[a][0].line, im.pending[b][0].line), cmp.Compare(rank(a), rank(b)),
			cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	return needs
}

// Settle looks up in r what Pending lists and returns the lines whose need
// the store does not meet, refused, in line order. Lines after it are
// checked against what it found. Settle with nothing pending reads
// nothing; r may then be nil.
func (im *Import) Settle(ctx context.Context, r Reader) ([]*ImportLineError, error) {
	if im.settled == nil {
		im.settled = map[Need]bool{}
	}
	var refused []*ImportLineError
	for _, need := range im.Pending() {
		var (
			n   Node
			m   Module
			err error
		)
		switch need.Kind {
		case needModule:
			if m, err = r.Module(ctx, need.Name); err != nil {
				return nil, fmt.Errorf("commands: import: read module %s: %w", need.Name, err)
			}
		default:
			node, _, _ := strings.Cut(need.Name, "/")
			if n, err = r.Node(ctx, node); err != nil {
				return nil, fmt.Errorf("commands: import: read node %s: %w", node, err)
			}
			n.Name = node
		}
		held := settleNeed(need, n, m)
		im.settled[need] = held
		if !held {
			for _, l := range im.pending[need] {
				refused = append(refused, &ImportLineError{Line: l.line, Err: unmet(l.typ, l.stream, need)})
			}
		}
	}
	im.pending = map[Need][]needer{}
	// A line with two needs unmet is refused once, for the first.
	slices.SortStableFunc(refused, func(a, b *ImportLineError) int { return cmp.Compare(a.Line, b.Line) })
	refused = slices.CompactFunc(refused, func(a, b *ImportLineError) bool { return a.Line == b.Line })
	for _, r := range refused {
		if i, ok := slices.BinarySearchFunc(im.seen, r.Line, func(l seenLine, n int) int { return cmp.Compare(l.n, n) }); ok {
			im.seen[i].ok = false
		}
	}
	return refused, nil
}

// ErrImportChanged means an import file's lines were not, on the pass that
// appends, the lines Line checked.
var ErrImportChanged = errors.New("the file changed since it was checked")

// Replay is the pass that appends: it takes the lines Line saw, in the
// same order, and returns the event of each line accepted (ok) as Line
// returned it, or ok false for a refused line, which the append passes
// over. A line that is not the next one Line saw, byte for byte, is
// ErrImportChanged.
func (im *Import) Replay(line []byte, n int) (ev events.Event, ok bool, err error) {
	if im.next >= len(im.seen) || im.seen[im.next].n != n || im.seen[im.next].sum != lineSum(line) {
		return events.Event{}, false, fmt.Errorf("line %d: %w", n, ErrImportChanged)
	}
	seen := im.seen[im.next]
	im.next++
	if !seen.ok {
		return events.Event{}, false, nil
	}
	// The bytes Line accepted: the plain decoder reads them as the strict
	// one did.
	if ev, err = events.UnmarshalJSONLine(line); err != nil {
		return events.Event{}, false, fmt.Errorf("line %d: %w", n, err)
	}
	ev = normalize(ev) // as Line read it
	if ev, _, _, err = storedForm(im.reg, ev); err != nil {
		return events.Event{}, false, fmt.Errorf("line %d: %w", n, err)
	}
	if seen.stripped {
		if ev, err = storedComposed(im.reg, ev); err != nil {
			return events.Event{}, false, fmt.Errorf("line %d: %w", n, err)
		}
	}
	if ev.Type == events.TypeDeclarationComposed {
		// The resources after the roster: the public form adds them first.
		if seen.resStripped {
			ev, err = storedResources(im.reg, ev)
		} else {
			ev, err = im.withoutNote(ev)
		}
		if err != nil {
			return events.Event{}, false, fmt.Errorf("line %d: %w", n, err)
		}
	}
	return normalize(ev), true, nil
}

// Unreplayed is how many of the lines Line saw Replay has not had.
func (im *Import) Unreplayed() int { return len(im.seen) - im.next }

// envelope decodes line n's envelope and checks what every store checks,
// and that its id is on no earlier line.
func (im *Import) envelope(line []byte, n int) (events.Event, error) {
	ev, err := events.UnmarshalJSONLineStrict(line)
	if err != nil {
		return events.Event{}, err
	}
	switch {
	case ev.ID == uuid.Nil:
		return events.Event{}, errors.New("no id (an import keeps each event's id, so that importing again appends nothing)")
	case ev.At.IsZero():
		return events.Event{}, errors.New("no time (at)")
	}
	if first, dup := im.ids[ev.ID]; dup {
		return events.Event{}, fmt.Errorf("id %s is also on line %d", ev.ID, first)
	}
	im.ids[ev.ID] = n
	if ev.Schema == 0 {
		ev.Schema = 1 // as events.UnmarshalJSONLine reads a line without one
	}
	im.chainErr = im.chainLine(ev, n) // told after what the line says is checked
	ev = normalize(ev)
	if err := ev.Validate(fmt.Sprintf("line %d", n)); err != nil {
		return events.Event{}, err
	}
	if err := checkActor(ev); err != nil {
		return events.Event{}, err
	}
	return ev, nil
}

// normalize is a decoded line as an import appends it: its time in UTC,
// the store's fields cleared, empty data as {} (as a store keeps it), and
// data in JSON's compact form, as every writer of this build stores it and
// mesh export writes it (encoding/json's: no space, <, > and & escaped),
// so that the export of what an import stored carries chain values that
// follow (a line written by hand with spaces is stored without them).
func normalize(ev events.Event) events.Event {
	ev.At = ev.At.UTC()
	ev.Version, ev.Position, ev.Chain = 0, 0, events.Hash{}
	if len(ev.Data) == 0 {
		ev.Data = []byte("{}")
	} else if b, err := json.Marshal(json.RawMessage(ev.Data)); err == nil {
		ev.Data = b // not valid JSON: kept, for Validate to refuse
	}
	return ev
}

// subject is the node and the module a payload names (its "node" and
// "module" fields).
type subject struct {
	node, module       string
	hasNode, hasModule bool
}

// subjectOf reads the payload's top-level string fields named (in JSON)
// "node" and "module": every type of the vocabulary names one or both, and
// a type added later is checked by the same rule without a case here.
func subjectOf(p events.Payload) subject {
	var s subject
	if c, ok := events.ContainerOf(p); ok {
		// A container state event is its node's (its module is a name
		// of the declaration, not a subject).
		return subject{node: c.Node, hasNode: true}
	}
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Struct {
		return s
	}
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type.Kind() != reflect.String {
			continue
		}
		switch name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name {
		case "node":
			s.node, s.hasNode = v.Field(i).String(), true
		case "module":
			s.module, s.hasModule = v.Field(i).String(), true
		}
	}
	return s
}

// check checks ev's payload and returns it, what it names and what it
// needs the mesh to hold.
func (im *Import) check(ev events.Event) (events.Payload, subject, []Need, error) {
	p, err := im.reg.DecodeStrict(ev)
	if err != nil {
		return nil, subject{}, nil, err
	}
	switch p := p.(type) {
	case events.SecretSet:
		return p, subject{}, nil, checkSecretSet(ev, p)
	case events.RosterChanged:
		return p, subject{}, nil, im.rosterLine(ev)
	case events.TokenCreated, events.TokenRevoked:
		return p, subject{}, nil, im.tokenLine(ev, p)
	}
	s := subjectOf(p)
	if s.hasNode {
		if bad := badName("node", s.node); bad != "" {
			return nil, subject{}, nil, fmt.Errorf("%s: node name %s", ev.Type, bad)
		}
	}
	if s.hasModule {
		if bad := badName("module", s.module); bad != "" {
			return nil, subject{}, nil, fmt.Errorf("%s: module name %s", ev.Type, bad)
		}
	}
	var needs []Need
	switch {
	case s.hasNode:
		if want := events.NodeStream(s.node); ev.Stream != want {
			return nil, subject{}, nil, fmt.Errorf("%s of node %s on stream %s: a node's events are on its own stream, %s", ev.Type, s.node, short(ev.Stream), want)
		}
		if ev.Type != events.TypeNodeRegistered {
			needs = append(needs, Need{needNode, s.node})
		}
	case s.hasModule:
		if want := events.ModuleStream(s.module); ev.Stream != want {
			return nil, subject{}, nil, fmt.Errorf("%s of module %s on stream %s: a module's events are on its own stream, %s", ev.Type, s.module, short(ev.Stream), want)
		}
	default:
		return nil, subject{}, nil, fmt.Errorf("%s names no node and no module", ev.Type)
	}
	if s.hasModule && ev.Type != events.TypeModuleDefined {
		needs = append(needs, Need{needModule, s.module})
	}
	if agent, ok := strings.CutPrefix(ev.Actor, "agent:"); ok && (!s.hasNode || agent != s.node) {
		return nil, subject{}, nil, fmt.Errorf("%s on %s by %s: an agent writes only its own node's events", ev.Type, ev.Stream, short(ev.Actor))
	}
	if err := checkPayload(ev, p, s.node); err != nil {
		return nil, subject{}, nil, fmt.Errorf("%s: %w", ev.Type, err)
	}
	more, err := im.door(ev, p, s)
	if err != nil {
		return nil, subject{}, nil, fmt.Errorf("%s: %w", ev.Type, err)
	}
	return p, s, append(needs, more...), nil
}

// checkPayload checks what the command or report behind p checks.
func checkPayload(ev events.Event, p events.Payload, node string) error {
	ofNode := func(decl string, required bool) error {
		switch {
		case decl == "" && !required:
			return nil
		case !strings.HasPrefix(decl, node+"/"):
			return fmt.Errorf("declaration %s is not one of node %s's (%s/N)", quote(decl), node, node)
		}
		return nil
	}
	switch p := p.(type) {
	case events.NodeSettingSet:
		return validSetting(p.Key, p.Value)
	case events.ModuleDefined:
		if err := ValidateSpec(p.Spec); err != nil {
			return fmt.Errorf("spec: %w", err)
		}
	case events.ArtifactRecorded:
		if err := CheckArtifact(p.Name); err != nil {
			return err
		}
		if err := CheckDigest(p.Digest); err != nil {
			return err
		}
		switch p.Upgrade {
		case "", events.UpgradeManual, events.UpgradeRollOut:
		default:
			return fmt.Errorf("upgrade %s is not an upgrade policy", quote(p.Upgrade))
		}
	case events.ModuleDeployed:
		if len(p.Builds) == 0 {
			return errors.New("deploys no build")
		}
		for i, b := range p.Builds {
			if err := CheckArtifact(b.Name); err != nil {
				return fmt.Errorf("builds[%d]: %w", i, err)
			}
			if err := CheckDigest(b.Digest); err != nil {
				return fmt.Errorf("builds[%d]: %w", i, err)
			}
		}
		switch p.By {
		case events.DeployedByOperator, events.DeployedByRollOut, events.DeployedByFirstBuild, events.DeployedByRevert:
		default:
			return fmt.Errorf("by %s is not what deploys (%s, %s, %s or %s)", quote(p.By), events.DeployedByOperator, events.DeployedByRollOut, events.DeployedByFirstBuild, events.DeployedByRevert)
		}
	case events.DeclarationComposed:
		return ofNode(p.Declaration, true)
	case events.DeclarationPushed:
		return ofNode(p.Declaration, true)
	case events.DeclarationPushFailed:
		return ofNode(p.Declaration, false)
	case events.ApplyReported:
		// The door's own check (CheckReport), without the facts the
		// file gives, which importdoor.go checks the report against.
		if err := CheckReport(Delivery{Report: p, ApplyID: ev.ID, AppliedAt: ev.At, Correlation: ev.Correlation}, nil, time.Time{}); err != nil {
			return err
		}
		if p.ApplyID != "" && p.ApplyID != ev.ID.String() {
			return fmt.Errorf("apply_id %s is not the event's id %s", quote(p.ApplyID), ev.ID)
		}
		return ofNode(p.Declaration, true)
	case events.ReportDeliveredLate:
		if p.Attempts < 0 {
			return fmt.Errorf("attempts: %d is below zero", p.Attempts)
		}
		return ofNode(p.Declaration, false)
	}
	return nil
}
