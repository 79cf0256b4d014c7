package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// CheckConfig is what Check connects with: the controller's (or an
// operator's) user of the mesh account, and an Issuer to mint a throwaway
// node user with (nil: that check is skipped).
type CheckConfig struct {
	URLs   []string
	User   User
	CA     []byte
	Issuer *Issuer
}

// CheckResult is one check of Check: OK, or why not; Skipped when it
// could not be made (no issuer).
type CheckResult struct {
	Name    string
	OK      bool
	Skipped bool
	Detail  string
}

// Line is r as mesh bus check prints it: "ok  ", "skip" or "FAIL", two
// spaces, the check's name and what it found.
func (r CheckResult) Line() string {
	mark := "ok  "
	switch {
	case r.Skipped:
		mark = "skip"
	case !r.OK:
		mark = "FAIL"
	}
	return fmt.Sprintf("%s  %s: %s", mark, r.Name, r.Detail)
}

// MinServerVersion is the oldest nats-server the bus is checked against:
// RePublish, direct gets and stream updates of RePublish are 2.9's.
const MinServerVersion = "2.9.0"

// ErrCheckFailed means a check of the bus failed (Check's results say
// which).
var ErrCheckFailed = errors.New("bus: check failed")

// Check checks a bus as meshplane needs it (`mesh bus check`): the
// server's version, the mesh account's JetStream limits, the declarations
// bucket's and the reports stream's configuration (RePublish, consumer
// limits), and that a node's user can create no consumer. The streams are
// made by the controller at its start: before it ran they are reported
// missing. It returns every result, and an error wrapping ErrCheckFailed
// if one failed, or the connection's error.
func Check(ctx context.Context, cfg CheckConfig) ([]CheckResult, error) {
	nc, err := dial(dialConfig{name: "mesh bus check", urls: cfg.URLs, user: cfg.User, ca: cfg.CA, inbox: controllerInboxRoot})
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("bus: check: %w", err)
	}
	var out []CheckResult
	add := func(name string, ok bool, format string, args ...any) {
		out = append(out, CheckResult{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
	}

	v := nc.ConnectedServerVersion()
	add("server version", versionAtLeast(v, MinServerVersion), "%s (at least %s), max_payload %d bytes", v, MinServerVersion, nc.MaxPayload())

	if ai, err := js.AccountInfo(ctx); err != nil {
		add("account JetStream", false, "%v: JetStream must be on for the mesh account", err)
	} else {
		if c := ai.Limits.MaxConsumers; c > 0 {
			add("account consumer limit", true, "%d", c)
		} else {
			add("account consumer limit", false, "unlimited: set one (%d, as the account mesh bus account makes has); unset, the server's default_max_consumers applies to each stream without its own", AccountMaxConsumers)
		}
	}

	checkStream := func(name string, want func(jetstream.StreamConfig) []string) {
		st, err := js.Stream(ctx, name)
		if err != nil {
			add("stream "+name, false, "%v (the controller makes it at its start)", err)
			return
		}
		cfg := st.CachedInfo().Config
		if bad := want(cfg); len(bad) > 0 {
			add("stream "+name, false, "%s", strings.Join(bad, "; "))
			return
		}
		add("stream "+name, true, "replicas %d, max consumers %d, %d consumer(s)", cfg.Replicas, cfg.MaxConsumers, st.CachedInfo().State.Consumers)
	}
	checkStream(declStream, func(c jetstream.StreamConfig) []string {
		var bad []string
		if c.RePublish == nil || *c.RePublish != declRepublish {
			bad = append(bad, fmt.Sprintf("republish %s, want %s to %s (agents hear their keys there)", fmtRepublish(c.RePublish), declRepublish.Source, declRepublish.Destination))
		}
		if c.MaxConsumers <= 0 || c.MaxConsumers > declMaxConsumers {
			bad = append(bad, fmt.Sprintf("max consumers %d, want 1 to %d", c.MaxConsumers, declMaxConsumers))
		}
		if !c.AllowDirect {
			bad = append(bad, "direct gets off (agents read their keys with them)")
		}
		if c.MaxMsgsPerSubject != 1 {
			bad = append(bad, fmt.Sprintf("history %d, want 1", c.MaxMsgsPerSubject))
		}
		return bad
	})
	checkStream(ReportsStream, func(c jetstream.StreamConfig) []string {
		var bad []string
		if c.Retention != jetstream.WorkQueuePolicy {
			bad = append(bad, fmt.Sprintf("retention %s, want work queue", c.Retention))
		}
		if c.MaxConsumers <= 0 || c.MaxConsumers > reportsMaxConsumers {
			bad = append(bad, fmt.Sprintf("max consumers %d, want 1 to %d", c.MaxConsumers, reportsMaxConsumers))
		}
		if len(c.Subjects) != 1 || c.Subjects[0] != ReportSubjectPrefix+">" {
			bad = append(bad, fmt.Sprintf("subjects %v, want [%s>]", c.Subjects, ReportSubjectPrefix))
		}
		return bad
	})

	out = append(out, checkNodeUser(ctx, cfg))
	for _, r := range out {
		if !r.OK && !r.Skipped {
			return out, fmt.Errorf("%w: %s: %s", ErrCheckFailed, r.Name, r.Detail)
		}
	}
	return out, nil
}

// checkNodeNode is the node a throwaway user is minted for, expiring in a
// minute and never written anywhere.
const checkNodeNode = "0-mesh-bus-check"

// checkNodeUser mints a node user (NodePermissions) and tries to create a
// consumer of its own key with it: the server must refuse it.
func checkNodeUser(ctx context.Context, cfg CheckConfig) CheckResult {
	r := CheckResult{Name: "a node user creates no consumer"}
	if cfg.Issuer == nil {
		r.Skipped, r.Detail = true, "no signing key of the mesh account to mint a node user with (--nats-account-seed)"
		return r
	}
	p := NodePermissions(checkNodeNode)
	u, err := cfg.Issuer.userUntil("node:"+checkNodeNode, &p, time.Now().Add(time.Minute))
	if err != nil {
		r.Detail = err.Error()
		return r
	}
	refused := make(chan error, 4)
	nc, err := dial(dialConfig{name: "mesh bus check (node)", urls: cfg.URLs, user: u, ca: cfg.CA, inbox: NodeInbox(checkNodeNode)})
	if err != nil {
		r.Detail = err.Error()
		return r
	}
	defer nc.Close()
	nc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case refused <- err:
		default:
		}
	})
	const name = "mesh-bus-check"
	body, _ := json.Marshal(map[string]any{"stream_name": declStream, "config": map[string]any{
		"durable_name": name, "name": name, "filter_subject": DeclarationSubject(checkNodeNode), "ack_policy": "none",
	}})
	subj := "$JS.API.CONSUMER.CREATE." + declStream + "." + name + "." + DeclarationSubject(checkNodeNode)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	m, err := nc.RequestWithContext(ctx, subj, body)
	if err == nil {
		var resp struct {
			Error *struct{ Description string } `json:"error"`
		}
		if json.Unmarshal(m.Data, &resp) == nil && resp.Error != nil {
			r.OK, r.Detail = true, "refused by JetStream: "+resp.Error.Description
			return r
		}
		r.Detail = "the server created a consumer for a node's user: its permissions allow $JS.API.CONSUMER.CREATE (users minted before this build do; see bus.NodePermissions)"
		return r
	}
	select {
	case perr := <-refused:
		r.OK, r.Detail = true, "refused: "+perr.Error()
	case <-time.After(time.Second):
		r.Detail = fmt.Sprintf("no answer and no permissions violation: %v", err)
	}
	return r
}

func fmtRepublish(r *jetstream.RePublish) string {
	if r == nil {
		return "none"
	}
	return r.Source + " to " + r.Destination
}

// versionAtLeast compares dotted versions ("2.15.2" against "2.9.0"); a
// suffix (-beta) is ignored.
func versionAtLeast(v, min string) bool {
	a, b := strings.Split(strings.SplitN(v, "-", 2)[0], "."), strings.Split(min, ".")
	for i := range b {
		if i >= len(a) {
			return false
		}
		x, err1 := strconv.Atoi(a[i])
		y, err2 := strconv.Atoi(b[i])
		if err1 != nil || err2 != nil {
			return false
		}
		if x != y {
			return x > y
		}
	}
	return true
}
