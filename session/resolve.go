package session

import (
	"errors"
	"strings"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/events/storeurl"
	"meshplane/internal/usage"
)

// Given is what a command's flags and environment say of where it works.
type Given struct {
	Data, Server, TokenFile, TLSCA, Store string
	// DataSet and StoreSet say --data and --store were on the line.
	DataSet, StoreSet bool
	// EnvServer and EnvToken are $MESH_SERVER and $MESH_TOKEN.
	EnvServer, EnvToken string
	// At is a read verb's --at (api.ParseAt; "": now).
	At string
}

// Resolve is where a command works. --server wins; else an explicit
// --data means the local store; else EnvServer, if set; else the local
// store. A localOnly verb (named verb) refuses a server and ignores
// EnvServer. A store that is not a store URL, or is memory (a verb's
// writes would be gone when it exits), is refused. Every refusal is bad
// usage (usage.Err).
func Resolve(g Given, localOnly bool, verb string) (Target, error) {
	t := Target{Data: g.Data, Server: g.Server, TokenFile: g.TokenFile, TLSCA: g.TLSCA, Store: g.Store, Token: strings.TrimSpace(g.EnvToken)}
	if err := CheckStoreURL(t.Store); err != nil {
		return t, err
	}
	if g.At != "" {
		at, err := api.ParseAt(g.At)
		var rej *commands.Rejection
		if errors.As(err, &rej) {
			return t, err // position 0: refused as the controller refuses a moment before the first event
		} else if err != nil {
			return t, usage.Errorf("--at %v", err)
		}
		t.At = at
	}
	if t.Server != "" && !t.Bolt() && g.StoreSet {
		return t, usage.Errorf("give --server or --store, not both")
	}
	if localOnly {
		if t.Server != "" {
			return t, usage.Errorf("%s works on a local store only (--data DIR); it does not go through --server", verb)
		}
		return t, nil
	}
	if t.Server != "" && g.DataSet {
		return t, usage.Errorf("give --server or --data, not both")
	}
	if t.Server == "" && !g.DataSet {
		t.Server = g.EnvServer
	}
	return t, nil
}

// CheckStoreURL checks a --store: a store URL (storeurl), not memory.
func CheckStoreURL(url string) error {
	if k, err := storeurl.KindOf(url); err != nil || k == storeurl.Memory {
		return usage.Errorf("--store %q: want bolt, postgres://... (postgresql://...) or esdb://... (kurrentdb://...)", storeurl.Redact(url))
	}
	return nil
}

// CheckAt checks a --at: a position or an RFC 3339 time (api.ParseAt).
// Position 0 passes: Resolve refuses it as a moment before the first event
// (exit 3), as diff and revert do.
func CheckAt(s string) error {
	_, err := api.ParseAt(s)
	var rej *commands.Rejection
	if errors.As(err, &rej) {
		return nil
	}
	return err
}
