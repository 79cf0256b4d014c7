package docker

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/docker/docker/api/types/container"

	"meshplane/agent"
)

// Container logs (agent.LogReader): the engine's log of a managed
// container of this node, read with timestamps so that a chunk has a
// cursor, the timestamps taken off again.

var _ agent.LogReader = (*Runtime)(nil)

// logsEngine is the part of the Docker client that reads a container's log
// (*client.Client has it). An Engine without it reads none.
type logsEngine interface {
	ContainerLogs(ctx context.Context, id string, options container.LogsOptions) (io.ReadCloser, error)
}

// quiet is how long a follow waits for more once a line came, before it
// answers with what it has.
const quiet = 300 * time.Millisecond

// maxFrame bounds one frame of the engine's log stream (the engine cuts a
// line at 16 KiB).
const maxFrame = 1 << 20

// ReadLogs implements agent.LogReader. q is as agent.LogQuery.Check
// leaves it.
func (r *Runtime) ReadLogs(ctx context.Context, name string, q agent.LogQuery) (agent.LogChunk, error) {
	// The engine ends a follow at once on a container that is not running
	// (one in its restart back-off, between two crashes): while the wait
	// lasts and nothing came, ask again.
	end := time.Now().Add(time.Duration(q.WaitMillis) * time.Millisecond)
	for {
		ch, err := r.readLogs(ctx, name, q)
		left := time.Until(end)
		if err != nil || len(ch.Data) > 0 || q.WaitMillis <= 0 || left <= followAgain {
			return ch, err
		}
		select {
		case <-ctx.Done():
			return ch, nil
		case <-time.After(followAgain):
		}
		q.WaitMillis = int((left - followAgain) / time.Millisecond)
	}
}

// followAgain is how long a follow that the engine ended with nothing
// waits before it asks again.
const followAgain = 250 * time.Millisecond

func (r *Runtime) readLogs(ctx context.Context, name string, q agent.LogQuery) (agent.LogChunk, error) {
	if err := done(ctx, "logs", name); err != nil {
		return agent.LogChunk{}, err
	}
	le, ok := r.eng.(logsEngine)
	if !ok {
		return agent.LogChunk{}, fmt.Errorf("docker: logs %s: this engine reads no logs: %w", name, agent.ErrNoLogs)
	}
	ids, err := r.find(ctx, "logs", name)
	if err != nil {
		return agent.LogChunk{}, err
	}
	opt := container.LogsOptions{ShowStdout: true, ShowStderr: true, Timestamps: true, Tail: "all"}
	if q.Since.IsZero() {
		if q.Tail > 0 {
			opt.Tail = strconv.Itoa(q.Tail)
		}
	} else {
		opt.Since = fmt.Sprintf("%d.%09d", q.Since.Unix(), q.Since.Nanosecond())
	}
	wait := time.Duration(q.WaitMillis) * time.Millisecond
	opt.Follow = wait > 0
	start := time.Now().UTC() // a tail with no line follows from here
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rc, err := le.ContainerLogs(lctx, ids[0], opt)
	if err != nil {
		return agent.LogChunk{}, fail("logs", name, err)
	}
	defer rc.Close()
	lines := make(chan logLine, 64)
	errc := make(chan error, 1)
	go func() { errc <- frames(lctx, rc, lines) }()

	var (
		ch      agent.LogChunk
		kept    []logLine // a tail's lines, the last MaxBytes of them
		size    int
		timeout <-chan time.Time
	)
	if opt.Follow {
		timeout = time.After(wait)
	}
	add := func(l logLine) (full bool) {
		if !q.Since.IsZero() && !l.at.IsZero() && !l.at.After(q.Since) {
			return false // the engine's since is inclusive
		}
		if q.Since.IsZero() { // a tail: keep the last
			kept = append(kept, l)
			size += len(l.text)
			for size > q.MaxBytes && len(kept) > 0 {
				size -= len(kept[0].text)
				kept, ch.Cut = kept[1:], true
			}
			return false
		}
		if size+len(l.text) > q.MaxBytes {
			ch.Cut = true
			return true
		}
		kept = append(kept, l)
		size += len(l.text)
		return false
	}
	var end error
loop:
	for {
		select {
		case l := <-lines:
			if add(l) {
				break loop
			}
			if opt.Follow && len(kept) > 0 {
				timeout = time.After(quiet)
			}
		case end = <-errc:
			for l := range drain(lines) {
				if add(l) {
					break
				}
			}
			break loop
		case <-timeout:
			break loop
		case <-ctx.Done():
			return agent.LogChunk{}, fmt.Errorf("docker: logs %s: %w", name, ctx.Err())
		}
	}
	cancel()
	if end != nil && !errors.Is(end, context.Canceled) {
		return agent.LogChunk{}, fail("logs", name, end)
	}
	var buf bytes.Buffer
	for _, l := range kept {
		buf.Write(l.text)
		if !l.at.IsZero() {
			ch.Cursor = l.at
		}
	}
	ch.Data = buf.Bytes()
	if ch.Cursor.IsZero() {
		ch.Cursor = q.Since
		if q.Since.IsZero() {
			ch.Cursor = start
		}
	}
	return ch, nil
}

type logLine struct {
	at   time.Time
	text []byte
}

// drain is what is left in lines once its writer ended.
func drain(lines chan logLine) func(func(logLine) bool) {
	return func(yield func(logLine) bool) {
		for {
			select {
			case l := <-lines:
				if !yield(l) {
					return
				}
			default:
				return
			}
		}
	}
}

// frames reads the engine's multiplexed log stream (an 8-byte header: the
// stream, then the size; then the payload, one timestamped line) into
// lines, until it ends (nil), fails, or ctx ends.
func frames(ctx context.Context, r io.Reader, lines chan<- logLine) error {
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(hdr[4:])
		if n > maxFrame {
			return fmt.Errorf("a log frame of %d bytes", n)
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(r, p); err != nil {
			return err
		}
		l := logLine{text: p}
		if i := bytes.IndexByte(p, ' '); i > 0 {
			if at, err := time.Parse(time.RFC3339Nano, string(p[:i])); err == nil {
				l = logLine{at: at, text: p[i+1:]}
			}
		}
		select {
		case lines <- l:
		case <-ctx.Done(): // the reader left
			return ctx.Err()
		}
	}
}
