package bus

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"meshplane/declaration"
)

// TestRosterTooLarge: a roster that does not fit in a message of the bus
// gzipped is refused before it is put, naming its size and the bus's.
func TestRosterTooLarge(t *testing.T) {
	routes := make([]declaration.Route, 200)
	for i := range routes {
		routes[i] = declaration.Route{Name: strings.Repeat("x", 3) + string(rune('a'+i%26)) + strings.Repeat("y", i), Node: "n"}
	}
	r := declaration.NewRoster(4, sortedRoutes(routes))
	b, err := encodeRosterWithin(r, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	_, err = encodeRosterWithin(r, int64(len(b)-1))
	if !errors.Is(err, ErrRosterTooLarge) {
		t.Fatalf("encode within %d bytes: %v, want ErrRosterTooLarge", len(b)-1, err)
	}
	for _, s := range []string{"revision 4", "200 routes", strconv.Itoa(len(b)) + " bytes gzipped", strconv.Itoa(len(b)-1) + " bytes"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
}

func sortedRoutes(rs []declaration.Route) []declaration.Route {
	out := append([]declaration.Route(nil), rs...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Name < out[j-1].Name; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// TestRosterPermitted: a node user of NodePermissions may read the roster
// value, one minted before it may not, one without publish permissions may
// publish anything, and what does not decode permits nothing.
func TestRosterPermitted(t *testing.T) {
	dir := t.TempDir()
	a, err := LoadAuthority(dir)
	if err != nil {
		t.Fatal(err)
	}
	now, err := a.Issuer().Node("n1")
	if err != nil {
		t.Fatal(err)
	}
	old, err := NodeBeforeRoster(a.Issuer(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := a.Issuer().Controller()
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		jwt  string
		want bool
	}{"today's": {now.JWT, true}, "before the roster": {old.JWT, false}, "no permissions": {ctl.JWT, true}, "not a JWT": {"x.y.z", false}} {
		if got := rosterPermitted(tc.jwt); got != tc.want {
			t.Errorf("%s user: rosterPermitted %v, want %v", name, got, tc.want)
		}
	}
}
