package httpapi

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// TestDocPageRoutes holds docs/http-api.md's route table to the routes the
// handler registers, as TestRouteTable holds doc.go's.
func TestDocPageRoutes(t *testing.T) {
	page, err := os.ReadFile("../../docs/http-api.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^(GET|POST|PUT|DELETE|PATCH) +(/v1/\S*)`)
	var documented []string
	for _, m := range row.FindAllStringSubmatch(string(page), -1) {
		documented = append(documented, m[1]+" "+m[2])
	}
	served := slices.Clone(Handler((*Client)(nil), "t").(*handler).patterns)
	served = append(served, JoinHandler(nil, nil).(joinMux).h.patterns...)
	slices.Sort(documented)
	slices.Sort(served)
	if len(served) == 0 || !slices.Equal(documented, served) {
		t.Errorf("docs/http-api.md's route table and the handler's routes differ:\ndocumented %q\nserved     %q", documented, served)
	}
}
