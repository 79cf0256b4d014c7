package controllerd_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/bus"
	"meshplane/commands"
	"meshplane/controllerd"
	"meshplane/events"
	"meshplane/internal/meshtest"
	"meshplane/internal/testwait"
	"meshplane/projections"
)

// TestDaemonForgedReports is issue 17's forged reports, each published
// with n1's own credentials on n1's own report subject against a running
// controller (controllerd.Run: its embedded bus, a bolt store, the API): the
// counts that killed it, a report for n2's declaration and for one never
// pushed, dated 1900 and 9999, one over the size the door takes and one
// over what the stream takes, a used apply id with other content, another
// stream's event id as apply id, another node's report, a message that is
// no report at all, the same message twice, a report of a node that is not
// registered, and a burst of 300. The controller must stay up and
// answering, record exactly one report.refused for each refused message
// (the right reason, the message's digest, never its bytes), count every
// refusal by reason, leave nothing on the bus to redeliver, record every
// report of the burst the stream took (rate-limited, not lost), and then
// record a good report.
func TestDaemonForgedReports(t *testing.T) {
	ctx := context.Background()
	logs := &meshtest.LockedBuffer{}
	data := t.TempDir()
	d := meshtest.StartDaemon(t, data, "", func(c *controllerd.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(logs, nil))
		c.ReportLimit = bus.RateLimit{Rate: 200, Burst: 20, Every: 200 * time.Millisecond}
	})
	reg, err := d.Client.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: meshtest.TestOperator, Nodes: []string{"n1", "n2"}})
	if err != nil {
		t.Fatal(err)
	}
	n2Event := reg.Results[1].Events[0].ID // node.registered, on node-n2
	meshtest.DaemonSetUp(t, d.Client, []string{"n1", "n2"})
	st := must(d.Client.Status(ctx, api.StatusRequest{Nodes: []string{"n1", "n2"}}))(t)
	if len(st.Nodes) != 2 || st.Nodes[0].Pushed == nil || st.Nodes[1].Pushed == nil {
		t.Fatalf("status %+v: want both nodes pushed", st.Nodes)
	}
	decl, n2Decl := st.Nodes[0].Pushed.Declaration, st.Nodes[1].Pushed.Declaration

	// n1's real credentials, as `mesh node register n1 --creds` writes them:
	// an agent's connection, and a raw one for what no agent would send.
	creds, err := bus.LoadCreds(d.Creds(t, "n1"))
	if err != nil {
		t.Fatal(err)
	}
	agentConn, err := bus.DialNode(ctx, creds, bus.NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(agentConn.Close)
	js := meshtest.DialAsNode(t, creds)
	publish := func(t *testing.T, b []byte) error {
		t.Helper()
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := js.Publish(pctx, bus.ReportSubject("n1"), b) // no message id: the stream does not deduplicate it
		return err
	}
	wire := func(r bus.Report) []byte { // as is, unchecked
		r.Version = 1
		return meshtest.Marshal(t, r)
	}
	good := func() bus.Report {
		id := uuid.Must(uuid.NewV7())
		return bus.Report{
			Version: 1, Node: "n1", ApplyID: id, AppliedAt: time.Now().UTC(),
			Outcome: events.ApplyReported{Node: "n1", Declaration: decl, Sent: 1, Applied: 1, Unchanged: 1, ApplyID: id.String()},
		}
	}

	// A good report first, whose apply id is then used again.
	first := good()
	if _, err := agentConn.PublishReport(ctx, first); err != nil {
		t.Fatal(err)
	}
	waitTimeline(t, d.Client, "n1", events.TypeApplyReported, 1)

	// What each refused message is, and the reason it must be refused for.
	type forged struct {
		name, reason string
		data         []byte
	}
	var refused []forged
	add := func(name, reason string, r bus.Report, edit func(*bus.Report)) {
		edit(&r)
		refused = append(refused, forged{name, reason, wire(r)})
	}
	add("counts below zero (the panic)", events.RefusedCounts, good(), func(r *bus.Report) {
		r.Outcome = events.ApplyReported{Node: "n1", Declaration: decl, Unchanged: -1, Sent: 0, Applied: 0, Created: []string{}}
	})
	refused = append(refused, forged{"the bare outcome, no report", events.RefusedMalformed, []byte(`{"unchanged":-1,"sent":0,"applied":0,"created":[]}`)})
	add("another node's report", events.RefusedWrongNode, good(), func(r *bus.Report) { r.Node, r.Outcome.Node = "n2", "n2" })
	add("n2's declaration", events.RefusedDecl, good(), func(r *bus.Report) { r.Outcome.Declaration = n2Decl })
	add("a declaration never pushed", events.RefusedDecl, good(), func(r *bus.Report) { r.Outcome.Declaration = "n1/999" })
	add("dated 1900", events.RefusedTime, good(), func(r *bus.Report) { r.AppliedAt = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC) })
	add("dated 9999", events.RefusedTime, good(), func(r *bus.Report) { r.AppliedAt = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC) })
	add("over the door's size", events.RefusedTooLarge, good(), func(r *bus.Report) {
		r.Outcome.Created, r.Outcome.Sent, r.Outcome.Applied = []string{strings.Repeat("x", bus.MaxReportSize)}, 2, 2
	})
	add("a used apply id, other content", events.RefusedApplyID, first, func(r *bus.Report) {
		r.Outcome.Digest = "sha256:other"
	})
	add("another stream's event id", events.RefusedApplyID, good(), func(r *bus.Report) {
		r.ApplyID = uuid.MustParse(n2Event)
		r.Outcome.ApplyID = n2Event
	})
	// Issue 31: a held_since that names no held list (items 1), what a
	// report may say (item 2).
	add("held_since: the issue's id", events.RefusedMalformed, good(), func(r *bus.Report) {
		r.Outcome.HeldSince = "00000000-0000-4000-8000-000000000001"
	})
	add("held_since: another node's event", events.RefusedMalformed, good(), func(r *bus.Report) { r.Outcome.HeldSince = n2Event })
	add("held_since: not an id", events.RefusedMalformed, good(), func(r *bus.Report) { r.Outcome.HeldSince = "not-a-uuid" })
	add("held_since: its own report that held nothing", events.RefusedMalformed, good(), func(r *bus.Report) {
		r.Outcome.HeldSince = first.ApplyID.String()
	})
	add("sent 0, applied 5, unchanged 5", events.RefusedCounts, good(), func(r *bus.Report) {
		r.Outcome.Sent, r.Outcome.Applied, r.Outcome.Unchanged = 0, 5, 5
	})
	add("counts of the largest int", events.RefusedCounts, good(), func(r *bus.Report) {
		r.Outcome.Sent, r.Outcome.Applied, r.Outcome.Unchanged = math.MaxInt64, math.MaxInt64, math.MaxInt64
	})
	add("more than the declaration has", events.RefusedCounts, good(), func(r *bus.Report) {
		r.Outcome.Sent, r.Outcome.Applied, r.Outcome.Unchanged = 5, 5, 5
	})
	add("created a resource the declaration lacks", events.RefusedCounts, good(), func(r *bus.Report) {
		r.Outcome.Unchanged, r.Outcome.Created = 0, []string{"evil-resource"}
	})
	add("removed a resource no declaration had", events.RefusedCounts, good(), func(r *bus.Report) {
		r.Outcome.Removed = []string{"evil-resource"}
	})
	add("a resource name of 512 KiB", events.RefusedTooLarge, good(), func(r *bus.Report) {
		r.Outcome.Unchanged, r.Outcome.Created = 0, []string{strings.Repeat("x", 512<<10)}
	})
	add("an error of 5 KiB", events.RefusedTooLarge, good(), func(r *bus.Report) {
		r.Outcome.Unchanged, r.Outcome.Applied = 0, 0
		r.Outcome.Failed = []events.Failed{{Name: "/var/lib/meshplane/hosts", Error: strings.Repeat("e", 5<<10)}}
	})
	dup := good()
	dupWire := strings.Replace(string(wire(dup)), `"node":"n1"`, `"node":"n2","node":"n1"`, 1)
	refused = append(refused, forged{"node given twice, the last n1", events.RefusedMalformed, []byte(dupWire)})
	for _, f := range refused {
		if err := publish(t, f.data); err != nil {
			t.Fatalf("%s: the stream did not take it: %v", f.name, err)
		}
	}
	if err := publish(t, refused[0].data); err != nil { // the same message again: nothing more recorded
		t.Fatal(err)
	}
	huge := good()
	huge.Outcome.Created, huge.Outcome.Sent, huge.Outcome.Applied = []string{strings.Repeat("x", 7<<20)}, 2, 2
	if err := publish(t, wire(huge)); err == nil {
		t.Error("the stream took a 7 MiB report")
	}

	// A node with credentials and no registration: nothing recorded, counted.
	ghostCreds, err := bus.LoadCreds(d.Creds(t, "ghost"))
	if err != nil {
		t.Fatal(err)
	}
	ghost, err := bus.DialNode(ctx, ghostCreds, bus.NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ghost.Close)
	gr := good()
	gr.Node, gr.Outcome.Node = "ghost", "ghost"
	if _, err := ghost.PublishReport(ctx, gr); err != nil {
		t.Fatal(err)
	}

	// Exactly one report.refused per refused message, in order, each with
	// its reason and its message's digest and size.
	es := waitTimeline(t, d.Client, "n1", events.TypeReportRefused, len(refused))
	for i, f := range refused {
		e := es[i]
		want := fmt.Sprintf("report from n1 refused (%s): ", f.reason)
		tail := fmt.Sprintf("; %d bytes, %s", len(f.data), bus.Digest(f.data))
		if !strings.HasPrefix(e.Summary, want) || !strings.HasSuffix(e.Summary, tail) || e.Actor != "controller" {
			t.Errorf("%s: refusal %q by %s, want %q…%q", f.name, e.Summary, e.Actor, want, tail)
		}
		if len(e.Summary) > 600 {
			t.Errorf("%s: a refusal of %d bytes keeps more than a sentence", f.name, len(e.Summary))
		}
	}
	checkUp(t, d)
	if applies := timeline(t, d.Client, "n1", events.TypeApplyReported); len(applies) != 1 {
		t.Fatalf("%d apply.reported on n1, want only the good one", len(applies))
	}
	n1 := must(d.Client.NodeShow(ctx, "n1"))(t).Status
	if last := refused[len(refused)-1]; n1.Health != projections.HealthFailing || n1.ReportRefused == nil || n1.ReportRefused.Reason != last.reason {
		t.Errorf("n1's status after the refusals: health %s, refused %+v; want failing, %s", n1.Health, n1.ReportRefused, last.reason)
	}
	// No event names ghost: its timeline is refused as an unknown node.
	var rej *commands.Rejection
	if page, err := d.Client.Timeline(ctx, api.TimelineRequest{Node: "ghost", Limit: 10}); !errors.As(err, &rej) || rej.Code != commands.CodeNodeUnknown {
		t.Errorf("ghost's timeline: %+v, %v; want refused, %s", page.Entries, err, commands.CodeNodeUnknown)
	}
	noneOutstanding(t, d, data)
	wantRefused := map[string]int{events.RefusedCounts: 2, events.RefusedUnknownNode: 1}
	for _, f := range refused[1:] {
		wantRefused[f.reason]++
	}
	eventuallyMetrics(t, d, wantRefused)
	// Each refusal logged once (the repeated message twice, as it came twice).
	if n := strings.Count(logs.String(), `"msg":"bus: report refused"`); n != len(refused)+2 {
		t.Errorf("%d refusals logged, want %d", n, len(refused)+2)
	}

	// A burst of 300 good reports: the stream takes 64 of n1's at a time
	// (an agent keeps the rest in its outbox), the controller takes them at
	// the rate limit, and every one the stream took is recorded.
	took := 0
	for range 300 {
		_, err := agentConn.PublishReport(ctx, good())
		if err == nil {
			took++
		} else if !strings.Contains(err.Error(), "maximum messages per subject") {
			t.Fatalf("a report of the burst: %v, want taken or refused for n1's share of the stream", err)
		}
	}
	if took < 64 {
		t.Errorf("the stream took %d of 300 reports in a burst: want its 64 of n1's at least", took)
	}
	t.Logf("the stream took %d of the 300 (the rest an agent keeps in its outbox)", took)
	waitTimeline(t, d.Client, "n1", events.TypeApplyReported, 1+took)
	// Said once a window (200 ms here, a minute by default) while n1's
	// reports were deferred.
	testwait.Eventually(t, 10*time.Second, func() error {
		th := timeline(t, d.Client, "n1", events.TypeReportThrottled)
		if len(th) == 0 {
			return errors.New("no report.throttled on n1")
		}
		for _, e := range th {
			if !strings.HasPrefix(e.Summary, "n1 sent reports faster than its limit (200 a second, bursts of 20): ") {
				t.Fatalf("throttled: %q", e.Summary)
			}
		}
		return nil
	})
	noneOutstanding(t, d, data)

	// The first report again, far older than n1's last 16 applies, with
	// no message id (the stream's duplicate window does not drop it): a
	// no-op, never apply-id-conflict (issue 31, item 5).
	if err := publish(t, wire(first)); err != nil {
		t.Fatal(err)
	}

	// After all of that, a good report is recorded, with the controller's
	// receive time beside the agent's.
	last := good()
	if _, err := agentConn.PublishReport(ctx, last); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 30*time.Second, func() error {
		ns, err := d.Client.NodeShow(ctx, "n1")
		if err != nil {
			return err
		}
		if a := ns.Status.Applied; a == nil || a.Report.ApplyID != last.ApplyID.String() || a.Report.ReceivedAt.IsZero() || ns.Status.ReportRefused != nil {
			return fmt.Errorf("n1's last apply %+v, refused %+v", ns.Status.Applied, ns.Status.ReportRefused)
		}
		return nil
	})
	waitTimeline(t, d.Client, "n1", events.TypeReportRefused, len(refused)) // the first again refused nothing
	waitTimeline(t, d.Client, "n1", events.TypeApplyReported, 2+took)       // nor appended anything
	checkUp(t, d)
	noneOutstanding(t, d, data)
}

