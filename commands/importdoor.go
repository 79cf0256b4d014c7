package commands

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"meshplane/events"
)

// What an import checks of a line as the live door checks the command or
// the report that appends its event, against what the file said before it
// (and, for a node the file does not register, what the store holds:
// Settle):
//
//   - the actor is printable: no control or format character (a NUL, a
//     newline, a bidirectional override), as CheckOperator has an
//     operator's name; "operator:NAME" gives a NAME CheckOperator takes;
//   - a declaration is "NODE/K", K from 1, composed once (an id composed
//     again is refused); a push, an apply report or a late delivery names
//     one composed before it for its node: earlier in the file, or, for a
//     node whose registration is not in the file, in the store (K no
//     higher than the node's composes there);
//   - an apply report passes CheckReport against what the file says of
//     its declaration (composed, pushed or the node's latest, not applied
//     before its compose less events.MaxReportSkew); a compact report's
//     held_since names an earlier report of the same node that held
//     something (in the file, or in the store: SettleHeld);
//   - a container state event (container.*) is of its stream's node, has
//     the form the report door takes (events.ContainerChange.Check) and
//     names a declaration composed for the node;
//   - a failed roll-out (rollout.failed) has its failures' form, a known
//     action, and names a declaration composed for the node;
//   - a module is taken only on an adopted node;
//   - after node.removed (module.removed) nothing of the node (module)
//     comes but its registration (definition) anew;
//   - a token's name is an operator's name (CheckOperator), on its own
//     stream (token-NAME), with a secret_sha256 of 64 lower-case hex
//     digits and the token id its first 16; a token is not created while
//     the file holds its name's live one, and a revoke names the one live.

// Kinds of Need beyond a node registered and a module defined.
const (
	needNode        = "node"
	needModule      = "module"
	needDeclaration = "declaration" // Name: "NODE/K", composed for NODE
	needAdopted     = "adopted"     // Name: a node, adopted
)

// fileNode is what the file said of a node.
type fileNode struct {
	registered int // the line of its registration in the file (0: none)
	removed    int // the line of its removal, when not registered since
	adopted    bool
	decls      map[string]*fileDecl
	latest     string // its last composed declaration
}

// fileDecl is what the file said of a declaration.
type fileDecl struct {
	line   int
	at     time.Time
	pushed bool
}

// fileToken is what the file said of an operator's token stream.
type fileToken struct {
	id      string // the last token created
	revoked bool
}

func (im *Import) node(name string) *fileNode {
	if im.nodes == nil {
		im.nodes = map[string]*fileNode{}
	}
	n := im.nodes[name]
	if n == nil {
		n = &fileNode{decls: map[string]*fileDecl{}}
		im.nodes[name] = n
	}
	return n
}

// checkActor checks an envelope's actor (and causation, correlation):
// printable, and an operator's name as CheckOperator takes it.
func checkActor(ev events.Event) error {
	for _, f := range []struct{ name, v string }{{"actor", ev.Actor}, {"causation", ev.Causation}, {"correlation", ev.Correlation}} {
		for i, r := range f.v {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError {
				return fmt.Errorf("%s %s: byte %d is %s, a control or format character", f.name, quote(f.v), i, strconv.QuoteRune(r))
			}
		}
	}
	if op, ok := strings.CutPrefix(ev.Actor, "operator:"); ok {
		if err := CheckOperator(op); err != nil {
			return fmt.Errorf("actor: %w", err)
		}
	}
	return nil
}

// declIndex is K of a declaration "NODE/K" of node.
func declIndex(node, decl string) (uint64, error) {
	k, ok := strings.CutPrefix(decl, node+"/")
	if !ok {
		return 0, fmt.Errorf("declaration %s is not one of node %s's (%s/N)", quote(decl), node, node)
	}
	v, err := strconv.ParseUint(k, 10, 64)
	if err != nil || v == 0 || strconv.FormatUint(v, 10) != k {
		return 0, fmt.Errorf("declaration %s is not one of node %s's: %s/N, N a number from 1", quote(decl), node, node)
	}
	return v, nil
}

