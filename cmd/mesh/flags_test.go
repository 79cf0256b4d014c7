package main

import (
	"meshplane/internal/clihelp"
	"meshplane/internal/flagcheck"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestBadFlagValuesAreUsage: a flag value that is malformed or out of
// range is bad usage on every verb: exit 2, the flag named, nothing
// started (none of these gets as far as a store, a bus or a socket).
func TestBadFlagValuesAreUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		flag string // what stderr names
	}{
		// Addresses to listen on: HOST:PORT, port 0 (a free one) to 65535.
		{[]string{"up", "--listen", "127.0.0.1:99999"}, "--listen"},
		{[]string{"up", "--listen", "127.0.0.1:-1"}, "--listen"},
		{[]string{"up", "--listen", "nope"}, "--listen"},
		{[]string{"up", "--listen", "300.1.2.3:80"}, "--listen"},
		{[]string{"up", "--listen", "bad_host:80"}, "--listen"},
		{[]string{"up", "--bus-listen", "127.0.0.1:65536"}, "--bus-listen"},
		{[]string{"up", "--bus-listen", "127.0.0.1:http"}, "--bus-listen"},
		{[]string{"agent", "--creds", "x", "--metrics", "127.0.0.1:99999"}, "--metrics"},
		// Addresses others are told or dialled: port 1 to 65535.
		{[]string{"agent", "--creds", "x", "--artifact-store", "127.0.0.1:0"}, "--artifact-store"},
		{[]string{"agent", "--creds", "x", "--artifact-store", "7481"}, "--artifact-store"},
		{[]string{"artifact", "push", "m", "n", "x.tar", "--registry", "127.0.0.1:0"}, "--registry"},
		// URLs.
		{[]string{"up", "--nats", "ftp://x"}, "--nats"},
		{[]string{"up", "--nats", "nats://h:0"}, "--nats"},
		{[]string{"node", "register", "n1", "--creds", "c", "--bus-url", "ftp://x"}, "--bus-url"},
		{[]string{"node", "register", "n1", "--creds", "c", "--bus-url", "nats://a:4222,nats://b:99999"}, "--bus-url"},
		{[]string{"token", "create", "ana", "--ttl", "-1h"}, "--ttl"},
		{[]string{"token", "create", "ana", "--ttl", "1ms"}, "--ttl"},
		{[]string{"token", "create", "ana", "--ttl", "soon"}, "--ttl"},
		{[]string{"token", "create", "ana", "--ttl", "87601h"}, "--ttl"},
		{[]string{"node", "join-token", "n1", "--ttl", "169h"}, "--ttl"},
		{[]string{"status", "--server", "ftp://x"}, "--server"},
		{[]string{"status", "--server", "http://h:99999"}, "--server"},
		{[]string{"status", "--server", "http://"}, "--server"},
		{[]string{"status", "--store", "mysql://x"}, "--store"},
		// Durations: above 0.
		{[]string{"up", "--interval", "0"}, "--interval"},
		{[]string{"up", "--interval", "-1m"}, "--interval"},
		{[]string{"up", "--interval", "soon"}, "--interval"},
		{[]string{"agent", "--creds", "x", "--interval", "0s"}, "--interval"},
		{[]string{"artifact", "push", "m", "n", "x.tar", "--timeout", "-1s"}, "--timeout"},
		{[]string{"deploy", "forge", "--wait", "--timeout", "0s"}, "--timeout"},
		// Numbers.
		{[]string{"up", "--passes", "0"}, "--passes"},
		{[]string{"up", "--passes", "two"}, "--passes"},
		{[]string{"timeline", "--limit", "-1"}, "--limit"},
		{[]string{"export", "--since", "-1"}, "--since"},
		{[]string{"scenario", "run", "--seed", "-2", "x.feature"}, "--seed"},
		{[]string{"sim", "--nodes", "0"}, "--nodes"},
		{[]string{"sim", "--modules", "-1"}, "--modules"},
		{[]string{"sim", "--passes", "0"}, "--passes"},
		{[]string{"sim", "--big", "-1"}, "--big"},
		{[]string{"sim", "--seed", "-1"}, "--seed"},
		// Choices, times, digests, commands and pairs.
		{[]string{"status", "-o", "yaml"}, "-o"},
		{[]string{"timeline", "-o", "xml"}, "-o"},
		{[]string{"agent", "--creds", "x", "--runtime", "lxc"}, "--runtime"},
		{[]string{"agent", "--creds", "x", "--runtime", "docker", "--docker-label", "nolabel"}, "--docker-label"},
		{[]string{"agent", "--creds", "x", "--runtime", "docker", "--docker-label", "meshplane.node=x"}, "--docker-label"},
		{[]string{"agent", "--creds", "x", "--runtime", "sim", "--docker-label", "meshplane.data=x"}, "--docker-label"}, // not for sim
		{[]string{"scenario", "run", "--format", "xml", "x.feature"}, "--format"},
		{[]string{"scenario", "run", "--store", "mysql", "x.feature"}, "--store"},
		{[]string{"sim", "--store", "mysql"}, "--store"},
		{[]string{"sim", "--faults", "meteor:rate=1%"}, "--faults"},
		{[]string{"timeline", "--since", "yesterday"}, "--since"},
		{[]string{"timeline", "--until", "2026-13-01T00:00:00Z"}, "--until"},
		{[]string{"deploy", "forge", "--digest", "sha256:xyz"}, "--digest"},
		{[]string{"plan", "--after", "destroy forge"}, "--after"},
		{[]string{"roster", "n1", "--diff", "n1/3"}, "--diff"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := append(tc.args, "--data", dir)
			if strings.Contains(strings.Join(tc.args, " "), "--server") {
				args = tc.args // --server and --data are refused together
			}
			code, out, errOut := mesh(t, args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d\n%s%s", code, exitUsage, out, errOut)
			}
			if !strings.Contains(errOut, tc.flag) {
				t.Errorf("stderr does not name %s:\n%s", tc.flag, errOut)
			}
		})
	}
}

