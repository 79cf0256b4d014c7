package session

import (
	"errors"
	"strings"
	"testing"

	"meshplane/internal/usage"
)

// TestCheckStoreURL: --store takes what storeurl opens, but memory (a
// verb's writes would be gone when it exits). The URL forms themselves are
// storeurl's tests.
func TestCheckStoreURL(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"", true}, {"bolt", true},
		{"postgres://u@h/db", true}, {"postgresql://h/db", true},
		{"esdb://h:2113", true}, {"kurrentdb://h:2113?tls=false", true},
		{"mysql://h/db", false}, {"memory", false},
	} {
		t.Run(tc.url, func(t *testing.T) {
			err := CheckStoreURL(tc.url)
			if (err == nil) != tc.ok {
				t.Fatalf("CheckStoreURL(%q) = %v; want ok %v", tc.url, err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "want bolt, postgres://") {
				t.Fatalf("CheckStoreURL(%q) = %v; want it to say what to give", tc.url, err)
			}
		})
	}
}

// TestResolve: --server wins, an explicit --data means the local store,
// else $MESH_SERVER; a local-only verb refuses a server and ignores
// $MESH_SERVER; --server goes with neither --data nor another --store.
func TestResolve(t *testing.T) {
	for _, c := range []struct {
		name      string
		g         Given
		localOnly bool
		server    string // the target's, or
		refused   string // the refusal's words
	}{
		{"server", Given{Data: ".mesh", Server: "https://c:7480"}, false, "https://c:7480", ""},
		{"env server", Given{Data: ".mesh", EnvServer: "https://e:7480"}, false, "https://e:7480", ""},
		{"data beats env", Given{Data: "d", DataSet: true, EnvServer: "https://e:7480"}, false, "", ""},
		{"local only ignores env", Given{Data: ".mesh", EnvServer: "https://e:7480"}, true, "", ""},
		{"local only refuses server", Given{Server: "https://c:7480"}, true, "", "works on a local store only"},
		{"server and data", Given{Data: "d", DataSet: true, Server: "https://c:7480"}, false, "", "give --server or --data, not both"},
		{"server and store", Given{Store: "postgres://h/db", StoreSet: true, Server: "https://c:7480"}, false, "", "give --server or --store, not both"},
		{"memory", Given{Store: "memory"}, false, "", "want bolt, postgres://"},
	} {
		got, err := Resolve(c.g, c.localOnly, "mesh verb")
		switch {
		case c.refused != "" && (!errors.Is(err, usage.Err) || !strings.Contains(err.Error(), c.refused)):
			t.Errorf("%s: %v, want bad usage saying %q", c.name, err, c.refused)
		case c.refused == "" && (err != nil || got.Server != c.server):
			t.Errorf("%s: server %q, %v; want %q", c.name, got.Server, err, c.server)
		}
	}
	if got, _ := Resolve(Given{EnvToken: " tok\n"}, false, "v"); got.Token != "tok" {
		t.Errorf("token %q, want the trimmed $MESH_TOKEN", got.Token)
	}
}
