package pgstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"meshplane/events"
	"meshplane/events/internal/groupcommit"
)

// Group bounds: the committer stops gathering requests for one transaction
// past either. A single request larger than both still commits, alone.
const (
	maxGroupRequests = 1024
	maxGroupBytes    = 16 << 20
)

// queueSize bounds the requests waiting for the committer; Append blocks
// (or honours its ctx) while it is full.
const queueSize = maxGroupRequests

// maxGatherWait bounds how long the committer waits for a group to fill
// (see groupcommit's gather), whatever the last commit took: after an
// outage that one may have taken seconds.
const maxGatherWait = 5 * time.Millisecond

// copyMin is the number of rows from which a group is written with COPY
// rather than one INSERT of unnest()ed arrays: COPY costs a round trip more,
// and less per row.
const copyMin = 64

// startCommitter starts the committer goroutine: events/internal/groupcommit's,
// around commitGroup.
func (s *Store) startCommitter() error {
	c, err := groupcommit.Start(s.commitGroup, groupcommit.Config{
		Queue: queueSize, MaxRequests: maxGroupRequests, MaxBytes: maxGroupBytes, MaxWait: maxGatherWait,
		Name: "pgstore",
	})
	s.commits = c
	return err
}

// Append implements events.Store. If it returns an error of its ctx,
// nothing was written. Any other error after the request reached the
// server (a lost connection during COMMIT, say) leaves the outcome unknown:
// appending the same events again is safe, since appends are idempotent by
// event id.
func (s *Store) Append(ctx context.Context, stream string, expected events.ExpectedVersion, evs ...events.Event) ([]events.Event, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("pgstore: append %s: %w", stream, err)
	}
	if !expected.Valid() {
		return nil, fmt.Errorf("pgstore: append %s: %w", stream,
			&events.InvalidError{Field: "expected", Reason: expected.String()})
	}
	prepared, err := events.Prepare(stream, evs, s.cfg.now())
	if err != nil {
		return nil, fmt.Errorf("pgstore: append %q: %w", stream, err)
	}
	r := &groupcommit.Request{Stream: stream, Expected: expected, Events: prepared}
	for _, e := range prepared {
		r.Size += len(e.Data) + 128
	}
	out, err := s.commits.Submit(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("pgstore: append %s: %w", stream, full(err))
	}
	return out, nil
}

// full is err, wrapped with events.ErrStoreFull when PostgreSQL said its
// disk is full (SQLSTATE 53100, disk_full): the transaction was rolled
// back, nothing was written.
func full(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "53100" {
		return fmt.Errorf("%w: %w", events.ErrStoreFull, err)
	}
	return err
}

// commitGroup is the committer's commit: commit, and what only PostgreSQL
// needs around it. A group that hit a unique violation (a writer outside
// this store's lock raced it) commits again request by request, so that
// only the request at fault fails, with the contract's error. Then the
// store's subscribers are woken, and, after a commit, other processes'
// (through the notifier), before any caller hears of its events.
func (s *Store) commitGroup(group []*groupcommit.Request) ([]groupcommit.Result, error) {
	results, err := s.commit(group)
	if isUnique(err) && len(group) > 1 {
		results, err = make([]groupcommit.Result, len(group)), nil
		for i, r := range group {
			if res, rerr := s.commit([]*groupcommit.Request{r}); rerr != nil {
				results[i] = groupcommit.Result{Err: s.uniqueErr(r, rerr)}
			} else {
				results[i] = res[0]
			}
		}
	} else if err != nil && len(group) == 1 {
		err = s.uniqueErr(group[0], err)
	}
	s.sig.Notify()
	if err == nil {
		s.notifyOthers()
	}
	return results, err
}

// pipelineRows bounds the rows of a group that commitPipelined takes:
// larger groups go by commitOnce, whose COPY costs less per row than
// INSERTs from unnest(), more than paying for its two more round trips.
const pipelineRows = 128