// TestGoodFlagValuesPass: the values the checks must let through.
func TestGoodFlagValuesPass(t *testing.T) {
	for _, tc := range []struct {
		check flagcheck.Check
		value string
	}{
		{flagcheck.ListenAddr, "127.0.0.1:0"}, {flagcheck.ListenAddr, ":7480"}, {flagcheck.ListenAddr, "[::1]:7480"}, {flagcheck.ListenAddr, "localhost:65535"},
		{flagcheck.ListenAddr, "host-1.example.org:80"}, {flagcheck.ListenAddr, "0.0.0.0:1"},
		{flagcheck.DialAddr, "10.1.0.3:5000"}, {flagcheck.DialAddr, "store.internal:7481"},
		{flagcheck.URLOf("http", "https"), "https://ctl.example:7480"}, {flagcheck.URLOf("http", "https"), "http://127.0.0.1:7480/"},
		{flagcheck.URLOf("http", "https"), "http://[::1]:7480"},
		{flagcheck.ListOf(flagcheck.URLOf("nats", "tls")), "nats://a:4222,tls://b:4222"}, {flagcheck.URLOf("nats"), "nats://127.0.0.1"},
		{flagcheck.Positive, "1ns"}, {flagcheck.Positive, "5m"}, {flagcheck.AtLeast(0), "0"}, {flagcheck.AtLeast(-1), "-1"}, {flagcheck.AtLeast(1), "0x10"},
		{flagcheck.RFC3339, "2026-09-29T23:02:00Z"}, {flagcheck.RFC3339, "2026-09-29T23:02:00+02:00"},
		{tokenTTL, "0"}, {tokenTTL, "720h"}, {tokenTTL, "1s"},
		{flagcheck.Optional(flagcheck.ListenAddr), ""}, {planAfter, "deploy forge --digest sha256:" + strings.Repeat("a", 64)},
	} {
		if err := tc.check(tc.value); err != nil {
			t.Errorf("%q refused: %v", tc.value, err)
		}
	}
}

