package esdbdouble

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/google/uuid"
)

// TestAppendAsKurrentDB: the double answers appends as KurrentDB documents
// it: expected revisions, and idempotence by id at the expected revision.
func TestAppendAsKurrentDB(t *testing.T) {
	d, err := Start(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	cfg, err := esdb.ParseConnectionString(d.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = esdb.NoopLogging()
	c, err := esdb.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev := func(id uuid.UUID) esdb.EventData {
		return esdb.EventData{EventID: id, EventType: "test", ContentType: esdb.ContentTypeJson, Data: []byte(`{}`)}
	}
	a, b, x := uuid.New(), uuid.New(), uuid.New()
	steps := []struct {
		name     string
		expected esdb.ExpectedRevision
		ids      []uuid.UUID
		wantRev  uint64 // revision reported on success
		wantErr  string // in the wrong-expected-version error; "" for success
		written  int    // events in the stream afterwards
	}{
		{"stream exists, on a new stream", esdb.StreamExists{}, []uuid.UUID{a}, 0, "but got 'no_stream'", 0},
		{"no stream, on a new stream", esdb.NoStream{}, []uuid.UUID{a, b}, 1, "", 2},
		{"the same ids at the same expectation: nothing written", esdb.NoStream{}, []uuid.UUID{a, b}, 1, "", 2},
		{"the same ids with any: nothing written", esdb.Any{}, []uuid.UUID{a, b}, 1, "", 2},
		{"the second id alone after revision 0: nothing written", esdb.StreamRevision{Value: 0}, []uuid.UUID{b}, 1, "", 2},
		{"first id matches, second does not", esdb.NoStream{}, []uuid.UUID{a, x}, 0, "but got '1'", 2},
		{"no stream, on a written stream", esdb.NoStream{}, []uuid.UUID{x}, 0, "but got '1'", 2},
		{"a stale revision", esdb.StreamRevision{Value: 0}, []uuid.UUID{x}, 0, "but got '1'", 2},
		{"the current revision", esdb.StreamRevision{Value: 1}, []uuid.UUID{x}, 2, "", 3},
	}
	for _, st := range steps {
		var evs []esdb.EventData
		for _, id := range st.ids {
			evs = append(evs, ev(id))
		}
		res, err := c.AppendToStream(ctx, "s", esdb.AppendToStreamOptions{ExpectedRevision: st.expected}, evs...)
		switch {
		case st.wantErr == "" && err != nil:
			t.Errorf("%s: %v", st.name, err)
		case st.wantErr == "" && res.NextExpectedVersion != st.wantRev:
			t.Errorf("%s: revision %d, want %d", st.name, res.NextExpectedVersion, st.wantRev)
		case st.wantErr != "" && (err == nil || !strings.Contains(err.Error(), st.wantErr)):
			t.Errorf("%s: got %v, want a wrong expected version %q", st.name, err, st.wantErr)
		}
		if n := count(t, c, "s"); n != st.written {
			t.Errorf("%s: %d events in the stream, want %d", st.name, n, st.written)
		}
	}
	rs, err := c.ReadStream(ctx, "never", esdb.ReadStreamOptions{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var ee *esdb.Error
	if _, err := rs.Recv(); !errors.As(err, &ee) || ee.Code() != esdb.ErrorCodeResourceNotFound {
		t.Errorf("read of a stream never written: got %v, want ResourceNotFound", err)
	}
}

func count(t *testing.T, c *esdb.Client, stream string) int {
	t.Helper()
	rs, err := c.ReadStream(context.Background(), stream, esdb.ReadStreamOptions{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	n := 0
	for {
		_, err := rs.Recv()
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			return n // not found: 0
		}
		n++
	}
}

// TestTraffic: Traffic counts the events each kind of read sent, $ types
// and binary content among them.
func TestTraffic(t *testing.T) {
	d, err := Start(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	cfg, err := esdb.ParseConnectionString(d.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = esdb.NoopLogging()
	c, err := esdb.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = c.AppendToStream(ctx, "s", esdb.AppendToStreamOptions{},
		esdb.EventData{EventID: uuid.New(), EventType: "test", ContentType: esdb.ContentTypeJson, Data: []byte(`{}`)},
		esdb.EventData{EventID: uuid.New(), EventType: "$binary", ContentType: esdb.ContentTypeBinary, Data: []byte{0, 1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if n := count(t, c, "s"); n != 2 {
		t.Fatalf("%d events in the stream, want 2", n)
	}
	rs, err := c.ReadAll(ctx, esdb.ReadAllOptions{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := rs.Recv(); err != nil {
			break
		}
	}
	rs.Close()
	sub, err := c.SubscribeToAll(ctx, esdb.SubscribeToAllOptions{From: esdb.Start{}})
	if err != nil {
		t.Fatal(err)
	}
	for seen := 0; seen < 2; {
		ev := sub.Recv()
		if ev.SubscriptionDropped != nil {
			t.Fatal(ev.SubscriptionDropped.Error)
		}
		if ev.EventAppeared != nil {
			if r := ev.EventAppeared.OriginalEvent(); seen == 1 && (r.EventType != "$binary" || r.ContentType != "application/octet-stream" || string(r.Data) != "\x00\x01\x02") {
				t.Errorf("second event read back as type %q, content type %q, data %q", r.EventType, r.ContentType, r.Data)
			}
			seen++
		}
	}
	sub.Close()
	if got, want := d.Traffic(), (Traffic{All: 1, Stream: 2, Subscription: 2}); got != want {
		t.Errorf("Traffic() = %+v, want %+v", got, want)
	}
}
