// Package pgscratch starts throwaway PostgreSQL clusters: the machine's own
// initdb, pg_ctl and postgres, in a temporary directory, on a free port,
// with the unix socket in that directory. No container, no service manager.
// It is what `mesh scenario run --store postgres` and `mesh sim --store
// postgres` run on, and what pgtest (test helpers only) builds on; it links
// no testing code, so that the shipped binary carries none.
//
// As root, the cluster runs as the "postgres" user (PostgreSQL refuses to
// run as root): the temporary directory is handed to that user, and every
// binary is started with its uid and gid.
//
// The cluster keeps PostgreSQL's defaults for durability (fsync on,
// synchronous_commit on); only initdb runs with --no-sync, since a cluster
// that is thrown away need not survive a crash of its own creation.
package pgscratch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoPostgres means the PostgreSQL server binaries were not found.
var ErrNoPostgres = errors.New("pgscratch: PostgreSQL binaries (initdb, pg_ctl) not found")

// Server is a throwaway cluster. Its methods are safe for concurrent use,
// except Stop, Start and Close, which a test calls from one goroutine.
type Server struct {
	bin    string // directory of initdb, pg_ctl, postgres
	dir    string // temporary directory: data/, the socket, the log
	port   int
	listen string              // listen_addresses, 127.0.0.1 by default
	wrap   []string            // a command line the binaries run under (Options.Wrap)
	cred   *syscall.Credential // nil unless we run as root
	dbs    atomic.Int64        // databases made, for unique names
}

