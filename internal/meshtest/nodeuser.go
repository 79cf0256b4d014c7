package meshtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"meshplane/api/httpapi"
	"meshplane/bus"
)

// DialAsNode connects to the bus as creds' node user, the way an agent
// would but without one, so a test can try what that user may not do.
// Refusals are expected and not logged; the connection closes when t ends.
func DialAsNode(t *testing.T, creds bus.Creds) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(strings.Join(creds.URLs, ","), nats.UserJWTAndSeed(creds.JWT, creds.Seed),
		nats.CustomInboxPrefix(bus.NodeInbox(creds.Node)),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})) // refusals are expected
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// CheckOtherNodeRefused runs two subtests over js, connected as node
// mine's user: reading node theirs's declaration and publishing a report
// on theirs's subject must both be refused.
func CheckOtherNodeRefused(t *testing.T, ctx context.Context, js jetstream.JetStream, mine, theirs string) {
	t.Helper()
	t.Run("read "+theirs+"'s declaration", func(t *testing.T) {
		gctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		kv, err := js.KeyValue(gctx, bus.DeclarationsBucket)
		if err == nil {
			_, err = kv.Get(gctx, theirs)
		}
		if err == nil {
			t.Fatalf("%s's user read %s's declaration", mine, theirs)
		}
	})
	t.Run("publish "+theirs+"'s report", func(t *testing.T) {
		br, err := bus.ReportOf(theirs, AgentReportFor(theirs))
		if err != nil {
			t.Fatal(err)
		}
		b, err := bus.EncodeReport(br)
		if err != nil {
			t.Fatal(err)
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if _, err := js.Publish(pctx, bus.ReportSubject(theirs), b, jetstream.WithMsgID(br.ApplyID.String())); err == nil {
			t.Fatalf("%s's user published on %s's report subject", mine, theirs)
		}
	})
}

// StoreHead is the position of the last event in c's controller's store.
func StoreHead(t *testing.T, ctx context.Context, c *httpapi.Client) uint64 {
	t.Helper()
	i, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return i.StoreHead
}

// CheckStoreStill fails t if c's controller's store has grown past before
// (a storeHead taken earlier).
func CheckStoreStill(t *testing.T, ctx context.Context, c *httpapi.Client, before uint64) {
	t.Helper()
	if after := StoreHead(t, ctx, c); after != before {
		t.Errorf("the store grew from %d to %d events", before, after)
	}
}
