package storeurl_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/events/esdbstore/esdbdouble"
	"meshplane/events/pgstore"
	"meshplane/events/pgstore/pgtest"
	"meshplane/events/storeurl"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &srv)) }

func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want storeurl.Kind // "" for ErrUnknown
	}{
		{"", storeurl.Bolt},
		{"bolt", storeurl.Bolt},
		{"memory", storeurl.Memory},
		{"postgres://u@h/db", storeurl.Postgres},
		{"postgresql://h/db", storeurl.Postgres},
		{"postgres://u:secret@h:5432/db?sslmode=disable", storeurl.Postgres},
		{"esdb://h:2113", storeurl.KurrentDB},
		{"esdb+discover://h:2113", storeurl.KurrentDB},
		{"kurrentdb://h:2113?tls=false", storeurl.KurrentDB},
		{"kurrentdb+discover://h:2113", storeurl.KurrentDB},
		{"mysql://h/db", ""},
		{"BOLT", ""},
		{"postgres:/h/db", ""},
		{"./events.db", ""},
		{"mem", ""},
	} {
		t.Run(tc.url, func(t *testing.T) {
			got, err := storeurl.KindOf(tc.url)
			if got != tc.want {
				t.Fatalf("KindOf(%q) = %q, %v; want %q", tc.url, got, err, tc.want)
			}
			if tc.want == "" && !errors.Is(err, storeurl.ErrUnknown) {
				t.Fatalf("KindOf(%q): %v, want ErrUnknown", tc.url, err)
			}
			if tc.want != "" && err != nil {
				t.Fatalf("KindOf(%q): %v", tc.url, err)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://mesh:secret@db:5432/mesh", "postgres://mesh:xxxxx@db:5432/mesh"},
		{"postgres://mesh@db/mesh", "postgres://mesh@db/mesh"},
		{"esdb://admin:changeit@127.0.0.1:2113?tls=false", "esdb://admin:xxxxx@127.0.0.1:2113?tls=false"},
		{"esdb://127.0.0.1:2113?tls=false", "esdb://127.0.0.1:2113?tls=false"},
		{"postgres://mesh:secret@db:notaport/mesh", "postgres://mesh:xxxxx@db:notaport/mesh"},
		{"postgres://mesh:p@ss@db:x/mesh", "postgres://mesh:xxxxx@db:x/mesh"},
		{"postgres://mesh@db:x/mesh", "postgres://mesh@db:x/mesh"},
		{"postgres://db:x/mesh", "postgres://db:x/mesh"},
		{"bolt", "bolt"},
		{"", ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if got := storeurl.Redact(tc.in); got != tc.want {
				t.Fatalf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		url  string
		o    storeurl.Options
		want string
	}{
		{"", storeurl.Options{Data: "d"}, "bolt " + filepath.Join("d", "events.db")},
		{"bolt", storeurl.Options{Data: ".mesh"}, "bolt " + filepath.Join(".mesh", "events.db")},
		{"memory", storeurl.Options{}, "memory"},
		{"postgres://mesh:secret@db/mesh", storeurl.Options{}, "postgres postgres://mesh:xxxxx@db/mesh"},
		{"kurrentdb://h:2113", storeurl.Options{}, "esdb kurrentdb://h:2113"},
		{"mysql://u:secret@h/db", storeurl.Options{}, "mysql://u:xxxxx@h/db"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			if got := storeurl.Describe(tc.url, tc.o); got != tc.want {
				t.Fatalf("Describe(%q) = %q, want %q", tc.url, got, tc.want)
			}
		})
	}
}

// TestOpenErrors: every refusal names what was wrong, carries the
// sentinel a caller branches on, never the URL's password, and leaves no
// file behind.
func TestOpenErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none")
	for _, tc := range []struct {
		name string
		url  string
		o    storeurl.Options
		is   error  // errors.Is, when set
		says string // in the message
	}{
		{"unknown kind", "mysql://mesh:s3cret@h/db", storeurl.Options{}, storeurl.ErrUnknown, `"mysql://mesh:xxxxx@h/db"`},
		{"bolt without data", "bolt", storeurl.Options{}, storeurl.ErrOptions, "no data directory"},
		{"read-only and create", "", storeurl.Options{Data: missing, ReadOnly: true, Create: true}, storeurl.ErrOptions, "read-only and create"},
		{"read-only, no file", "", storeurl.Options{Data: missing, ReadOnly: true}, os.ErrNotExist, filepath.Join(missing, "events.db")},
		{"writing, not creating, no file", "bolt", storeurl.Options{Data: missing}, os.ErrNotExist, filepath.Join(missing, "events.db")},
		{"postgres unreachable", "postgres://mesh:s3cret@127.0.0.1:1/mesh?connect_timeout=5", storeurl.Options{}, nil, "postgres://mesh:xxxxx@127.0.0.1:1/mesh"},
		{"postgres bad URL", "postgres://mesh:s3cret@h:notaport/mesh", storeurl.Options{}, nil, "open the event store at"},
		{"esdb bad URL", "esdb://admin:s3cret@h:2113?tls=maybe", storeurl.Options{}, nil, "esdb://admin:xxxxx@h:2113"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s, err := storeurl.Open(ctx, tc.url, tc.o)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q) opened; want an error", tc.url)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("Open(%q): %v; want it to wrap %v", tc.url, err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("Open(%q): %v; want it to say %q", tc.url, err, tc.says)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("Open(%q): %v; names the password", tc.url, err)
			}
			if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s left behind (%v)", missing, err)
			}
		})
	}
}