// commitPipelined commits a group in one round trip, in one implicit
// transaction (pgx sends a batch with one Sync, which PostgreSQL runs as one
// transaction): the lock, then one statement for each layer of the group
// (see layers), then the notification. Each statement reads the head and
// its streams' versions in its own statement snapshot (taken after the
// lock, and seeing the layers before it), keeps the requests whose expected
// version holds and inserts their rows, positions following the head in
// queue order. It returns each request's result, and the indices of the
// requests refused by their version, which wrote nothing and which commit
// decides again, looking their ids up (a refused request may be a replay).
// A stored id fails the whole transaction with errIDTaken.
//
// One statement a layer rather than one a request: the server's work for a
// statement (bind, plan, executor start, the head's lookup) cost more than
// its rows in a group of 8 one-event appends.
func (s *Store) commitPipelined(group []*groupcommit.Request) (results []groupcommit.Result, refused []int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.commitTimeout)
	defer cancel()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	defer conn.Release() // broken after a failure: the pool discards it
	b := &pgx.Batch{}
	b.Queue("SELECT pg_advisory_xact_lock($1, $2)", lockClass, lockAppend)
	first := make([]int64, len(group))
	version := make([]int64, len(group))
	inserted := make([]int, len(group))
	for _, layer := range layers(group) {
		rows := 0
		streams, expected := make([]string, len(layer)), make([]int64, len(layer))
		byStream := make(map[string]int, len(layer)) // stream -> index in group
		for k, i := range layer {
			r := group[i]
			streams[k], expected[k] = r.Stream, int64(r.Expected)
			byStream[r.Stream] = i
			rows += len(r.Events)
		}
		var (
			req                       = make([]int64, 0, rows) // the row's request: its index in streams, from 1
			ids                       = make([][16]byte, 0, rows)
			typ, actor, cause, correl = make([]string, 0, rows), make([]string, 0, rows), make([]string, 0, rows), make([]string, 0, rows)
			schema                    = make([]int32, 0, rows)
			at                        = make([]int64, 0, rows)
			data                      = make([][]byte, 0, rows)
		)
		for k, i := range layer {
			for _, e := range group[i].Events {
				req, ids, typ, schema, at = append(req, int64(k+1)), append(ids, e.ID), append(typ, e.Type), append(schema, int32(e.Schema)), append(at, e.At.UnixNano())
				actor, cause, correl, data = append(actor, e.Actor), append(cause, e.Causation), append(correl, e.Correlation), append(data, e.Data)
			}
		}
		// returned takes the layer's one row a stream: the first position and
		// version, and the count, of what its request inserted.
		returned := func(rows pgx.Rows) error {
			var stream string
			var p, v, n int64
			_, err := pgx.ForEachRow(rows, []any{&stream, &p, &v, &n}, func() error {
				i, ok := byStream[stream]
				if !ok || inserted[i] != 0 {
					return fmt.Errorf("the insert returned stream %q, not one of its own", stream)
				}
				first[i], version[i], inserted[i] = p, v, int(n)
				return nil
			})
			return err
		}
		if len(layer) == 1 {
			// The same, simpler to plan, for the usual layer of one.
			b.Queue(`WITH ins AS (INSERT INTO events (`+columns+`)
				SELECT h.p + u.n, u.id, $1, v.v + u.n, u.type, u.schema, u.at_ns, u.actor, u.causation, u.correlation, u.data
				FROM (SELECT coalesce(max(position), 0) AS p FROM events) AS h,
					(SELECT coalesce(max(version), 0) AS v FROM events WHERE stream = $1) AS v,
					unnest($3::uuid[], $4::text[], $5::integer[], $6::bigint[], $7::text[], $8::text[], $9::text[], $10::bytea[])
						WITH ORDINALITY AS u(id, type, schema, at_ns, actor, causation, correlation, data, n)
				WHERE $2::bigint < 0 OR v.v = $2::bigint
				RETURNING stream, position, version)
				SELECT stream, min(position), min(version), count(*) FROM ins GROUP BY stream`,
				streams[0], expected[0], ids, typ, schema, at, actor, cause, correl, data,
			).Query(returned)
			continue
		}
		b.Queue(`WITH h AS (SELECT coalesce(max(position), 0) AS p FROM events),
			q AS (SELECT q.k, q.stream, q.expected,
					coalesce((SELECT max(e.version) FROM events AS e WHERE e.stream = q.stream), 0) AS v
				FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS q(stream, expected, k)),
			r AS (SELECT k, stream, v FROM q WHERE expected < 0 OR v = expected),
			u AS (SELECT r.Stream, r.v + row_number() OVER (PARTITION BY u.k ORDER BY u.n) AS version,
					row_number() OVER (ORDER BY u.n) AS m,
					u.id, u.type, u.schema, u.at_ns, u.actor, u.causation, u.correlation, u.data
				FROM unnest($3::bigint[], $4::uuid[], $5::text[], $6::integer[], $7::bigint[], $8::text[], $9::text[], $10::text[], $11::bytea[])
					WITH ORDINALITY AS u(k, id, type, schema, at_ns, actor, causation, correlation, data, n)
				JOIN r ON r.k = u.k),
			ins AS (INSERT INTO events (`+columns+`)
				SELECT h.p + u.m, u.id, u.stream, u.version, u.type, u.schema, u.at_ns, u.actor, u.causation, u.correlation, u.data
				FROM u, h
				RETURNING stream, position, version)
			SELECT stream, min(position), min(version), count(*) FROM ins GROUP BY stream`,
			streams, expected, req, ids, typ, schema, at, actor, cause, correl, data,
		).Query(returned)
	}
	if err := conn.Conn().SendBatch(ctx, b).Close(); err != nil {
		return nil, nil, fmt.Errorf("write and commit: %w", idTaken(err, false))
	}
	results = make([]groupcommit.Result, len(group))
	for i, r := range group {
		switch inserted[i] {
		case 0:
			refused = append(refused, i)
			continue
		case len(r.Events):
		default: // cannot happen: one statement
			return nil, nil, fmt.Errorf("append %d events to %s: %d inserted", len(r.Events), r.Stream, inserted[i])
		}
		// A request's rows are consecutive in position (row_number over the
		// statement's rows, in request order) and in version: the smallest
		// returned are its first event's.
		for j := range r.Events {
			r.Events[j].Position, r.Events[j].Version = uint64(first[i])+uint64(j), uint64(version[i])+uint64(j)
		}
		results[i].Events = r.Events
	}
	return results, refused, nil
}