// Bin returns the directory holding the PostgreSQL binaries: $PGTEST_BIN if
// set, else the directory of initdb on $PATH, else the newest
// /usr/lib/postgresql/*/bin.
func Bin() (string, error) {
	if d := os.Getenv("PGTEST_BIN"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err != nil {
			return "", fmt.Errorf("%w in $PGTEST_BIN (%s)", ErrNoPostgres, d)
		}
		return d, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", ErrNoPostgres
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// Options choose where a cluster of StartWith listens and how its binaries
// run; the zero value is Start's.
type Options struct {
	// Listen is the server's listen_addresses (127.0.0.1 when empty).
	Listen string
	// Port is its port (a free one on loopback when 0).
	Port int
	// Wrap is a command line each binary (initdb, pg_ctl) runs under, such
	// as {"ip", "netns", "exec", "NS"} to run the server in a network
	// namespace. As root the wrapper runs as root, and the binary as the
	// postgres user under it (setpriv).
	Wrap []string
}

// Start makes a new cluster in a temporary directory and starts it. Close
// stops it and removes the directory.
func Start(ctx context.Context) (*Server, error) { return StartWith(ctx, Options{}) }

// StartWith is Start with Options.
func StartWith(ctx context.Context, o Options) (*Server, error) {
	bin, err := Bin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgscratch-")
	if err != nil {
		return nil, fmt.Errorf("pgscratch: %w", err)
	}
	s := &Server{bin: bin, dir: dir, listen: o.Listen, port: o.Port, wrap: o.Wrap}
	if s.listen == "" {
		s.listen = "127.0.0.1"
	}
	if os.Geteuid() == 0 {
		if s.cred, err = postgresUser(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		if err := os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("pgscratch: hand %s to the postgres user: %w", dir, err)
		}
	}
	if err := s.run(ctx, "initdb", "-D", s.data(), "-U", "postgres", "--auth=trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if s.listen != "127.0.0.1" {
		// Beyond loopback: trust every client of the (private, test-made)
		// network too, as initdb's --auth=trust does on loopback.
		if err := s.trustAll(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if s.port == 0 {
		if s.port, err = freePort(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := s.Start(ctx); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// trustAll lets every TCP client in without a password (pg_hba.conf).
func (s *Server) trustAll() error {
	f, err := os.OpenFile(filepath.Join(s.data(), "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("pgscratch: %w", err)
	}
	_, err = f.WriteString("host all all 0.0.0.0/0 trust\nhost all all ::/0 trust\n")
	return errors.Join(err, f.Close())
}

func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgscratch: running as root needs a postgres user to run the server as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// freePort asks the kernel for a free TCP port on the loopback address.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgscratch: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// Log returns the path of the server's log file.
func (s *Server) Log() string { return filepath.Join(s.dir, "postgres.log") }

// run runs one of the PostgreSQL binaries, as the postgres user when root.
func (s *Server) run(ctx context.Context, name string, args ...string) error {
	line := append([]string{filepath.Join(s.bin, name)}, args...)
	if len(s.wrap) > 0 && s.cred != nil {
		line = append([]string{"setpriv", fmt.Sprintf("--reuid=%d", s.cred.Uid), fmt.Sprintf("--regid=%d", s.cred.Gid), "--clear-groups", "--"}, line...)
	}
	line = append(append([]string{}, s.wrap...), line...)
	cmd := exec.CommandContext(ctx, line[0], line[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Dir = s.dir
	if s.cred != nil && len(s.wrap) == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pgscratch: %s %v: %w\n%s", name, args, err, out.Bytes())
	}
	return nil
}

// Start starts the server (again, after Stop) on its port and waits until
// it accepts connections.
func (s *Server) Start(ctx context.Context) error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=%s -c max_connections=300", s.port, s.dir, s.listen)
	if err := s.run(ctx, "pg_ctl", "-D", s.data(), "-l", s.Log(), "-o", opts, "-w", "-t", "60", "start"); err != nil {
		return err
	}
	return nil
}

// Stop stops the server with pg_ctl stop -m fast: open connections are
// ended and acknowledged commits stay, as when an operator restarts it.
func (s *Server) Stop(ctx context.Context) error {
	return s.run(ctx, "pg_ctl", "-D", s.data(), "-m", "fast", "-w", "-t", "60", "stop")
}

// Close stops the server if it runs and removes its directory.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	if _, statErr := os.Stat(filepath.Join(s.data(), "postmaster.pid")); statErr == nil {
		err = s.Stop(ctx)
	}
	if rmErr := os.RemoveAll(s.dir); err == nil {
		err = rmErr
	}
	return err
}

// URL returns the connection URL of database db, over the unix socket.
func (s *Server) URL(db string) string {
	q := url.Values{"host": {s.dir}, "port": {strconv.Itoa(s.port)}, "user": {"postgres"}, "sslmode": {"disable"}}
	return (&url.URL{Scheme: "postgres", Path: "/" + db, RawQuery: q.Encode()}).String()
}

// TCPURL returns the connection URL of database db over TCP on the
// listen address (127.0.0.1 unless Options.Listen said otherwise).
func (s *Server) TCPURL(db string) string {
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", net.JoinHostPort(s.listen, strconv.Itoa(s.port)), db)
}

// CreateDatabase makes a new empty database and returns its URL.
func (s *Server) CreateDatabase(ctx context.Context) (string, error) {
	name := fmt.Sprintf("t%d_%d", os.Getpid(), s.dbs.Add(1))
	if err := s.exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("pgscratch: create database %s: %w", name, err)
	}
	return s.URL(name), nil
}

// DropDatabase drops a database made by CreateDatabase, ending its
// connections.
func (s *Server) DropDatabase(ctx context.Context, dbURL string) error {
	u, err := url.Parse(dbURL)
	if err != nil {
		return fmt.Errorf("pgscratch: drop %s: %w", dbURL, err)
	}
	name := pgx.Identifier{u.Path[1:]}.Sanitize()
	if err := s.exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("pgscratch: drop database %s: %w", name, err)
	}
	return nil
}

func (s *Server) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// TB is the part of testing.TB that Database uses (a *testing.T or
// *testing.B), so that this package links no testing code.
type TB interface {
	Helper()
	Fatal(args ...any)
	Errorf(format string, args ...any)
	Cleanup(func())
}

// Database makes a fresh database for one test or benchmark, dropped when
// it ends, and returns its URL.
func (s *Server) Database(tb TB) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u, err := s.CreateDatabase(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.DropDatabase(ctx, u); err != nil {
			tb.Errorf("%v", err)
		}
	})
	return u
}
