package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go/jetstream"

	"meshplane/declaration"
	"meshplane/internal/gz"
)

// The roster travels once: the controller puts the mesh's roster, at each
// revision, as one shared value under RosterKey in DeclarationsBucket, which
// every agent watches beside its own key; each declaration names the
// revision it was composed against and, to a node whose heartbeat says it
// holds a roster, travels without the roster and the hosts file
// (declaration.Declaration.Wire), gzipped, and the agent fills it from the
// roster it holds (Fill); any other node gets it whole (Controller.wireOf).
// A roster change then puts one roster value and the declarations, which
// are small: what changed, not nodes × roster.
//
// The value is the JSON of declaration.Roster ({"revision", "digest",
// "routes"}), gzipped: 30,000 routes are about 2.4 MB of JSON and well under
// 1 MiB gzipped, what an existing NATS cluster's default max_payload takes.

// ErrBadRosterValue means the roster value in the bucket does not decode,
// or is not a roster (declaration.Roster.Check).
var ErrBadRosterValue = errors.New("bus: bad roster value")

// ErrRosterTooLarge means a roster does not fit in one message of the bus
// even gzipped (its max_payload).
var ErrRosterTooLarge = errors.New("bus: roster too large for the bus")

// rosterHeadroom is what a put of the roster value leaves of the bus's
// max_payload for the message's subject and headers.
const rosterHeadroom = 4 << 10

// maxRosterJSON bounds the roster value's JSON once gunzipped: a value
// that inflates beyond it is refused, never read into memory whole
// (64 MiB: about 800,000 routes).
const maxRosterJSON = 64 << 20

// EncodeRoster is r's value in the bucket: its JSON, gzipped. A roster
// that is not one (Check) is refused.
func EncodeRoster(r declaration.Roster) ([]byte, error) {
	if err := r.Check(); err != nil {
		return nil, fmt.Errorf("bus: encode roster: %w", err)
	}
	if r.Routes == nil {
		r.Routes = []declaration.Route{}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("bus: encode roster revision %d: %w", r.Revision, err)
	}
	return gz.Compress(b), nil
}

// DecodeRoster decodes a roster value (EncodeRoster): gunzipped (at most
// maxRosterJSON bytes), decoded, and checked (declaration.Roster.Check:
// a revision, routes in order, the digest of its routes). Anything else
// wraps ErrBadRosterValue, saying what is wrong. The roster returned has
// its hosts file made once (declaration.NewRoster).
func DecodeRoster(b []byte) (declaration.Roster, error) {
	raw, err := gz.Decompress(b, maxRosterJSON)
	if err != nil {
		return declaration.Roster{}, fmt.Errorf("%w: %w", ErrBadRosterValue, err)
	}
	var r declaration.Roster
	if err := json.Unmarshal(raw, &r); err != nil {
		return declaration.Roster{}, fmt.Errorf("%w: %v", ErrBadRosterValue, err)
	}
	if r.Routes == nil {
		return declaration.Roster{}, fmt.Errorf("%w: revision %d has no routes list", ErrBadRosterValue, r.Revision)
	}
	if err := r.Check(); err != nil {
		return declaration.Roster{}, fmt.Errorf("%w: %w", ErrBadRosterValue, err)
	}
	return declaration.NewRoster(r.Revision, r.Routes), nil
}

// encodeRosterWithin is EncodeRoster, refusing a value above limit bytes
// with ErrRosterTooLarge naming the sizes.
func encodeRosterWithin(r declaration.Roster, limit int64) ([]byte, error) {
	b, err := EncodeRoster(r)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("bus: put roster revision %d: %d routes are %d bytes gzipped, over the %d bytes a message of this bus takes (its max_payload less %d): %w",
			r.Revision, len(r.Routes), len(b), limit, rosterHeadroom, ErrRosterTooLarge)
	}
	return b, nil
}

// rosterLimit is the largest roster value this connection can put: the
// server's max_payload less rosterHeadroom, and never above what the
// bucket takes.
func (c *ControllerConn) rosterLimit() int64 {
	return min(c.nc.MaxPayload()-rosterHeadroom, maxPayload-64<<10)
}

// PutRoster puts r as the mesh's shared roster value (RosterKey) and
// returns its revision in the bucket. A roster too large for one message
// of the bus, gzipped, wraps ErrRosterTooLarge naming its size.
func (c *ControllerConn) PutRoster(ctx context.Context, r declaration.Roster) (uint64, error) {
	b, err := encodeRosterWithin(r, c.rosterLimit())
	if err != nil {
		return 0, err
	}
	rev, err := c.kv.Put(ctx, RosterKey, b)
	if err != nil {
		return 0, fmt.Errorf("bus: put roster revision %d: %w", r.Revision, err)
	}
	return rev, nil
}

// Roster returns the shared roster value in the bucket and its revision
// there, or ErrNoRoster.
func (c *ControllerConn) Roster(ctx context.Context) (declaration.Roster, uint64, error) {
	return getRoster(ctx, c.kv)
}

// ErrNoRoster means no roster value was ever put.
var ErrNoRoster = errors.New("bus: no roster value yet")

func getRoster(ctx context.Context, kv jetstream.KeyValue) (declaration.Roster, uint64, error) {
	e, err := kv.Get(ctx, RosterKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return declaration.Roster{}, 0, ErrNoRoster
	}
	if err != nil {
		return declaration.Roster{}, 0, fmt.Errorf("bus: get roster: %w", err)
	}
	r, err := DecodeRoster(e.Value())
	if err != nil {
		return declaration.Roster{}, 0, fmt.Errorf("bus: roster at bucket revision %d: %w", e.Revision(), err)
	}
	return r, e.Revision(), nil
}