// layers splits group into runs of requests to distinct streams: a
// request is in the layer numbered by how many requests before it in the
// group append to its stream. The layers, in order, keep each stream's
// requests in queue order, which is all that orders them: requests to
// other streams do not affect each other's version checks, and the group
// commits as one.
func layers(group []*groupcommit.Request) [][]int {
	var out [][]int
	seen := make(map[string]int, len(group))
	for i, r := range group {
		l := seen[r.Stream]
		seen[r.Stream] = l + 1
		if l == len(out) {
			out = append(out, nil)
		}
		out[l] = append(out[l], i)
	}
	return out
}

// pipelinable reports whether commitPipelined takes group.
func pipelinable(group []*groupcommit.Request) bool {
	rows := 0
	for _, r := range group {
		rows += len(r.Events)
	}
	return rows <= pipelineRows
}

// errIDTaken is commit's signal that an id it did not look up was stored:
// the group is committed again, looking every id up.
var errIDTaken = errors.New("an id of the group is stored")

// commit appends group and returns each request's result; if it fails as
// a whole, err is set and nothing of the group was written (or, for a
// failure during the commit itself, the outcome is unknown).
//
// A group whose streams the committer knows goes by commitPredicted, one
// round trip, at the positions that follow the last commit; if another
// writer appended since, it writes nothing and the group goes by
// commitOnce, which reads the head first (and writes with COPY from copyMin
// rows). Either way a stored id that was not looked up fails the
// transaction with errIDTaken, and the group starts over by commitOnce with
// every id looked up first. (An unchained store, for benchmarks, takes
// groups of up to pipelineRows rows by commitPipelined, as before the
// chain.)
//
// The committer's tail is taken at the start: only a commit that
// succeeds leaves one, so after any failure the next group reads the head.
func (s *Store) commit(group []*groupcommit.Request) ([]groupcommit.Result, error) {
	prev := s.tail
	s.tail = tail{}
	if s.cfg.unchained && s.cfg.beforeWrite == nil && pipelinable(group) {
		return s.commitUnchained(group)
	}
	if !s.cfg.unchained && s.cfg.beforeWrite == nil {
		res, err := s.commitPredicted(group, prev)
		switch {
		case err == nil:
			return res, nil
		case errors.Is(err, errIDTaken):
			return s.commitOnce(group, true, tail{})
		case !errors.Is(err, errMissed):
			return nil, err
		}
		// commitOnce keeps prev's versions only if it reads prev's head.
	}
	res, err := s.commitOnce(group, false, prev)
	if errors.Is(err, errIDTaken) {
		return s.commitOnce(group, true, tail{})
	}
	return res, err
}