// freeFormFlags are the flags no check of flags.go reads, and why: free
// text (a path, a name, an expression; what a name may be is checked where
// it goes), or a value the verb checks itself before it starts, with
// other flags at hand. Every other flag that takes a value is checked as
// it is parsed (TestFlagsChecked).
var freeFormFlags = map[string]string{
	"--data": "a path", "--tls-ca": "a path", "--token-file": "a path",
	"--store":       "the verb checks it (session.CheckStoreURL, with storeurl.KindOf; scenario run's and sim's, their own kinds)",
	"--output":      "the verb checks it first (outputOf), with the hidden --json",
	"agent --creds": "a path", "node register --creds": "a path", "agent --docker-root": "a path",
	"store verify --agent-data": "a path", "rebuild --projection": "the verb checks it against projections.Names, naming them",
	"revert --to":           "the verb checks it first (commands.ParseMoment: a time or a position)",
	"diff --from":           "the verb checks it first (commands.ParseMoment: a time or a position)",
	"diff --to":             "the verb checks it first (commands.ParseMoment: a time or a position; empty: the head)",
	"store verify --anchor": "the verb parses it first (events.ParseChainHead), before it opens the store",
	"agent join --creds":    "a path", "agent join --docker-root": "a path", "agent join --sim-found": "paths",
	"agent join --docker-prefix": "a name prefix", "agent join --runtime": "the verb checks it first",
	"agent --sim-found": "paths", "agent --docker-prefix": "a name prefix", "agent --runtime": "the verb checks it first",
	"export --file": "a path", "export --since": "a position: pflag parses every uint64",
	"up --mesh": "a path", "up --modules": "a path", "up --tls-cert": "a path", "up --tls-key": "a path",
	"up --bus-trust": "a path", "up --nats-creds": "a path", "up --nats-ca": "a path", "up --nats-account-seed": "a path", "up --nats-operator-seed": "a path", "up --nats-system-creds": "a path",
	"bus check --nats-creds": "a path", "bus check --nats-ca": "a path", "bus check --nats-account-seed": "a path",
	"node revoke --creds": "a path", "node revoke --key": "the controller checks it (Minter.CheckKey)",
	"roster --diff": "the verb checks it first (FROM,TO)",
	"docs --dir":    "a path", "docs --man": "a path",
	"scenario run --tags": "an expression godog parses",
	"sim --nodes":         "the verb checks it first", "sim --modules": "the verb checks it first",
	"sim --passes": "the verb checks it first", "sim --big": "the verb checks it against --nodes",
	"sim --faults": "the verb parses the spec first", "sim --seed": "pflag parses every uint64",
	"timeline --node": "a name", "timeline --module": "a name", "timeline --resource": "a name",
	"timeline --type": "an event type", "timeline --correlation": "an id",
}

// TestFlagsChecked: every flag of every verb that takes a value is either
// checked as it is parsed (checkFlags) or listed in freeFormFlags with why;
// a new flag must be one or the other.
func TestFlagsChecked(t *testing.T) {
	root := (&env{}).root()
	for _, v := range clihelp.Verbs(root) {
		seen := map[string]bool{}
		visit := func(f *pflag.Flag) {
			if seen[f.Name] || f.Value.Type() == "bool" {
				return
			}
			seen[f.Name] = true
			if flagcheck.Installed(f) {
				return
			}
			if freeFormFlags["--"+f.Name] == "" && freeFormFlags[clihelp.Name(v)+" --"+f.Name] == "" {
				t.Errorf("%s --%s (%s) is neither checked as it is parsed (checkFlags) nor listed in freeFormFlags", clihelp.Name(v), f.Name, f.Value.Type())
			}
		}
		v.LocalFlags().VisitAll(visit)
		v.InheritedFlags().VisitAll(visit)
	}
}
