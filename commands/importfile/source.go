package importfile

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"meshplane/commands"
)

// The import file is read once. A regular file is read where it is, by
// both passes (the second refuses a line that changed in between). Any
// other file (a pipe, <(cat f), /dev/stdin, a FIFO, a device) gives its
// bytes once: the first pass copies what it reads to a temporary file (in
// os.TempDir, mode 0600) that the second pass reads and Checked.Close
// removes. Every read stops when its context is done, also one blocked on
// a FIFO whose writer is idle, or on opening a FIFO that has no writer
// yet. A line longer than MaxLine stops the read: the file is no export
// (/dev/zero is one endless line), and is refused whole (ErrLineTooLong).

// ErrLineTooLong means an import file has a line longer than MaxLine: it
// is no export file, and nothing of it is appended. The concrete error is
// a *commands.Rejection (code invalid) naming the line.
var ErrLineTooLong = errors.New("line longer than an export's bound")

// tooLong is the refusal of a line longer than MaxLine.
type tooLong struct{ *commands.Rejection }

// Unwrap reaches the rejection (its code) and ErrLineTooLong.
func (e tooLong) Unwrap() []error { return []error{e.Rejection, ErrLineTooLong} }

// source is the file an import reads: where the user named it, and the
// temporary copy of one that can be read only once.
type source struct {
	path  string // as given
	spool string // the copy the second pass reads, or ""
}

// readPath is the file the second pass reads.
func (s *source) readPath() string {
	if s.spool != "" {
		return s.spool
	}
	return s.path
}

// remove removes the spooled copy, if any.
func (s *source) remove() error {
	if s.spool == "" {
		return nil
	}
	err := os.Remove(s.spool)
	s.spool = ""
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("import: remove the copy of %s: %w", s.path, err)
	}
	return nil
}

// openCtx opens path for reading, giving up when ctx is done (opening a
// FIFO blocks until a writer opens it: that open is left to finish, and
// closed, in the background).
func openCtx(ctx context.Context, path string) (*os.File, error) {
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.Open(path)
		ch <- opened{f, err}
	}()
	select {
	case o := <-ch:
		return o.f, o.err
	case <-ctx.Done():
		go func() {
			if o := <-ch; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, context.Cause(ctx)
	}
}

// ctxReader reads f until ctx is done: a read blocked on a pipe or a FIFO
// (which the runtime's poller holds) is woken by a deadline in the past.
type ctxReader struct {
	ctx context.Context
	f   *os.File
}

func (r ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, context.Cause(r.ctx)
	}
	n, err := r.f.Read(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && r.ctx.Err() != nil {
		return n, context.Cause(r.ctx)
	}
	return n, err
}

// eachLine calls fn with the number of every non-blank line of the file
// and the line, trimmed. It reads s.path, copying what it reads to a new
// spool when s has none and the file is not a regular one, or the spool
// when s has one. A line longer than MaxLine stops it (ErrLineTooLong);
// so does ctx.
func eachLine(ctx context.Context, s *source, fn func(n int, line []byte) error) (err error) {
	path := s.readPath()
	f, err := openCtx(ctx, path)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	stop := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	var in io.Reader = ctxReader{ctx, f}
	if s.spool == "" {
		st, err := f.Stat()
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		if !st.Mode().IsRegular() {
			tmp, err := os.CreateTemp("", "mesh-import-*.jsonl")
			if err != nil {
				return fmt.Errorf("import: a copy of %s, which can be read only once: %w", s.path, err)
			}
			s.spool = tmp.Name()
			defer func() {
				if cerr := tmp.Close(); cerr != nil && err == nil {
					err = fmt.Errorf("import: the copy of %s: %w", s.path, cerr)
				}
			}()
			in = io.TeeReader(in, tmp)
		}
	}
	r := bufio.NewReaderSize(in, 64<<10)
	var buf []byte
	for n := 1; ; n++ {
		buf = buf[:0]
		var rerr error
		for {
			chunk, err := r.ReadSlice('\n')
			if len(buf)+len(chunk) > MaxLine+1 { // +1: the newline
				return tooLong{&commands.Rejection{Code: commands.CodeInvalid, Msg: fmt.Sprintf(
					"import %s: line %d is longer than %d bytes, the bound of an export file's line (an event's largest payload and its envelope): not an export file; nothing was appended",
					s.path, n, MaxLine)}}
			}
			buf = append(buf, chunk...)
			if err == bufio.ErrBufferFull {
				continue
			}
			rerr = err
			break
		}
		if line := bytes.TrimSpace(buf); len(line) > 0 {
			if err := fn(n, line); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("import %s: stopped at line %d: %w", s.path, n, context.Cause(ctx))
			}
			return fmt.Errorf("import %s: %w", s.path, rerr)
		}
	}
}