// commitUnchained is commit for an unchained store's small group: one
// pipelined round trip, and the requests it refuses by their version
// decided again by commitOnce, which looks their ids up (a replay succeeds
// whatever its expected version).
func (s *Store) commitUnchained(group []*groupcommit.Request) ([]groupcommit.Result, error) {
	results, refused, err := s.commitPipelined(group)
	if errors.Is(err, errIDTaken) {
		return s.commitOnce(group, true, tail{})
	}
	if err != nil || len(refused) == 0 {
		return results, err
	}
	again := make([]*groupcommit.Request, len(refused))
	for k, i := range refused {
		again[k] = group[i]
	}
	res, err := s.commitOnce(again, true, tail{})
	for k, i := range refused {
		if err != nil {
			results[i].Err = s.uniqueErr(group[i], err)
		} else {
			results[i] = res[k]
		}
	}
	s.tail = tail{} // commitPipelined leaves none
	return results, nil
}

// commitOnce commits group in one explicit transaction of two round trips
// (three with COPY): BEGIN, the lock, and one read of the head and the
// versions of the group's streams; then it decides each request in queue
// order (ids, then expected version; a refused request writes nothing and
// does not affect the others) and sends the accepted rows, the notification
// and COMMIT. With lookUpIDs the group's stored ids are read with the
// versions; without, only if some request fails its version check, in the
// same transaction, before every request is decided again.
func (s *Store) commitOnce(group []*groupcommit.Request, lookUpIDs bool, prev tail) ([]groupcommit.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.commitTimeout)
	defer cancel()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	// On any failure the connection is left in its transaction (or broken),
	// and the pool discards a connection released in that state: that is
	// the rollback.
	defer conn.Release()
	c := conn.Conn()

	var streams []string
	known := map[string]uint64{} // the streams' stored versions
	for _, r := range group {
		if _, ok := known[r.Stream]; !ok {
			known[r.Stream] = 0
			streams = append(streams, r.Stream)
		}
	}
	var head int64
	var headChain []byte // the chain value of head; NULL (nil) before the chain
	stored := map[uuid.UUID]events.Event{}
	// Round trip 1: begin, lock, read.
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SELECT pg_advisory_xact_lock($1, $2)", lockClass, lockAppend)
	// Read after the lock, in a statement snapshot of its own (READ
	// COMMITTED): it sees every commit of the previous holder. The head's
	// chain value is read with the head, so the chain goes on from the
	// position the rows go on from.
	b.Queue(`SELECT h.p, (SELECT chain FROM events WHERE position = h.p), s,
			coalesce((SELECT max(version) FROM events WHERE stream = s), 0)
		FROM (SELECT coalesce(max(position), 0) AS p FROM events) AS h, unnest($1::text[]) AS s`, streams).Query(func(rows pgx.Rows) error {
		var name string
		var v int64
		_, err := pgx.ForEachRow(rows, []any{&head, &headChain, &name, &v}, func() error {
			known[name] = uint64(v)
			return nil
		})
		return err
	})
	if lookUpIDs {
		queueIDs(b, group, stored)
	}
	if err := c.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("lock and read: %w", err)
	}

	var start events.Hash
	if len(headChain) != 0 && copy(start[:], headChain) != len(headChain) {
		return nil, fmt.Errorf("%w: chain value of position %d is %d bytes", errCorrupt, head, len(headChain))
	}
	d, complete := s.decide(group, uint64(head), start, known, stored, lookUpIDs)
	if !complete {
		lookUpIDs = true
		b = &pgx.Batch{}
		queueIDs(b, group, stored)
		if err := c.SendBatch(ctx, b).Close(); err != nil {
			return nil, fmt.Errorf("read ids: %w", err)
		}
		d, _ = s.decide(group, uint64(head), start, known, stored, lookUpIDs)
	}
	results, rows := d.results, d.rows
	if len(rows) == 0 {
		if _, err := c.Exec(ctx, "ROLLBACK"); err != nil {
			return nil, fmt.Errorf("rollback: %w", err)
		}
		s.keep(prev, uint64(head), start, d)
		return results, nil
	}
	if s.cfg.beforeWrite != nil {
		if err := s.cfg.beforeWrite(ctx); err != nil {
			return nil, err
		}
	}
	// Round trip 2 (and one more for COPY): write and commit.
	b = &pgx.Batch{}
	if len(rows) >= copyMin {
		if err := copyRows(ctx, c, copySQL, rows); err != nil {
			return nil, fmt.Errorf("write %d events: %w", len(rows), idTaken(err, lookUpIDs))
		}
	} else {
		queueInsert(b, rows)
	}
	b.Queue("COMMIT").Exec(func(tag pgconn.CommandTag) error {
		if tag.String() != "COMMIT" {
			return fmt.Errorf("the transaction was rolled back (%s)", tag)
		}
		return nil
	})
	if err := c.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("write %d events and commit: %w", len(rows), idTaken(err, lookUpIDs))
	}
	s.keep(prev, uint64(head), start, d)
	return results, nil
}

