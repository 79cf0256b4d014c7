package httpapi

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// TestRouteTable holds the package comment's route table to the routes the
// handler registers: every route documented, nothing documented that is
// not served.
func TestRouteTable(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^//\t(GET|POST|PUT|DELETE|PATCH) +(/v1/\S*)`)
	var documented []string
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		documented = append(documented, m[1]+" "+m[2])
	}
	served := Handler((*Client)(nil), "t").(*handler).patterns
	served = append(slices.Clip(served), JoinHandler(nil, nil).(joinMux).h.patterns...)
	slices.Sort(documented)
	served = slices.Clone(served)
	slices.Sort(served)
	if len(served) == 0 || !slices.Equal(documented, served) {
		t.Errorf("the route table in doc.go and the handler's routes differ:\ndocumented %q\nserved     %q", documented, served)
	}
}