// rosterPut is the roster a Controller last put (revision and digest), so
// that a push of many declarations naming one roster puts it once.
type rosterPut struct {
	revision uint64
	digest   string
}

// ensureRosters puts, once each and in order, the rosters ds carry that
// are not the one last put (declaration.RosterOf), and returns for each
// roster revision put or found the error of its put (nil: put).
// Declarations naming no revision carry their roster themselves.
func (c *ControllerConn) ensureRosters(ctx context.Context, ds []declaration.Declaration) map[rosterPut]error {
	c.rosterMu.Lock()
	defer c.rosterMu.Unlock()
	out := map[rosterPut]error{}
	for _, d := range ds {
		r, ok := d.RosterOf()
		if !ok {
			continue
		}
		key := rosterPut{revision: r.Revision, digest: r.Digest}
		if _, done := out[key]; done {
			continue
		}
		if key == c.rosterPut {
			out[key] = nil
			continue
		}
		_, err := c.PutRoster(ctx, r)
		out[key] = err
		if err == nil {
			c.rosterPut = key
		}
	}
	return out
}

// rosterErr is the error of putting the roster d names (ensureRosters's
// answer), or nil.
func rosterErr(puts map[rosterPut]error, d declaration.Declaration) error {
	if d.RosterRevision == 0 {
		return nil
	}
	return puts[rosterPut{revision: d.RosterRevision, digest: d.RosterDigest}]
}

// Roster returns the shared roster value and its revision in the bucket,
// or ErrNoRoster: what the node's declarations are filled from.
func (n *Node) Roster(ctx context.Context) (declaration.Roster, uint64, error) {
	if !n.rosterOK {
		return declaration.Roster{}, 0, fmt.Errorf("bus: node %s: %w", n.node, ErrRosterNotPermitted)
	}
	m, err := n.directGet(ctx, RosterKey)
	if errors.Is(err, errNoValue) {
		return declaration.Roster{}, 0, fmt.Errorf("bus: node %s: %w", n.node, ErrNoRoster)
	}
	if err != nil {
		return declaration.Roster{}, 0, fmt.Errorf("bus: node %s: get roster: %w", n.node, err)
	}
	rev, _ := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
	r, err := DecodeRoster(m.Data)
	if err != nil {
		return declaration.Roster{}, 0, fmt.Errorf("bus: node %s: roster at bucket revision %d: %w", n.node, rev, err)
	}
	n.hold(r.Revision)
	return r, rev, nil
}

// WatchRoster watches the shared roster value as Watch watches the node's
// declaration: the roster now (if one was ever put), then each new one,
// keeping only the latest; a value that does not decode (DecodeRoster) is
// logged, counted and skipped. A node whose user may not read it (minted
// before the shared roster) is refused with ErrRosterNotPermitted.
func (n *Node) WatchRoster(ctx context.Context) (*RosterWatch, error) {
	if !n.rosterOK {
		return nil, fmt.Errorf("bus: node %s: %w", n.node, ErrRosterNotPermitted)
	}
	return startWatch(ctx, n, RosterKey, "roster", func(b []byte) (declaration.Roster, error) {
		r, err := DecodeRoster(b)
		if err == nil {
			n.hold(r.Revision)
		}
		return r, err
	})
}

// hold notes that the node read roster revision rev: its heartbeats say
// so from then on (HeldRoster).
func (n *Node) hold(rev uint64) {
	for {
		was := n.held.Load()
		if rev <= was || n.held.CompareAndSwap(was, rev) {
			return
		}
	}
}

// HeldRoster is the newest roster revision the node read (0: none), what
// its heartbeats carry so that the controller sends it declarations
// without their roster (ControllerConn.PutDeclaration).
func (n *Node) HeldRoster() uint64 { return n.held.Load() }

// ErrRosterNotPermitted means the node's bus user may not read the shared
// roster value: its credentials were minted before the roster travelled
// once. Such a node is sent its declarations with the roster in them, as
// before; new credentials (mesh node join-token, or register --creds)
// let it read the shared value.
var ErrRosterNotPermitted = errors.New("bus: the node's credentials do not permit reading the shared roster (minted before it existed)")

// republishPermitted reports whether the user JWT may subscribe to node's
// republish subject (NodePermissions grants it since agents hear their key
// republished rather than through a consumer). A JWT that does not decode
// permits nothing.
func republishPermitted(userJWT, node string) bool {
	uc, err := jwt.DecodeUserClaims(userJWT)
	if err != nil {
		return false
	}
	if len(uc.Sub.Allow) == 0 && len(uc.Sub.Deny) == 0 {
		return true // a user without subscribe permissions may subscribe to anything
	}
	return slices.Contains(uc.Sub.Allow, RepublishSubject(node))
}

// rosterPermitted reports whether the user JWT may read the shared roster
// value (NodePermissions grants it since the roster travelled once). A JWT
// that does not decode permits nothing; the connection refuses it anyway.
func rosterPermitted(userJWT string) bool {
	uc, err := jwt.DecodeUserClaims(userJWT)
	if err != nil {
		return false
	}
	if len(uc.Pub.Allow) == 0 && len(uc.Pub.Deny) == 0 {
		return true // a user without publish permissions may publish anything
	}
	return slices.Contains(uc.Pub.Allow, "$JS.API.DIRECT.GET."+declStream+"."+RosterSubject)
}