// decision is a group decided against a state of the log: each request's
// result, the rows to write, and the log after them (its head, the head's
// chain value, the versions of the group's streams).
type decision struct {
	results  []groupcommit.Result
	rows     []events.Event
	head     uint64
	chain    events.Hash
	versions map[string]uint64
}

// decide decides each request of group in queue order (ids, then the
// expected version; a refused request writes nothing and does not affect
// the others) against a log whose head is head, with chain value start,
// whose streams have the versions known and whose stored ids of the group
// are stored, and sets the accepted events' versions, positions and chain
// values. Unless lookedUp (stored holds every stored id of the group), a
// request refused by its version may be a replay: decide then reports the
// decision incomplete, and the caller looks the ids up and decides again.
func (s *Store) decide(group []*groupcommit.Request, head uint64, start events.Hash, known map[string]uint64,
	stored map[uuid.UUID]events.Event, lookedUp bool) (d decision, complete bool) {
	d = decision{results: make([]groupcommit.Result, len(group)), head: head, chain: start, versions: maps.Clone(known)}
	n := len(stored)
	for _, r := range group {
		n += len(r.Events)
	}
	// The stored events, and what the group accepts, which a later request
	// may replay; by pointer, since an Event is large and a group has up to
	// a thousand.
	accepted := make(map[uuid.UUID]*events.Event, n)
	for id, e := range stored {
		accepted[id] = &e
	}
	for i, r := range group {
		if done, err := replayed(r.Events, accepted); done || err != nil {
			d.results[i] = groupcommit.Result{Events: r.Events, Err: err}
			continue
		}
		v := d.versions[r.Stream]
		if !r.Expected.Check(v) {
			if !lookedUp {
				return d, false
			}
			d.results[i].Err = &events.VersionError{Stream: r.Stream, Expected: r.Expected, Actual: v}
			continue
		}
		for j := range r.Events {
			v++
			d.head++
			r.Events[j].Version, r.Events[j].Position = v, d.head
			if !s.cfg.unchained {
				// The chain value, computed in the transaction that
				// assigns the position, under its lock.
				r.Events[j].Chain = events.ChainOf(d.chain, r.Events[j])
				d.chain = r.Events[j].Chain
			}
			accepted[r.Events[j].ID] = &r.Events[j]
			d.rows = append(d.rows, r.Events[j])
		}
		d.versions[r.Stream] = v
		d.results[i].Events = r.Events
	}
	return d, true
}

