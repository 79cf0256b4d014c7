package web_test

import (
	"html"
	"strconv"
	"strings"
	"testing"
)

// TestAsOfFragmentsSayItIsAMoment: asked for a past moment (?at=), every
// fragment says what was true then and that it is a moment: the status a
// banner with the moment and the way back to live, and none of now's
// controller facts (its role, its push interval); the node's head the
// moment, never "live"; its resources "What ran then", never "What runs
// now"; the why panel the moment.
func TestAsOfFragmentsSayItIsAMoment(t *testing.T) {
	f := newNowFixture(t)
	head, err := f.store.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	at := strconv.FormatUint(head-1, 10)
	for _, c := range []struct {
		path       string
		live, then []string // in the live fragment and not the moment's, in the moment's and not the live one
	}{
		{"/ui/status", []string{"pushes every 1h0m0s", "leader"},
			[]string{`id="as-of-banner"`, "as of position " + at + " (", "a past moment", `data-live>back to live</button>`}},
		{"/ui/node?node=opx", []string{" · live", "What runs now", "what runs on opx now"},
			[]string{`data-as-of="` + at + `"`, "as of position " + at + " (", "What ran then", "As the last apply before that moment left it"}},
		{"/ui/why?node=opx&resource=proxy", nil, []string{`class="as-of-note">as of position ` + at + " ("}},
	} {
		_, live := f.get(t, c.path, testToken)
		sep := "?"
		if strings.Contains(c.path, "?") {
			sep = "&"
		}
		_, then := f.get(t, c.path+sep+"at="+at, testToken)
		live, then = html.UnescapeString(live), html.UnescapeString(then)
		for _, w := range c.live {
			if !strings.Contains(live, w) {
				t.Errorf("%s now does not say %q (the test's premise):\n%s", c.path, w, live)
			}
			if strings.Contains(then, w) {
				t.Errorf("%s as of %s says %q, a fact of now:\n%s", c.path, at, w, then)
			}
		}
		for _, w := range c.then {
			if !strings.Contains(then, w) {
				t.Errorf("%s as of %s does not say %q:\n%s", c.path, at, w, then)
			}
			if strings.Contains(live, w) {
				t.Errorf("%s now says %q:\n%s", c.path, w, live)
			}
		}
	}
}
