package controller

import (
	"context"
	"errors"
	"fmt"
	"github.com/google/uuid"
	"sync"
	"time"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/events"
	"meshplane/projections"
)

// Reads as of a past moment (mesh ... --at, ?at=): At resolves the moment
// to a position P and returns a read-only api.Service over a controller of
// its own whose store ends at P (storeAt: every read the write side makes
// stops there too) and whose projections are folded to P from the nearest
// checkpoint (projections.FoldTo over Config.Checkpoints), so every query
// method answers unchanged, as the mesh stood after event P. Its answers
// carry AsOf. The timeline is not copied: its queries are this
// controller's, filtered to positions before P+1 (entries are immutable by
// position; the churn marks on them are as they are now). Why and roster
// history need every entry or declaration up to P, which a checkpoint
// does not keep: they are answered from projections folded from 0 to P,
// made on first use. The last few moments asked are kept (atCacheSize).

// atCacheSize is how many moments a controller keeps folded.
const atCacheSize = 4

// DefaultCheckpoints is what a controller keeps in memory when its
// Config names no Keeper: a checkpoint every 8,192 events, at most 128
// of them and 128 MiB.
var DefaultCheckpoints = projections.KeepPolicy{MaxBytes: 128 << 20}

// atCache is a controller's moments folded, newest asked last.
type atCache struct {
	mu    sync.Mutex
	views []*atView
}

func (a *atCache) get(pos uint64) *atView {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, v := range a.views {
		if v.m.Position == pos {
			return v
		}
	}
	return nil
}

func (a *atCache) put(v *atView) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.views = append(a.views, v)
	if len(a.views) > atCacheSize {
		a.views = a.views[1:]
	}
}

// Checkpoints is the keeper of the controller's checkpoints.
func (c *Controller) Checkpoints() *projections.Keeper { return c.keeper }

// Moment resolves at against the store: a position up to the head, or a
// time, to the last event at or before it (projections.PositionAt; a time
// after the clock's now is refused). Outside the history it is a rejection
// (invalid).
func (c *Controller) Moment(ctx context.Context, at api.At) (api.Moment, error) {
	head, err := c.store.Head(ctx)
	if err != nil {
		return api.Moment{}, fmt.Errorf("controller: at %s: head: %w", at, err)
	}
	if head == 0 {
		return api.Moment{}, reject(commands.CodeInvalid, "at %s: the history is empty", at)
	}
	if at.Position > 0 {
		if at.Position > head {
			return api.Moment{}, reject(commands.CodeInvalid, "at position %d: past the head of the history (%d); give 1 to %d or a time", at.Position, head, head)
		}
		t, err := projections.TimeOf(ctx, c.store, at.Position)
		if err != nil {
			return api.Moment{}, fmt.Errorf("controller: at %s: %w", at, err)
		}
		return api.Moment{Position: at.Position, Time: t}, nil
	}
	if now := c.clock(); at.Time.After(now) {
		return api.Moment{}, reject(commands.CodeInvalid, "at %s: in the future (now is %s)", at, now.UTC().Format(time.RFC3339))
	}
	pos, t, err := projections.PositionAt(ctx, c.store, at.Time)
	if errors.Is(err, projections.ErrNoMoment) {
		return api.Moment{}, c.beforeFirst(ctx, "at "+at.String())
	}
	if err != nil {
		return api.Moment{}, fmt.Errorf("controller: at %s: %w", at, err)
	}
	return api.Moment{Position: pos, Time: t}, nil
}

// beforeFirst is the refusal of moment, which is before the first event
// (position 0, or a time before the first event's), as every verb that
// reads a moment gives it: --at, diff and revert (commands.BeforeFirst,
// naming the first event's time).
func (c *Controller) beforeFirst(ctx context.Context, moment string) error {
	head, err := c.store.Head(ctx)
	if err != nil {
		return fmt.Errorf("controller: %s: head: %w", moment, err)
	}
	if head == 0 {
		return reject(commands.CodeInvalid, "%s: the history is empty", moment)
	}
	first, err := projections.TimeOf(ctx, c.store, 1)
	if err != nil {
		return fmt.Errorf("controller: %s: the first event's time: %w", moment, err)
	}
	return commands.BeforeFirst(moment, first)
}

// notBeforeFirst refuses m, named moment, when it is before the first
// event (beforeFirst); a failed read is an error.
func (c *Controller) notBeforeFirst(ctx context.Context, moment string, m commands.Moment) error {
	if m.At.IsZero() {
		if m.Position > 0 {
			return nil
		}
		return c.beforeFirst(ctx, moment)
	}
	_, _, err := projections.PositionAt(ctx, c.store, m.At)
	if errors.Is(err, projections.ErrNoMoment) {
		return c.beforeFirst(ctx, moment)
	}
	if err != nil {
		return fmt.Errorf("controller: %s: %w", moment, err)
	}
	return nil
}