// idTaken turns a violation of the id's uniqueness, in a transaction that
// did not look its ids up, into errIDTaken.
func idTaken(err error, lookedUp bool) error {
	var pgErr *pgconn.PgError
	if !lookedUp && errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "events_id_key" {
		return errIDTaken
	}
	return err
}

// queueIDs queues the read of whichever ids of group are stored, into
// stored.
func queueIDs(b *pgx.Batch, group []*groupcommit.Request, stored map[uuid.UUID]events.Event) {
	var ids [][16]byte
	for _, r := range group {
		for _, e := range r.Events {
			ids = append(ids, e.ID)
		}
	}
	b.Queue("SELECT "+readColumns+" FROM events WHERE id = ANY($1::uuid[])", ids).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			raw := rows.RawValues()
			e, err := decodeRow(raw, nil)
			if err != nil {
				return err
			}
			e.Data = append([]byte(nil), raw[10]...)
			stored[e.ID] = e
		}
		return rows.Err()
	})
}

// replayed decides a request's ids, by events.AlreadyStored, against the stored
// events (and those accepted earlier in the group). If the request replays
// them it fills evs with their versions and positions and reports done.
func replayed(evs []events.Event, known map[uuid.UUID]*events.Event) (done bool, err error) {
	var stored []events.Event // nil while no id is stored: the usual request
	for i, e := range evs {
		if old, ok := known[e.ID]; ok {
			if stored == nil {
				stored = make([]events.Event, len(evs))
			}
			stored[i] = *old
		}
	}
	if done, err = events.AlreadyStored(evs, stored); done {
		for i := range evs {
			evs[i].Version, evs[i].Position, evs[i].Chain = stored[i].Version, stored[i].Position, stored[i].Chain
		}
	}
	return done, err
}

var rowColumns = []string{"position", "id", "stream", "version", "type", "schema", "at_ns", "actor", "causation", "correlation", "data", "chain"}

// chainValue is e's chain value as a column: NULL when it has none (an
// unchained benchmark store).
func chainValue(e events.Event) []byte {
	if e.Chain.IsZero() {
		return nil
	}
	return e.Chain[:]
}

// copySQL is copyRows' statement: rowColumns, in COPY's binary format.
const copySQL = "COPY events (" + readColumns + ") FROM STDIN (FORMAT binary)"

// copyRows writes rows with COPY, in its binary format, encoded here
// (appendCopyRow) rather than value by value through pgx's type map, which
// cost the committer about a microsecond a row.
// sql is the query that holds the COPY: copySQL, or statements ending in it.
func copyRows(ctx context.Context, c *pgx.Conn, sql string, rows []events.Event) error {
	size := 19 + 2
	for _, e := range rows {
		size += 2 + 12*4 + 8 + 16 + 8 + 4 + 8 + 32 + len(e.Stream) + len(e.Type) + len(e.Actor) + len(e.Causation) + len(e.Correlation) + len(e.Data)
	}
	buf := make([]byte, 0, size)
	buf = append(buf, "PGCOPY\n\xff\r\n\x00"...)
	buf = append(buf, 0, 0, 0, 0, 0, 0, 0, 0) // flags, header extension length
	for _, e := range rows {
		buf = appendCopyRow(buf, e)
	}
	buf = binary.BigEndian.AppendUint16(buf, 0xffff) // the trailer: -1
	_, err := c.PgConn().CopyFrom(ctx, bytes.NewReader(buf), sql)
	return err
}