func event() events.Event {
	return events.Event{ID: events.NewID(), Type: events.TypeNodeRegistered, Schema: 1, Data: []byte(`{"node":"a"}`), At: time.Unix(1, 0).UTC()}
}

// appendOne appends one event to s and checks the head.
func appendOne(t *testing.T, ctx context.Context, s events.Store) {
	t.Helper()
	if _, err := s.Append(ctx, "node-a", events.Any, event()); err != nil {
		t.Fatalf("append: %v", err)
	}
	if h, err := s.Head(ctx); err != nil || h != 1 {
		t.Fatalf("head %d, %v; want 1", h, err)
	}
}

func TestOpenBolt(t *testing.T) {
	ctx := context.Background()
	data := filepath.Join(t.TempDir(), "a", "b")
	w, err := storeurl.Open(ctx, "bolt", storeurl.Options{Data: data, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := w.(*boltstore.Store); !ok {
		t.Fatalf("bolt opened a %T", w)
	}
	appendOne(t, ctx, w)
	// A writer holds the file: another is refused, a reader too.
	for _, o := range []storeurl.Options{{Data: data}, {Data: data, ReadOnly: true}} {
		s, err := storeurl.Open(ctx, "", o)
		if err == nil {
			s.Close()
			t.Fatalf("Open(%+v) beside a writer opened", o)
		}
		if !errors.Is(err, boltstore.ErrLocked) {
			t.Fatalf("Open(%+v) beside a writer: %v, want boltstore.ErrLocked", o, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := storeurl.Open(ctx, "", storeurl.Options{Data: data, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if h, err := r.Head(ctx); err != nil || h != 1 {
		t.Fatalf("read-only head %d, %v; want 1", h, err)
	}
	if _, err := r.Append(ctx, "node-b", events.Any, event()); !errors.Is(err, boltstore.ErrReadOnly) {
		t.Fatalf("append to a read-only store: %v, want boltstore.ErrReadOnly", err)
	}
}

func TestOpenMemory(t *testing.T) {
	ctx := context.Background()
	s, err := storeurl.Open(ctx, "memory", storeurl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	appendOne(t, ctx, s)
}

// TestOpenPostgres: read-only leaves a fresh database unmigrated (and so
// refuses it, naming mesh store migrate); writing migrates it.
func TestOpenPostgres(t *testing.T) {
	pgtest.Need(t, srv)
	ctx := context.Background()
	for _, scheme := range []string{"postgres://", "postgresql://"} {
		t.Run(scheme, func(t *testing.T) {
			url := scheme + strings.TrimPrefix(srv.Database(t), "postgres://")
			if _, err := storeurl.Open(ctx, url, storeurl.Options{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "mesh store migrate") {
				t.Fatalf("read-only open of a fresh database: %v, want it refused naming mesh store migrate", err)
			}
			w, err := storeurl.Open(ctx, url, storeurl.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := w.(*pgstore.Store); !ok {
				t.Fatalf("postgres opened a %T", w)
			}
			appendOne(t, ctx, w)
			w.Close()
			r, err := storeurl.Open(ctx, url, storeurl.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if h, err := r.Head(ctx); err != nil || h != 1 {
				t.Fatalf("head %d, %v; want 1", h, err)
			}
		})
	}
}

// TestOpenKurrentDB opens both spellings against the gRPC double of
// esdbdouble, and a stream prefix keeps two stores apart on one server.
func TestOpenKurrentDB(t *testing.T) {
	d, err := esdbdouble.Start(esdbdouble.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kurrent := "kurrentdb" + strings.TrimPrefix(d.URL(), "esdb")
	for i, url := range []string{d.URL(), kurrent} {
		s, err := storeurl.Open(ctx, url, storeurl.Options{StreamPrefix: []string{"one-", "two-"}[i]})
		if err != nil {
			t.Fatalf("Open(%q): %v", url, err)
		}
		appendOne(t, ctx, s) // head 1: the other prefix's event is not seen
		s.Close()
	}
}