// At is a read-only Service answering as the mesh stood at at (see the
// comment above). Its writes are refused; a moment outside the history is
// a rejection (invalid).
func (c *Controller) At(ctx context.Context, at api.At) (api.Service, error) {
	v, err := c.AtView(ctx, at)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// AtView is At's Service with its controller (AtView.Controller): a
// CLI's local timeline queries it directly.
func (c *Controller) AtView(ctx context.Context, at api.At) (*AtView, error) {
	m, err := c.Moment(ctx, at)
	if err != nil {
		return nil, err
	}
	if v := c.ats.get(m.Position); v != nil {
		return &AtView{atView: v}, nil
	}
	set, r, err := projections.FoldTo(ctx, c.store, c.reg, m.Position, c.keeper)
	if err != nil {
		return nil, fmt.Errorf("controller: at position %d: %w", m.Position, err)
	}
	quick, err := c.readerAt(m.Position, set, r, func(f projections.Filter) ([]projections.Entry, error) {
		// c's timeline must hold the moment's entries: a controller not
		// running folds to it here (the view outlives the request that
		// made it, so not under that request's context).
		if err := c.syncTo(context.Background(), m.Position); err != nil {
			return nil, err
		}
		if f.Before == 0 || f.Before > m.Position+1 {
			f.Before = m.Position + 1
		}
		if f.After >= m.Position {
			return nil, nil
		}
		return c.queryTimeline(f)
	})
	if err != nil {
		return nil, err
	}
	v := &atView{Controller: quick, base: c, m: m}
	c.ats.put(v)
	return &AtView{atView: v}, nil
}

// readerAt is a standby controller over c's store ending at pos, with set
// folded there by r.
func (c *Controller) readerAt(pos uint64, set *projections.Set, r *projections.Runner, tl func(projections.Filter) ([]projections.Entry, error)) (*Controller, error) {
	return New(Config{
		Store: storeAt{c.store, pos}, Registry: c.reg, Clock: c.clock, Version: c.version, Logger: c.log,
		Standby: true, Views: set, Runner: r, TimelineQuery: tl,
	})
}

// AtView is the Service of one moment (Controller.AtView).
type AtView struct{ *atView }

// Local is the controller the moment's answers come from.
func (v *AtView) Local() *Controller { return v.Controller }

// AsOf is the moment answered for.
func (v *AtView) AsOf() api.Moment { return v.m }

type atView struct {
	*Controller // the projections folded from the nearest checkpoint
	base        *Controller
	m           api.Moment

	mu    sync.Mutex
	whole *Controller // folded from 0 to m, on first use
}

var _ api.Service = (*atView)(nil)

func (v *atView) asOf() *api.Moment { m := v.m; return &m }

// wholeOf is the moment's controller over projections folded from 0.
func (v *atView) wholeOf(ctx context.Context) (*Controller, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.whole != nil {
		return v.whole, nil
	}
	set, r, err := projections.FoldTo(ctx, v.base.store, v.base.reg, v.m.Position, nil)
	if err != nil {
		return nil, fmt.Errorf("controller: at position %d: %w", v.m.Position, err)
	}
	w, err := v.base.readerAt(v.m.Position, set, r, nil)
	if err != nil {
		return nil, err
	}
	v.whole = w
	return w, nil
}

// Status is each node's status at the moment.
func (v *atView) Status(ctx context.Context, req api.StatusRequest) (api.StatusResponse, error) {
	out, err := v.Controller.Status(ctx, req)
	out.AsOf = v.asOf()
	return out, err
}

// NodeShow is one node at the moment.
func (v *atView) NodeShow(ctx context.Context, node string) (api.NodeShow, error) {
	out, err := v.Controller.NodeShow(ctx, node)
	out.AsOf = v.asOf()
	return out, err
}

// Resources is what ran on a node at the moment.
func (v *atView) Resources(ctx context.Context, node string) (api.NodeResources, error) {
	out, err := v.Controller.Resources(ctx, node)
	out.AsOf = v.asOf()
	return out, err
}

// Timeline is a page of the timeline up to the moment.
func (v *atView) Timeline(ctx context.Context, req api.TimelineRequest) (api.TimelinePage, error) {
	out, err := v.Controller.Timeline(ctx, req)
	out.AsOf = v.asOf()
	return out, err
}

// Churn is each node's episodes at the moment.
func (v *atView) Churn(ctx context.Context, req api.ChurnRequest) (api.ChurnResponse, error) {
	out, err := v.Controller.Churn(ctx, req)
	out.AsOf = v.asOf()
	return out, err
}

// Roster is a node's declaration at the moment.
func (v *atView) Roster(ctx context.Context, node string) (api.ComposedDecl, error) {
	out, err := v.Controller.Roster(ctx, node)
	out.AsOf = v.asOf()
	return out, err
}

// NodeList is every node registered at the moment.
func (v *atView) NodeList(ctx context.Context) (api.NodeList, error) {
	out, err := v.Controller.NodeList(ctx)
	out.AsOf = v.asOf()
	return out, err
}

// ModuleList is every module defined at the moment.
func (v *atView) ModuleList(ctx context.Context) (api.ModuleList, error) {
	out, err := v.Controller.ModuleList(ctx)
	out.AsOf = v.asOf()
	return out, err
}

// ModuleShow is one module at the moment.
func (v *atView) ModuleShow(ctx context.Context, module string) (api.ModuleShow, error) {
	out, err := v.Controller.ModuleShow(ctx, module)
	out.AsOf = v.asOf()
	return out, err
}

// Why is every apply up to the moment that touched a resource.
func (v *atView) Why(ctx context.Context, req api.WhyRequest) (api.WhyResponse, error) {
	w, err := v.wholeOf(ctx)
	if err != nil {
		return api.WhyResponse{}, err
	}
	out, err := w.Why(ctx, req)
	out.AsOf = v.asOf()
	return out, err
}

// RosterHistory is every declaration composed for a node up to the moment.
func (v *atView) RosterHistory(ctx context.Context, node string) (api.RosterHistory, error) {
	w, err := v.wholeOf(ctx)
	if err != nil {
		return api.RosterHistory{}, err
	}
	out, err := w.RosterHistory(ctx, node)
	out.AsOf = v.asOf()
	return out, err
}

// RosterDiff is what changed between two declarations composed by the
// moment.
func (v *atView) RosterDiff(ctx context.Context, req api.RosterDiffRequest) (api.RosterDiff, error) {
	w, err := v.wholeOf(ctx)
	if err != nil {
		return api.RosterDiff{}, err
	}
	out, err := w.RosterDiff(ctx, req)
	out.AsOf = v.asOf()
	return out, err
}

// storeAt is store as it stood at pos: its head, reads and scans stop
// there, and it takes no append.
type storeAt struct {
	events.Store
	pos uint64
}

// errReadOnlyAt refuses an append to a past moment.
var errReadOnlyAt = errors.New("controller: a past moment takes no write")

func (s storeAt) Append(context.Context, string, events.ExpectedVersion, ...events.Event) ([]events.Event, error) {
	return nil, errReadOnlyAt
}

func (s storeAt) Head(context.Context) (uint64, error) { return s.pos, nil }

// ReadByID reads through the store (events.IDReader), as far as pos: an
// event stored after it is not found. Folds of a past moment look up by
// id what their checkpoint does not hold (a quiet report's held_since, a
// declaration stored by reference to its resources).
func (s storeAt) ReadByID(ctx context.Context, id uuid.UUID) (events.Event, error) {
	r, ok := s.Store.(events.IDReader)
	if !ok {
		return events.Event{}, fmt.Errorf("controller: read event %s: the store reads no event by id: %w", id, events.ErrNotFound)
	}
	ev, err := r.ReadByID(ctx, id)
	if err == nil && ev.Position > s.pos {
		return events.Event{}, fmt.Errorf("controller: event %s is after position %d: %w", id, s.pos, events.ErrNotFound)
	}
	return ev, err
}

func (s storeAt) ChainHead(ctx context.Context) (events.ChainHead, error) {
	evs, err := s.Store.ReadAll(ctx, s.pos-1, 1)
	if err != nil || len(evs) == 0 {
		return events.ChainHead{}, fmt.Errorf("controller: chain head at %d: %w", s.pos, cmpErr(err))
	}
	return events.ChainHead{Position: s.pos, Chain: evs[0].Chain, At: evs[0].At}, nil
}

func cmpErr(err error) error {
	if err == nil {
		return projections.ErrNoMoment
	}
	return err
}

func (s storeAt) ReadAll(ctx context.Context, after uint64, limit int) ([]events.Event, error) {
	if after >= s.pos {
		return nil, nil
	}
	if n := int(s.pos - after); limit <= 0 || limit > n {
		limit = n
	}
	return s.Store.ReadAll(ctx, after, limit)
}

func (s storeAt) ReadStream(ctx context.Context, stream string, after uint64, limit int) ([]events.Event, error) {
	evs, err := s.Store.ReadStream(ctx, stream, after, limit)
	for i, ev := range evs { // in version order, so in position order
		if ev.Position > s.pos {
			return evs[:i], err
		}
	}
	return evs, err
}

func (s storeAt) Subscribe(context.Context, uint64, func(events.Event) error) error {
	return errReadOnlyAt
}
