package bus_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"meshplane/bus"
	"meshplane/bus/natstest"
)

// controllerJS is s's JetStream as the controller's user reaches it, on a
// connection of its own closed when the test ends.
func controllerJS(t *testing.T, s *bus.Server) jetstream.JetStream {
	t.Helper()
	user, err := s.Authority().Issuer().Controller()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(s.URL(), nats.UserJWTAndSeed(user.JWT, user.Seed))
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

// consumersOf counts the consumers of stream.
func consumersOf(t *testing.T, js jetstream.JetStream, stream string) int {
	t.Helper()
	st, err := js.Stream(ctxT(t), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Consumers
}

// durableCreate is a request to create durable consumer name on the
// declarations bucket's stream, filtering node's key, delivering to
// deliver ("" for a pull consumer), on the create subject that names the
// filter (the one a node's user was once granted).
func durableCreate(name, node, deliver string) (subject string, body []byte) {
	cfg := map[string]any{
		"durable_name": name, "name": name, "filter_subject": bus.DeclarationSubject(node),
		"deliver_policy": "last_per_subject", "ack_policy": "none",
	}
	if deliver != "" {
		cfg["deliver_subject"] = deliver
	}
	body, _ = json.Marshal(map[string]any{"stream_name": bus.DeclarationsStream, "config": cfg})
	return "$JS.API.CONSUMER.CREATE." + bus.DeclarationsStream + "." + name + "." + bus.DeclarationSubject(node), body
}

// TestOneNodeCannotTakeTheWatchesOfOthers (issue 31 item 3, issue 32 item
// 1): n1's user tries to create 1,100 durable consumers of the
// declarations bucket, then n2 joins, watches and converges on a push.
// With this build's users none is created (a node may create no consumer:
// agents hear their key republished); with a user minted by an older
// build (it holds CONSUMER.CREATE on its key) at most the stream's limit
// is, and n2, whose watch needs no consumer, converges all the same, and
// so does n3 with an older user (its watch polls by direct get). Before,
// n1 made 1,000 and every watch after it failed with "maximum consumers
// limit reached".
func TestOneNodeCannotTakeTheWatchesOfOthers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		user    func(*bus.Issuer, string) (bus.User, error)
		atMost  int
		replies bool // the server answers the creations (else it drops them: a permissions violation)
	}{
		{"this build's user", func(i *bus.Issuer, node string) (bus.User, error) { return i.Node(node) }, 0, false},
		{"an older build's user", bus.NodeBeforeRepublish, 16, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := natstest.Start(t)
			ctl := natstest.Controller(t, s)
			ctx := ctxT(t)
			js := controllerJS(t, s)

			u, err := tc.user(s.Authority().Issuer(), "n1")
			if err != nil {
				t.Fatal(err)
			}
			errs := make(chan error, 2000)
			nc, err := nats.Connect(s.URL(), nats.UserJWTAndSeed(u.JWT, u.Seed), nats.CustomInboxPrefix(bus.NodeInbox("n1")),
				nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
					select {
					case errs <- err:
					default:
					}
				}))
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			answers, err := nc.SubscribeSync(bus.NodeInbox("n1") + ".creates")
			if err != nil {
				t.Fatal(err)
			}
			const tries = 1100
			for i := range tries {
				subj, body := durableCreate(fmt.Sprintf("d%04d", i), "n1", "")
				if err := nc.PublishRequest(subj, bus.NodeInbox("n1")+".creates", body); err != nil {
					t.Fatal(err)
				}
			}
			if err := nc.FlushWithContext(ctx); err != nil {
				t.Fatal(err)
			}
			created := 0
			if tc.replies {
				for range tries {
					m, err := answers.NextMsgWithContext(ctx)
					if err != nil {
						t.Fatalf("answers to n1's creations: %v", err)
					}
					var resp struct {
						Error *struct{ Description string } `json:"error"`
					}
					if err := json.Unmarshal(m.Data, &resp); err != nil {
						t.Fatal(err)
					}
					if resp.Error == nil {
						created++
					}
				}
			} else {
				violation(t, errs, "$JS.API.CONSUMER.CREATE")
				if m, err := answers.NextMsg(500 * time.Millisecond); err == nil {
					t.Fatalf("the server answered a creation from n1: %s", m.Data)
				}
			}
			if got := consumersOf(t, js, bus.DeclarationsStream); got > tc.atMost || created > tc.atMost {
				t.Fatalf("n1 made %d consumers (%d on the stream), want at most %d", created, got, tc.atMost)
			}
			t.Logf("n1 made %d consumers of %d tried", created, tries)

			n2 := natstest.Node(t, s, "n2")
			w, err := n2.Watch(ctx)
			if err != nil {
				t.Fatalf("n2 watches after n1's creations: %v", err)
			}
			defer w.Stop()
			if _, err := ctl.PutDeclaration(ctx, decl("n2", 1)); err != nil {
				t.Fatal(err)
			}
			if d := next(t, w); d.ID != "n2/1" {
				t.Fatalf("n2 got %s", d.ID)
			}

			old, err := bus.NodeBeforeRepublish(s.Authority().Issuer(), "n3")
			if err != nil {
				t.Fatal(err)
			}
			n3, err := bus.DialNode(ctx, bus.Creds{Version: 1, Node: "n3", URLs: []string{s.URL()}, JWT: old.JWT, Seed: old.Seed}, bus.NodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer n3.Close()
			w3, err := n3.Watch(ctx)
			if err != nil {
				t.Fatalf("n3, an older build's user, watches after n1's creations: %v", err)
			}
			defer w3.Stop()
			if _, err := ctl.PutDeclaration(ctx, decl("n3", 1)); err != nil {
				t.Fatal(err)
			}
			if d := next(t, w3); d.ID != "n3/1" {
				t.Fatalf("n3 got %s", d.ID)
			}
		})
	}
}

