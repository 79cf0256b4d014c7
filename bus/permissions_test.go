package bus_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"meshplane/bus"
	"meshplane/bus/natstest"
	"meshplane/events"
	"meshplane/wire"
)

// rawNode connects to s with node's credentials as a plain NATS client, to
// try what the bus's own client never does. Its asynchronous errors (the
// server's permission refusals of publishes and subscriptions) arrive on
// the returned channel.
func rawNode(t *testing.T, s *bus.Server, node string) (*nats.Conn, <-chan error) {
	t.Helper()
	c := natstest.Creds(t, s, node)
	errs := make(chan error, 100)
	nc, err := nats.Connect(s.URL(), nats.UserJWTAndSeed(c.JWT, c.Seed), nats.CustomInboxPrefix(bus.NodeInbox(node)),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc, errs
}

// violation waits for a permissions violation naming subject.
func violation(t *testing.T, errs <-chan error, subject string) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case err := <-errs:
			if strings.Contains(strings.ToLower(err.Error()), "permissions violation") && strings.Contains(err.Error(), subject) {
				return
			}
		case <-deadline:
			t.Fatalf("no permissions violation for %q within 5s", subject)
		}
	}
}

// TestPermissions holds NodePermissions on the real server: node a can
// read its own key and publish its own reports, and nothing of node b's;
// it can create no JetStream consumer, not even of its own key.
func TestPermissions(t *testing.T) {
	s := natstest.Start(t)
	ctl := natstest.Controller(t, s)
	rec := newRecorder()
	consume(t, ctl, rec)
	ctx := ctxT(t)
	for _, node := range []string{"a", "b", "a.b"} {
		if _, err := ctl.PutDeclaration(ctx, decl(node, 1)); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("its own key and reports", func(t *testing.T) {
		n := natstest.Node(t, s, "a")
		if d, _, err := n.Latest(ctx); err != nil || d.ID != "a/1" {
			t.Fatalf("own Latest: %s, %v", d.ID, err)
		}
		w, err := n.Watch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if d := next(t, w); d.ID != "a/1" {
			t.Fatalf("own watch: %s", d.ID)
		}
		r := report("a", "a/1")
		if _, err := n.PublishReport(ctx, r); err != nil {
			t.Fatal(err)
		}
		if got := rec.wait(t); got.ApplyID != r.ApplyID {
			t.Fatalf("recorded %s, want %s", got.ApplyID, r.ApplyID)
		}
	})

	t.Run("its own workload changes, on its own subject only", func(t *testing.T) {
		// What the engine runs travels in a report (wire.Workload): a
		// node's credentials publish it on its own subject, never on
		// another node's (below: "cannot publish mesh.report.b").
		n := natstest.Node(t, s, "a")
		r := report("a", "a/1")
		r.Workload = &wire.Workload{Changes: []events.ContainerChange{{Node: "a", Module: "m", Container: "web", Declaration: "a/1",
			State: events.WorkloadCrashLooping, At: r.AppliedAt, ExitCode: 1, Restarts: 2}}}
		if _, err := n.PublishReport(ctx, r); err != nil {
			t.Fatal(err)
		}
		got := rec.wait(t)
		if got.ApplyID != r.ApplyID || got.Workload == nil || len(got.Workload.Changes) != 1 || got.Workload.Changes[0].Container != "web" {
			t.Fatalf("recorded %+v, want a's report with its workload", got)
		}
		other := report("b", "b/1")
		other.Workload = r.Workload
		if _, err := n.PublishReport(ctx, other); err == nil {
			t.Fatal("a published a report on b's subject")
		}
	})

	nc, errs := rawNode(t, s, "a")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	short := func() context.Context {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		t.Cleanup(cancel)
		return c
	}

	for _, key := range []string{"b", "a.b"} {
		t.Run("cannot get "+key+"'s key", func(t *testing.T) {
			subj := "$JS.API.DIRECT.GET.KV_" + bus.DeclarationsBucket + "." + bus.DeclarationSubject(key)
			if m, err := nc.RequestWithContext(short(), subj, nil); err == nil {
				t.Fatalf("got %s's declaration: %s", key, m.Data)
			}
			violation(t, errs, subj)
		})
	}

	for _, subj := range []string{
		"$JS.API.CONSUMER.CREATE.KV_" + bus.DeclarationsBucket, // the legacy ephemeral create: no filter in the subject
		"$JS.API.CONSUMER.CREATE.KV_" + bus.DeclarationsBucket + ".x." + bus.DeclarationSubject("b"),
		"$JS.API.CONSUMER.CREATE.KV_" + bus.DeclarationsBucket + ".x." + bus.DeclarationSubject("a"), // no consumer at all, even of its own key
		"$JS.API.CONSUMER.CREATE.KV_" + bus.DeclarationsBucket + ".x." + bus.RosterSubject,
		"$JS.API.CONSUMER.CREATE." + bus.ReportsStream + ".x." + bus.ReportSubject("a"),
		"$JS.API.CONSUMER.DURABLE.CREATE.KV_" + bus.DeclarationsBucket + ".x",
		"$JS.API.CONSUMER.DELETE.KV_" + bus.DeclarationsBucket + ".x",
		"$JS.API.STREAM.INFO.KV_" + bus.DeclarationsBucket,
		"$JS.FC.KV_" + bus.DeclarationsBucket + ".x",
		"$JS.API.STREAM.MSG.GET.KV_" + bus.DeclarationsBucket, // a get by sequence or by any subject
		"$JS.API.DIRECT.GET.KV_" + bus.DeclarationsBucket,     // a direct get with the subject in the body
		"$JS.API.CONSUMER.LIST.KV_" + bus.DeclarationsBucket,
		"$JS.API.CONSUMER.DELETE." + bus.ReportsStream + "." + bus.ReportsConsumer,
		"$JS.API.STREAM.PURGE.KV_" + bus.DeclarationsBucket,
		"$KV." + bus.DeclarationsBucket + ".a", // writing its own declaration
		bus.ReportSubject("b"),
		bus.ReportSubject("a.b"),
	} {
		t.Run("cannot publish "+subj, func(t *testing.T) {
			if err := nc.Publish(subj, []byte("{}")); err != nil {
				t.Fatal(err)
			}
			violation(t, errs, subj)
		})
	}

	for _, subj := range []string{
		"$KV." + bus.DeclarationsBucket + ".b",
		"$KV." + bus.DeclarationsBucket + ".>",
		"mesh.report.>",
		bus.RepublishSubject("b"),
		bus.RepublishSubject("a.b"),
		"mesh.decl.>",
		"mesh.decl.*",
		"_INBOX.>",
		bus.NodeInbox("b") + ".>",
		bus.NodeInbox("a.b") + ".>",
		"_INBOX.controller.>",
		">",
	} {
		t.Run("cannot subscribe "+subj, func(t *testing.T) {
			if _, err := nc.SubscribeSync(subj); err != nil {
				t.Fatal(err)
			}
			violation(t, errs, subj)
		})
	}

	t.Run("b's report published with a's credentials is never recorded", func(t *testing.T) {
		r := report("b", "b/1")
		b, err := bus.EncodeReport(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(short(), bus.ReportSubject("b"), b, jetstream.WithMsgID(r.ApplyID.String())); err == nil {
			t.Fatal("the stream acknowledged b's report from a")
		}
		rec.none(t, 500*time.Millisecond)
	})

	t.Run("its own user cannot pass for another node", func(t *testing.T) {
		c := natstest.Creds(t, s, "a")
		c.Node = "b"
		if _, err := bus.DialNode(ctx, c, bus.NodeOptions{}); !errors.Is(err, bus.ErrBadCreds) {
			t.Fatalf("dial with a's user as b: %v, want ErrBadCreds", err)
		}
	})
}
