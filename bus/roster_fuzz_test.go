package bus_test

import (
	"errors"
	"meshplane/internal/gz"
	"testing"

	"meshplane/bus"
	"meshplane/declaration"
)

// FuzzDecodeRoster holds that whatever is under the roster's key either
// decodes into a roster that checks (a revision, routes in order, the
// digest of its routes) and encodes again to the same roster, or is
// refused with ErrBadRosterValue; it never panics.
func FuzzDecodeRoster(f *testing.F) {
	for _, r := range []declaration.Roster{declaration.NewRoster(1, nil), declaration.NewRoster(7, routesN(5))} {
		b, err := bus.EncodeRoster(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add(gz.Compress([]byte(`{"revision":1,"digest":"sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945","routes":[]}`)))
	f.Add(gz.Compress([]byte(`{"revision":1,"routes":[{"name":"a","node":"n"},{"name":"a","node":"n"}]}`)))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := bus.DecodeRoster(data)
		if err != nil {
			if !errors.Is(err, bus.ErrBadRosterValue) {
				t.Fatalf("error not ErrBadRosterValue: %v", err)
			}
			return
		}
		if err := r.Check(); err != nil {
			t.Fatalf("a decoded roster does not check: %v", err)
		}
		if r.Hosts() != declaration.HostsFile(r.Routes) {
			t.Fatal("a decoded roster's hosts file is not its routes'")
		}
		b, err := bus.EncodeRoster(r)
		if err != nil {
			t.Fatalf("a decoded roster does not encode: %v", err)
		}
		back, err := bus.DecodeRoster(b)
		if err != nil || back.Revision != r.Revision || back.Digest != r.Digest || len(back.Routes) != len(r.Routes) {
			t.Fatalf("a re-encoded roster does not decode as itself: %v", err)
		}
	})
}