// door checks what line n, ev (its payload p, of node or module s),
// says against what the file said before it, and returns what it needs.
func (im *Import) door(ev events.Event, p events.Payload, s subject) ([]Need, error) {
	var needs []Need
	needDecl := func(decl string) error {
		if _, err := declIndex(s.node, decl); err != nil {
			return err
		}
		needs = append(needs, Need{needDeclaration, decl})
		return nil
	}
	if c, ok := events.ContainerOf(p); ok {
		// A container state event, as the report door takes its change:
		// of its stream's node, its form, and a declaration composed for it.
		if c.Node != s.node {
			return nil, fmt.Errorf("a container state of node %s on %s's stream", quote(c.Node), quote(s.node))
		}
		if err := c.Check(); err != nil {
			return nil, err
		}
		if c.Declaration != "" {
			if err := needDecl(c.Declaration); err != nil {
				return nil, err
			}
		}
		return needs, nil
	}
	if r, ok := p.(events.RolloutFailed); ok {
		// A failed roll-out, as the report door records it: each failure's
		// form, a known action, and a declaration composed for the node.
		for _, f := range r.Containers {
			if err := f.Check(); err != nil {
				return nil, err
			}
		}
		switch r.Action {
		case events.RolloutRevert, events.RolloutGaveUp, events.RolloutStopped:
		default:
			return nil, fmt.Errorf("a failed roll-out's action %s: want %s, %s or %s", quote(r.Action), events.RolloutRevert, events.RolloutGaveUp, events.RolloutStopped)
		}
		if err := needDecl(r.Declaration); err != nil {
			return nil, err
		}
		return needs, nil
	}
	switch p := p.(type) {
	case events.DeclarationComposed:
		if _, err := declIndex(s.node, p.Declaration); err != nil {
			return nil, err
		}
		if d := im.node(s.node).decls[p.Declaration]; d != nil {
			return nil, fmt.Errorf("declaration %s is composed already, on line %d: a declaration id is composed once", quote(p.Declaration), d.line)
		}
	case events.DeclarationPushed:
		if err := needDecl(p.Declaration); err != nil {
			return nil, err
		}
	case events.DeclarationPushFailed:
		if p.Declaration != "" {
			if err := needDecl(p.Declaration); err != nil {
				return nil, err
			}
		}
	case events.ReportDeliveredLate:
		if p.Declaration != "" {
			if err := needDecl(p.Declaration); err != nil {
				return nil, err
			}
		}
	case events.ApplyReported:
		if err := needDecl(p.Declaration); err != nil {
			return nil, err
		}
		var facts *DeclarationFacts
		fn := im.node(s.node)
		if d := fn.decls[p.Declaration]; d != nil {
			facts = &DeclarationFacts{Composed: true, ComposedAt: d.at, Pushed: d.pushed, Latest: fn.latest == p.Declaration}
		}
		if err := CheckReport(Delivery{Report: p, ApplyID: ev.ID, AppliedAt: ev.At, Correlation: ev.Correlation}, facts, time.Time{}); err != nil {
			return nil, err
		}
	case events.ModuleTaken:
		needs = append(needs, Need{needAdopted, s.node})
	}
	return needs, nil
}

// known says whether the file says all there is of need, so that one it
// does not meet is refused at once, never looked up in the store: a node
// or module the file removed, a declaration or an adoption of a node the
// file registered or removed. It returns why need is not met.
func (im *Import) known(need Need) (string, bool) {
	switch need.Kind {
	case needNode:
		if n := im.nodes[need.Name]; n != nil && n.removed > 0 {
			return fmt.Sprintf("node %s was removed on line %d", need.Name, n.removed), true
		}
	case needModule:
		if l := im.modulesRemoved[need.Name]; l > 0 {
			return fmt.Sprintf("module %s was removed on line %d", need.Name, l), true
		}
	case needDeclaration, needAdopted:
		node, _, _ := strings.Cut(need.Name, "/")
		n := im.nodes[node]
		if n == nil || n.registered == 0 && n.removed == 0 {
			return "", false
		}
		if need.Kind == needAdopted {
			return fmt.Sprintf("node %s is not adopted (registered on line %d, not adopted since)", node, n.registered), true
		}
		return fmt.Sprintf("declaration %s was never composed for node %s before this line (the file registers the node on line %d: its composes are in the file)",
			quote(need.Name), node, max(n.registered, n.removed)), true
	}
	return "", false
}

