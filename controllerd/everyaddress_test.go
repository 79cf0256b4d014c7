package controllerd

import (
	"context"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"meshplane/controller"
)

// TestLocalURLAndAddresses: an unspecified host (every address) is said
// as loopback for a client here, and as every address of the machine for
// agents elsewhere; a host named is kept.
func TestLocalURLAndAddresses(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"[::]:55480", "https://127.0.0.1:55480"},
		{"0.0.0.0:7480", "https://127.0.0.1:7480"},
		{":7480", "https://127.0.0.1:7480"},
		{"10.0.0.1:7480", "https://10.0.0.1:7480"},
		{"[::1]:7480", "https://[::1]:7480"},
		{"127.0.0.1:7480", "https://127.0.0.1:7480"},
	} {
		if got := localURL("https", tc.addr); got != tc.want {
			t.Errorf("localURL(https, %s) = %s; want %s", tc.addr, got, tc.want)
		}
	}
	ips := []net.IP{net.ParseIP("10.0.0.5"), net.ParseIP("2001:db8::5")}
	for _, tc := range []struct {
		urls, want []string
	}{
		{[]string{"nats://127.0.0.1:4222"}, []string{"nats://127.0.0.1:4222", "nats://10.0.0.5:4222", "nats://[2001:db8::5]:4222"}},
		{[]string{"tls://127.0.0.1:4222", "tls://10.0.0.5:4222", "tls://10.0.0.6:4222"}, []string{"tls://127.0.0.1:4222", "tls://10.0.0.5:4222", "tls://[2001:db8::5]:4222", "tls://10.0.0.6:4222"}},
		{nil, nil},
	} {
		if got := withAddresses(tc.urls, ips); !slices.Equal(got, tc.want) {
			t.Errorf("withAddresses(%v) = %v; want %v", tc.urls, got, tc.want)
		}
	}
}

// TestReadyOnEveryAddress: a controller listening on every address (API
// and bus on 0.0.0.0) says an API URL a client dials (127.0.0.1, never
// [::] or 0.0.0.0), in Ready and in DATA/controller.json, and bus URLs for
// agents (DATA/bus-urls) at loopback first, then at every address of the
// machine's interfaces; each of them answers.
func TestReadyOnEveryAddress(t *testing.T) {
	data := t.TempDir()
	ready := make(chan Ready, 1)
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cfg := Config{
		Data: data, Listen: "0.0.0.0:0", BusListen: "0.0.0.0:0", Insecure: true, Interval: time.Hour,
		Logger: slog.New(slog.DiscardHandler), Ready: func(rd Ready) { ready <- rd },
	}
	go func() { done <- Run(ctx, cfg) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	var rd Ready
	select {
	case rd = <-ready:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not serve within 60s")
	}
	host := func(u string) string {
		p, err := url.Parse(u)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		return p.Host
	}
	dials := func(what, hostport string) {
		c, err := net.DialTimeout("tcp", hostport, 5*time.Second)
		if err != nil {
			t.Errorf("%s %s does not answer: %v", what, hostport, err)
			return
		}
		c.Close()
	}
	if !strings.HasPrefix(rd.APIURL, "http://127.0.0.1:") {
		t.Errorf("API URL %s: want http://127.0.0.1:PORT, one a client here dials", rd.APIURL)
	}
	dials("the API", host(rd.APIURL))
	info, err := controller.ReadInfo(data)
	if err != nil || info.URL != rd.APIURL {
		t.Errorf("controller.json: %+v, %v; want URL %s", info, err, rd.APIURL)
	}
	if len(rd.BusURLs) != 1 || !strings.HasPrefix(rd.BusURLs[0], "nats://127.0.0.1:") {
		t.Errorf("bus URLs here %v: want one, at 127.0.0.1", rd.BusURLs)
	}
	_, port, _ := net.SplitHostPort(host(rd.BusURLs[0]))
	want := []string{rd.BusURLs[0]}
	for _, ip := range interfaceIPs() {
		want = append(want, "nats://"+net.JoinHostPort(ip.String(), port))
	}
	if !slices.Equal(rd.AgentBusURLs, want) {
		t.Errorf("bus URLs for agents %v; want %v (loopback, then every address of the machine)", rd.AgentBusURLs, want)
	}
	for _, u := range rd.AgentBusURLs {
		dials("the bus", host(u))
	}
}