// appendCopyRow appends e as one tuple of COPY's binary format: the field
// count, then each of rowColumns as its length and its value in the
// type's binary form (bigint and integer big-endian, uuid its 16 bytes,
// text and bytea their bytes, a missing chain value NULL: length -1).
func appendCopyRow(buf []byte, e events.Event) []byte {
	be := binary.BigEndian
	i64 := func(b []byte, v int64) []byte { return be.AppendUint64(be.AppendUint32(b, 8), uint64(v)) }
	bs := func(b []byte, v []byte) []byte { return append(be.AppendUint32(b, uint32(len(v))), v...) }
	str := func(b []byte, v string) []byte { return append(be.AppendUint32(b, uint32(len(v))), v...) }
	buf = be.AppendUint16(buf, uint16(len(rowColumns)))
	buf = i64(buf, int64(e.Position))
	buf = bs(buf, e.ID[:])
	buf = str(buf, e.Stream)
	buf = i64(buf, int64(e.Version))
	buf = str(buf, e.Type)
	buf = be.AppendUint32(be.AppendUint32(buf, 4), uint32(int32(e.Schema)))
	buf = i64(buf, e.At.UnixNano())
	buf = str(buf, e.Actor)
	buf = str(buf, e.Causation)
	buf = str(buf, e.Correlation)
	buf = bs(buf, e.Data)
	if e.Chain.IsZero() {
		return be.AppendUint32(buf, 0xffffffff) // NULL
	}
	return bs(buf, e.Chain[:])
}

// queueInsert queues one INSERT of rows as unnest()ed arrays: one
// statement, one plan, whatever the number of rows.
func queueInsert(b *pgx.Batch, rows []events.Event) {
	b.Queue(`INSERT INTO events (`+readColumns+`)
		SELECT * FROM unnest($1::bigint[], $2::uuid[], $3::text[], $4::bigint[], $5::text[], $6::integer[],
			$7::bigint[], $8::text[], $9::text[], $10::text[], $11::bytea[], $12::bytea[])`,
		insertArgs(rows)...)
}

// insertArgs returns rows as the twelve arrays of queueInsert's
// statement, one a column of readColumns.
func insertArgs(rows []events.Event) []any {
	n := len(rows)
	var (
		pos, ver, at                      = make([]int64, n), make([]int64, n), make([]int64, n)
		ids                               = make([][16]byte, n)
		stream, typ, actor, cause, correl = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		schema                            = make([]int32, n)
		data, chain                       = make([][]byte, n), make([][]byte, n)
	)
	for i, e := range rows {
		pos[i], ids[i], stream[i], ver[i], typ[i], schema[i] = int64(e.Position), e.ID, e.Stream, int64(e.Version), e.Type, int32(e.Schema)
		at[i], actor[i], cause[i], correl[i], data[i], chain[i] = e.At.UnixNano(), e.Actor, e.Causation, e.Correlation, e.Data, chainValue(e)
	}
	return append(make([]any, 0, 14), pos, ids, stream, ver, typ, schema, at, actor, cause, correl, data, chain)
}

// isUnique reports whether err is a unique violation.
func isUnique(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// uniqueErr maps a unique violation of r's lone transaction, which only a
// writer that bypassed the append lock can cause, to the contract's error:
// a taken (stream, version) is a *VersionError with the stream's actual
// version, a taken id is ErrIDConflict. Never a silent success. Other
// errors are returned as they are.
func (s *Store) uniqueErr(r *groupcommit.Request, err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		return err
	}
	switch pgErr.ConstraintName {
	case "events_stream_version_key":
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.commitTimeout)
		defer cancel()
		var v int64
		if qerr := s.pool.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM events WHERE stream = $1", r.Stream).Scan(&v); qerr != nil {
			return fmt.Errorf("%w (%v), and reading the stream's version failed: %v", events.ErrWrongExpectedVersion, err, qerr)
		}
		return &events.VersionError{Stream: r.Stream, Expected: r.Expected, Actual: uint64(v)}
	case "events_id_key":
		return fmt.Errorf("%v: %w", err, events.ErrIDConflict)
	}
	return fmt.Errorf("a writer outside the append lock took a position: %w", err)
}