// TestNodeCannotDeliverToAnother (issue 31 item 3): n1 cannot make the
// server deliver its key to n2's dry-run subject (a push consumer whose
// deliver subject is mesh.plan.n2: before, n2's agent got n1's
// declaration), nor hear n2's key republished.
func TestNodeCannotDeliverToAnother(t *testing.T) {
	s := natstest.Start(t)
	ctl := natstest.Controller(t, s)
	ctx := ctxT(t)
	n2raw, _ := rawNode(t, s, "n2")
	heard, err := n2raw.SubscribeSync(bus.PlanSubject("n2"))
	if err != nil {
		t.Fatal(err)
	}
	if err := n2raw.FlushWithContext(ctx); err != nil {
		t.Fatal(err)
	}

	nc, errs := rawNode(t, s, "n1")
	subj, body := durableCreate("push", "n1", bus.PlanSubject("n2"))
	if err := nc.PublishRequest(subj, bus.NodeInbox("n1")+".x", body); err != nil {
		t.Fatal(err)
	}
	violation(t, errs, subj)
	if _, err := nc.SubscribeSync(bus.RepublishSubject("n2")); err != nil {
		t.Fatal(err)
	}
	violation(t, errs, bus.RepublishSubject("n2"))

	if _, err := ctl.PutDeclaration(ctx, decl("n1", 1)); err != nil {
		t.Fatal(err)
	}
	if m, err := heard.NextMsg(time.Second); err == nil {
		t.Fatalf("n2's plan subject got %q from n1's key", m.Data)
	}
	if got := consumersOf(t, controllerJS(t, s), bus.DeclarationsStream); got != 0 {
		t.Fatalf("%d consumers on the declarations stream", got)
	}
}

// TestBucketOfAnOlderBuildIsUpdated: a bucket made by an older build (no
// RePublish, no consumer limit), holding a declaration, is brought up to
// date in place when the controller dials: the value kept, republished
// from then on, consumers bounded.
func TestBucketOfAnOlderBuildIsUpdated(t *testing.T) {
	s := natstest.Start(t)
	ctx := ctxT(t)
	js := controllerJS(t, s)
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: bus.DeclarationsBucket, History: 1, Storage: jetstream.FileStorage, MaxValueSize: 8<<20 - 64<<10,
	})
	if err != nil {
		t.Fatal(err)
	}
	old, _ := json.Marshal(decl("a", 1))
	if _, err := kv.Put(ctx, "a", old); err != nil {
		t.Fatal(err)
	}
	ctl := natstest.Controller(t, s)
	st, err := js.Stream(ctx, bus.DeclarationsStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	if cfg.RePublish == nil || cfg.RePublish.Destination != bus.RepublishSubjectPrefix+">" || cfg.MaxConsumers != 16 {
		t.Fatalf("the bucket's stream after the controller's start: republish %+v, max consumers %d", cfg.RePublish, cfg.MaxConsumers)
	}
	n := natstest.Node(t, s, "a")
	w, err := n.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if d := next(t, w); d.ID != "a/1" {
		t.Fatalf("kept value: %s", d.ID)
	}
	if _, err := ctl.PutDeclaration(ctx, decl("a", 2)); err != nil {
		t.Fatal(err)
	}
	if d := next(t, w); d.ID != "a/2" {
		t.Fatalf("republished: %s", d.ID)
	}
}
