package test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/internal/meshtest"
)

// BenchmarkPushToRecordedHosts is BenchmarkPushToRecorded with every part
// a process of its own on a host of a private link (internal/hosttest, as
// TestHostsOnAPrivateLink): the controller (`mesh up`: bolt store, the
// embedded NATS, the API with TLS) on host 0, and hostsPushPerHost agents
// (`mesh agent --runtime sim`, each joined with a token, its data
// directory its own) on each of hostsPushHosts hosts, their connections
// crossing the link's bridge. One op is `POST /v1/push` (every node,
// forced) from the test's process, through the controller's host, until
// `GET /v1/status` shows every node's report of it recorded (an apply at
// or after the push request): polled every hostsPushPoll, so "all" is late
// by up to that. No store hook reaches across processes: that is the
// difference in method from BenchmarkPushToRecorded.
//
//	go test -run '^$' -bench BenchmarkPushToRecordedHosts -benchtime 3x -timeout 20m ./cmd/mesh/
func BenchmarkPushToRecordedHosts(b *testing.B) {
	m := startHostsMesh(b, hostsPushHosts)
	var nodes []string
	for h := 1; h <= hostsPushHosts; h++ {
		for a := range hostsPushPerHost {
			node := fmt.Sprintf("h%02d-a%d", h, a)
			m.startAgent(b, m.net.Host(h), node, "--interval", "1h")
			nodes = append(nodes, node)
		}
	}
	c := m.apiClient(b)
	ctx := context.Background()
	// Every agent's first apply recorded (a joined node's declaration is
	// pushed by the next push, as TestHostsJoinToFirstReport does).
	if _, err := c.Push(ctx, api.PushRequest{Operator: meshtest.TestOperator}); err != nil {
		b.Fatal(err)
	}
	m.awaitApplied(b, c, nodes, time.Time{}, 2*time.Minute)

	var total, push time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, err := c.Push(ctx, api.PushRequest{Operator: meshtest.TestOperator}); err != nil {
			b.Fatal(err)
		}
		push += time.Since(start)
		m.awaitApplied(b, c, nodes, start, time.Minute)
		total += time.Since(start)
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(b.N) }
	b.ReportMetric(per(total), "all-ms")
	b.ReportMetric(per(push), "push-ms")
	b.ReportMetric(float64(len(nodes)), "agents")
}

// The namespace hosts' case: as many agent processes as two cores carry
// beside the controller.
const (
	hostsPushHosts   = 10
	hostsPushPerHost = 5
	hostsPushPoll    = 20 * time.Millisecond
)

// apiClient is a client of the controller's API from the test's process:
// its connections dialled from inside the controller's host.
func (m *hostsMesh) apiClient(tb testing.TB) *httpapi.Client {
	tb.Helper()
	ca, err := os.ReadFile(m.caFile)
	if err != nil {
		tb.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		tb.Fatalf("%s holds no certificate", m.caFile)
	}
	hc := &http.Client{Transport: &http.Transport{
		DialContext:     m.ctl.Dial,
		TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool},
	}}
	c, err := httpapi.NewClient(m.url, m.token, httpapi.WithHTTPClient(hc))
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// awaitApplied polls the status until every one of nodes has an apply
// recorded at or after since (any apply when since is zero).
func (m *hostsMesh) awaitApplied(tb testing.TB, c *httpapi.Client, nodes []string, since time.Time, limit time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(limit)
	for {
		st, err := c.Status(context.Background(), api.StatusRequest{})
		if err != nil {
			tb.Fatal(err)
		}
		var waiting []string
		for _, n := range nodes {
			i := slices.IndexFunc(st.Nodes, func(s api.NodeStatus) bool { return s.Node == n })
			if i < 0 || st.Nodes[i].Applied == nil || st.Nodes[i].Applied.At.Before(since) {
				waiting = append(waiting, n)
			}
		}
		if len(waiting) == 0 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d nodes' reports not recorded within %v: %v", len(waiting), limit, waiting)
		}
		time.Sleep(hostsPushPoll)
	}
}
