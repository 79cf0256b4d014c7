package api

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// At is a moment of history a read asks for (mesh ... --at, ?at= on the
// API's GET endpoints): a position, or a time, which resolves to the last
// event at or before it. The zero At is now.
type At struct {
	Position uint64
	Time     time.Time
}

// ParseAt reads a moment as ReadMoment does (the one reading of
// TIME|POSITION, diff's and revert's too): a position or an RFC 3339 time.
// What does not parse is a plain error (bad usage); position 0, before the
// first event, is the refusal every verb gives such a moment
// (BeforeFirst: a *Rejection), since the zero At is now.
func ParseAt(s string) (At, error) {
	if s == "" {
		return At{}, errors.New("empty: want a position or an RFC 3339 time")
	}
	p, t, err := ReadMoment(s)
	if err != nil {
		return At{}, fmt.Errorf("%q: want a position of 1 or more, or an RFC 3339 time (2026-12-01T23:02:00Z)", s)
	}
	if t.IsZero() && p == 0 {
		return At{}, BeforeFirst("at position 0", time.Time{})
	}
	return At{Position: p, Time: t}, nil
}

// IsZero reports whether a is now (no moment asked).
func (a At) IsZero() bool { return a.Position == 0 && a.Time.IsZero() }

// String is a as ParseAt reads it ("" for now).
func (a At) String() string {
	switch {
	case a.Position > 0:
		return strconv.FormatUint(a.Position, 10)
	case !a.Time.IsZero():
		return a.Time.Format(time.RFC3339Nano)
	}
	return ""
}

// Moment is what an answer as of a past moment answers for: the position
// of the last event folded and that event's time. Answers carry it as
// "as_of" (absent when the answer is for now).
type Moment struct {
	Position uint64    `json:"position"`
	Time     time.Time `json:"time"`
}

// Historian is a Service that answers as of a past moment: the controller
// (projections folded to it) and the Client (?at= on each read). The
// Service returned answers reads only; its answers carry AsOf. A moment
// before the first event or past the head is a rejection (invalid).
type Historian interface {
	At(ctx context.Context, at At) (Service, error)
}

// AsOfer is an answer that may say the moment it answers for.
type AsOfer interface {
	Moment() *Moment
}

// Moment is the moment r answers for (nil: now).
func (r StatusResponse) Moment() *Moment { return r.AsOf }

// Moment is the moment r answers for (nil: now).
func (r NodeShow) Moment() *Moment { return r.AsOf }

// Moment is the moment r answers for (nil: now).
func (r ChurnResponse) Moment() *Moment { return r.AsOf }

// Moment is the moment r answers for (nil: now).
func (r WhyResponse) Moment() *Moment { return r.AsOf }

// Moment is the moment r answers for (nil: now).
func (r ComposedDecl) Moment() *Moment { return r.AsOf }

// Moment is the moment r answers for (nil: now).
func (r RosterHistory) Moment() *Moment { return r.AsOf }

// Moment is the moment r answers for (nil: now).
func (r RosterDiff) Moment() *Moment { return r.AsOf }

// Moment is the moment r answers for (nil: now).
func (r NodeList) Moment() *Moment { return r.AsOf }

// Moment is the moment r answers for (nil: now).
func (r ModuleList) Moment() *Moment { return r.AsOf }

// Moment is the moment r answers for (nil: now).
func (r ModuleShow) Moment() *Moment { return r.AsOf }

// Moment is the moment r answers for (nil: now).
func (r TimelinePage) Moment() *Moment { return r.AsOf }

// Moment is the moment r answers for (nil: now).
func (r NodeResources) Moment() *Moment { return r.AsOf }
