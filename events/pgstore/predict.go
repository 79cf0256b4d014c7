package pgstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"meshplane/events"
	"meshplane/events/internal/groupcommit"
)

// maxTailStreams bounds the stream versions the committer's tail keeps;
// past it the tail starts again from the group's streams.
const maxTailStreams = 1 << 14

// tail is the log as the committer's last commit left it: its head, the
// head's chain value, and the versions of the streams that commit (and the
// ones before it, while no other writer appended) read or wrote. Only the
// committer goroutine uses it. It is a prediction, not a cache that is
// trusted: commitPredicted checks, under the append lock, that the head is
// still the one it holds, which proves that nothing was appended since, and
// so that every version it holds is still the stream's.
type tail struct {
	ok       bool
	head     uint64
	chain    events.Hash // zero for an empty store or a head that predates the chain
	versions map[string]uint64
}

// errMissed is commitPredicted's signal that it could not predict the
// group (a stream the tail does not know, a request refused by its version,
// which may be a replay) or that the head moved (another writer appended):
// it wrote nothing, and the group goes by commitOnce.
var errMissed = errors.New("the log is not where the last commit left it")

// keep sets the tail after a commit that read the head head (with chain
// value start) under the lock, and wrote d. prev's versions are kept if
// prev was the log at that head: nothing was appended between the two.
func (s *Store) keep(prev tail, head uint64, start events.Hash, d decision) {
	t := tail{ok: true, head: d.head, chain: d.chain, versions: prev.versions}
	if !prev.ok || prev.head != head || prev.chain != start || len(prev.versions)+len(d.versions) > maxTailStreams {
		t.versions = make(map[string]uint64, len(d.versions))
	}
	for name, v := range d.versions {
		t.versions[name] = v
	}
	s.tail = t
}

// predictedInsert is queueInsert's statement, guarded: it writes its rows
// only if the head is still $13 with chain value $14, read after the lock
// in the statement's own snapshot (READ COMMITTED), so only if nothing was
// appended since the committer's last commit; else it writes nothing.
const predictedInsert = `INSERT INTO events (` + readColumns + `)
	SELECT * FROM unnest($1::bigint[], $2::uuid[], $3::text[], $4::bigint[], $5::text[], $6::integer[],
		$7::bigint[], $8::text[], $9::text[], $10::text[], $11::bytea[], $12::bytea[])
	WHERE (SELECT coalesce(max(position), 0) FROM events) = $13::bigint
		AND (SELECT chain FROM events WHERE position = $13::bigint) IS NOT DISTINCT FROM $14::bytea`

// predictedInsertOne is predictedInsert for one row, its columns as
// parameters rather than arrays of one: the usual lone append, which
// spends less of the server's time decoding arrays and planning unnest().
const predictedInsertOne = `INSERT INTO events (` + readColumns + `)
	SELECT $1::bigint, $2::uuid, $3::text, $4::bigint, $5::text, $6::integer,
		$7::bigint, $8::text, $9::text, $10::text, $11::bytea, $12::bytea
	WHERE (SELECT coalesce(max(position), 0) FROM events) = $13::bigint
		AND (SELECT chain FROM events WHERE position = $13::bigint) IS NOT DISTINCT FROM $14::bytea`

// rowArgs returns e as predictedInsertOne's first twelve parameters.
func rowArgs(e events.Event) []any {
	return append(make([]any, 0, 14), int64(e.Position), [16]byte(e.ID), e.Stream, int64(e.Version), e.Type, int32(e.Schema),
		e.At.UnixNano(), e.Actor, e.Causation, e.Correlation, []byte(e.Data), chainValue(e))
}

// missedMark is in the error of predictedCopy's guard.
const missedMark = "is not the predicted head"