func must[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// timeline is node's entries of type typ, oldest first.
func timeline(t *testing.T, c *httpapi.Client, node, typ string) []api.Entry {
	t.Helper()
	page, err := c.Timeline(context.Background(), api.TimelineRequest{Node: node, Type: typ, Limit: api.MaxTimelineLimit})
	if err != nil {
		t.Fatal(err)
	}
	return page.Entries
}

// waitTimeline waits until node has n entries of type typ, and fails if it
// has more; it returns them, oldest first.
func waitTimeline(t *testing.T, c *httpapi.Client, node, typ string, n int) []api.Entry {
	t.Helper()
	var es []api.Entry
	testwait.Eventually(t, 30*time.Second, func() error {
		es = timeline(t, c, node, typ)
		if len(es) > n {
			t.Fatalf("%d %s on %s, want %d", len(es), typ, node, n)
		}
		if len(es) < n {
			return fmt.Errorf("%d %s on %s, want %d", len(es), typ, node, n)
		}
		return nil
	})
	return es
}

// checkUp fails t unless the controller answers /v1/info.
func checkUp(t *testing.T, d *meshtest.TestDaemon) {
	t.Helper()
	select {
	case err := <-d.Done:
		d.Done <- err
		t.Fatalf("the controller stopped: %v", err)
	default:
	}
	if _, err := d.Client.Info(context.Background()); err != nil {
		t.Fatalf("the controller does not answer: %v", err)
	}
}

// noneOutstanding checks, as the controller's bus user, that the reports
// consumer holds nothing: none pending, unacknowledged or redelivered.
func noneOutstanding(t *testing.T, d *meshtest.TestDaemon, data string) {
	t.Helper()
	auth, err := bus.LoadAuthority(filepath.Join(data, controllerd.BusDir))
	if err != nil {
		t.Fatal(err)
	}
	u, err := auth.Issuer().Controller()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bc, err := bus.DialController(ctx, bus.ControllerConnConfig{URLs: d.Ready.BusURLs, User: u})
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	var ci *jetstream.ConsumerInfo
	testwait.Eventually(t, 30*time.Second, func() error {
		if ci, err = bc.ConsumerInfo(ctx); err != nil {
			return err
		}
		if ci.NumPending != 0 || ci.NumAckPending != 0 || ci.NumRedelivered != 0 {
			return fmt.Errorf("the reports consumer holds %d pending, %d unacknowledged, %d redelivered", ci.NumPending, ci.NumAckPending, ci.NumRedelivered)
		}
		return nil
	})
}

// eventuallyMetrics waits until the controller's /metrics counts the
// refusals in want by reason (every other reason 0).
func eventuallyMetrics(t *testing.T, d *meshtest.TestDaemon, want map[string]int) {
	t.Helper()
	line := regexp.MustCompile(`(?m)^meshplane_reports_refused_total\{reason="([a-z-]+)"\} (\d+)$`)
	testwait.Eventually(t, 10*time.Second, func() error {
		req, err := http.NewRequest(http.MethodGet, d.Ready.APIURL+"/metrics", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+d.Ready.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		got := map[string]int{}
		for _, m := range line.FindAllStringSubmatch(string(b), -1) {
			var n int
			fmt.Sscan(m[2], &n)
			if n > 0 {
				got[m[1]] = n
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("refused by reason %v, want %v", got, want)
		}
		return nil
	})
}