// effects records what accepted line n, ev, says for the lines after it.
func (im *Import) effects(ev events.Event, p events.Payload, s subject, n int) {
	switch p := p.(type) {
	case events.NodeRegistered:
		fn := im.node(s.node)
		fn.registered, fn.removed, fn.adopted = n, 0, false
		im.held[Need{needNode, s.node}] = true
		im.held[Need{needAdopted, s.node}] = false
	case events.NodeRemoved:
		fn := im.node(s.node)
		fn.registered, fn.removed, fn.adopted = 0, n, false
		im.held[Need{needNode, s.node}] = false
		im.held[Need{needAdopted, s.node}] = false
	case events.NodeAdopted:
		im.node(s.node).adopted = true
		im.held[Need{needAdopted, s.node}] = true
	case events.ModuleDefined:
		im.held[Need{needModule, s.module}] = true
		delete(im.modulesRemoved, s.module)
	case events.ModuleRemoved:
		im.held[Need{needModule, s.module}] = false
		if im.modulesRemoved == nil {
			im.modulesRemoved = map[string]int{}
		}
		im.modulesRemoved[s.module] = n
	case events.DeclarationComposed:
		fn := im.node(s.node)
		fn.decls[p.Declaration] = &fileDecl{line: n, at: ev.At}
		fn.latest = p.Declaration
		im.held[Need{needDeclaration, p.Declaration}] = true
	case events.DeclarationPushed:
		if d := im.node(s.node).decls[p.Declaration]; d != nil {
			d.pushed = true
		}
	case events.DeclarationPushFailed:
		if d := im.node(s.node).decls[p.Declaration]; d != nil {
			d.pushed = true // a put whose acknowledgement was lost may have reached the bus
		}
	}
}

// settleNeed is whether node, as the store holds it, meets need.
func settleNeed(need Need, n Node, m Module) bool {
	switch need.Kind {
	case needNode:
		return n.Registered
	case needModule:
		return m.Defined
	case needAdopted:
		return n.Registered && n.Adopted
	case needDeclaration:
		k, err := declIndex(n.Name, need.Name)
		return err == nil && n.Name != "" && k <= n.Composed
	}
	return false
}

// tokenLine checks a token.created or token.revoked line against the
// token lines before it in the file.
func (im *Import) tokenLine(ev events.Event, p events.Payload) error {
	var name, id, by string
	switch p := p.(type) {
	case events.TokenCreated:
		name, id, by = p.Name, p.TokenID, p.By
		if err := checkSHA256(p.SecretSHA256); err != nil {
			return fmt.Errorf("%s: %w", ev.Type, err)
		}
		if id != TokenID(p.SecretSHA256) {
			return fmt.Errorf("%s: token_id %s is not the first %d hex digits of secret_sha256", ev.Type, quote(id), TokenIDLen)
		}
	case events.TokenRevoked:
		name, id, by = p.Name, p.TokenID, p.By
	}
	if err := CheckOperator(name); err != nil {
		return fmt.Errorf("%s: name: %w", ev.Type, err)
	}
	if want := events.TokenStream(name); ev.Stream != want {
		return fmt.Errorf("%s of operator %s on stream %s: an operator's tokens are on its own stream, %s", ev.Type, short(name), short(ev.Stream), want)
	}
	if len(id) != TokenIDLen || strings.Trim(id, "0123456789abcdef") != "" {
		return fmt.Errorf("%s: token_id %s is not %d lower-case hex digits", ev.Type, quote(id), TokenIDLen)
	}
	if op, ok := strings.CutPrefix(by, "operator:"); !ok && by != "controller" {
		return fmt.Errorf("%s: by %s is neither operator:NAME nor controller", ev.Type, quote(by))
	} else if ok {
		if err := CheckOperator(op); err != nil {
			return fmt.Errorf("%s: by: %w", ev.Type, err)
		}
	}
	if im.tokens == nil {
		im.tokens = map[string]*fileToken{}
	}
	t := im.tokens[name]
	switch {
	case ev.Type == events.TypeTokenCreated && t != nil && !t.revoked:
		return fmt.Errorf("%s: operator %s has a live token already (%s), created earlier in the file", ev.Type, short(name), t.id)
	case ev.Type == events.TypeTokenRevoked && t != nil && (t.revoked || t.id != id):
		return fmt.Errorf("%s: token %s is not operator %s's live token", ev.Type, quote(id), short(name))
	}
	if ev.Type == events.TypeTokenCreated {
		im.tokens[name] = &fileToken{id: id}
	} else if t != nil {
		t.revoked = true
	}
	return nil
}