// predictedCopy is the query of a large predicted group: the lock, the
// guard, and the COPY of its rows, in one simple query and so in one
// implicit transaction, which commits when the COPY ends (pgconn sends the
// rows without waiting for the server: one round trip). The guard fails
// the transaction, with an invalid cast naming missedMark, unless the head
// is t's with t's chain value (read after the lock, in the statement's own
// snapshot); its value is cast only when it fails, so it is not folded.
func predictedCopy(t tail) string {
	chain := "NULL"
	if !t.chain.IsZero() {
		chain = "decode('" + hex.EncodeToString(t.chain[:]) + "', 'hex')" // whatever standard_conforming_strings says
	}
	return fmt.Sprintf(`SELECT pg_advisory_xact_lock(%d, %d);
		SELECT (h.p::text || ' %s')::integer FROM (SELECT coalesce(max(position), 0) AS p FROM events) AS h
			WHERE h.p <> %d OR (SELECT chain FROM events WHERE position = %d) IS DISTINCT FROM %s;
		%s`, lockClass, lockAppend, missedMark, t.head, t.head, chain, copySQL)
}

// predictionErr turns the failure of predictedCopy's guard into errMissed,
// and so does a taken position (the head moved past the guard's read: a
// writer that bypassed the lock). Other errors are returned as they are.
func predictionErr(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "22P02" && strings.Contains(pgErr.Message, missedMark) ||
		pgErr.Code == "23505" && pgErr.ConstraintName == "events_pkey") {
		return errMissed
	}
	return err
}

// commitPredicted commits group in one round trip, in one implicit
// transaction: the lock, then every accepted row, at the positions and
// versions, and with the chain values, that follow the tail, written only
// if the head is still the tail's. Below copyMin rows that is a pgx batch
// (one Sync) of the lock and one INSERT (predictedInsert, or
// predictedInsertOne); from copyMin rows, one simple query (predictedCopy). Decided as commitOnce decides, against the
// tail rather than a read: ids are not looked up (a stored one fails the
// insert with errIDTaken), and a request refused by its version, or a
// stream the tail does not know, is errMissed before anything is sent. A
// head that moved is errMissed after the round trip, having written
// nothing.
func (s *Store) commitPredicted(group []*groupcommit.Request, t tail) ([]groupcommit.Result, error) {
	if !t.ok {
		return nil, errMissed
	}
	known := make(map[string]uint64, len(group))
	for _, r := range group {
		v, ok := t.versions[r.Stream]
		if !ok {
			return nil, errMissed
		}
		known[r.Stream] = v
	}
	d, complete := s.decide(group, t.head, t.chain, known, nil, false)
	if !complete {
		return nil, errMissed
	}
	if len(d.rows) == 0 { // every request replays one before it in the group
		s.keep(t, t.head, t.chain, d)
		return d.results, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.commitTimeout)
	defer cancel()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer conn.Release() // broken after a failure: the pool discards it
	if len(d.rows) >= copyMin {
		if err := copyRows(ctx, conn.Conn(), predictedCopy(t), d.rows); err != nil {
			return nil, fmt.Errorf("write %d events and commit: %w", len(d.rows), predictionErr(idTaken(err, false)))
		}
		s.keep(t, t.head, t.chain, d)
		return d.results, nil
	}
	b := &pgx.Batch{}
	b.Queue("SELECT pg_advisory_xact_lock($1, $2)", lockClass, lockAppend)
	var inserted int64
	sql, args := predictedInsert, insertArgs(d.rows)
	if len(d.rows) == 1 {
		sql, args = predictedInsertOne, rowArgs(d.rows[0])
	}
	args = append(args, int64(t.head), chainValue(events.Event{Chain: t.chain}))
	b.Queue(sql, args...).Exec(func(tag pgconn.CommandTag) error {
		inserted = tag.RowsAffected()
		return nil
	})
	if err := conn.Conn().SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("write %d events and commit: %w", len(d.rows), idTaken(err, false))
	}
	switch inserted {
	case int64(len(d.rows)):
	case 0:
		return nil, errMissed
	default: // cannot happen: one statement, one condition for all its rows
		return nil, fmt.Errorf("write %d events: %d inserted", len(d.rows), inserted)
	}
	s.keep(t, t.head, t.chain, d)
	return d.results, nil
}
