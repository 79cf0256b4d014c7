package api_test

import (
	"os"
	"strings"
	"testing"
)

// TestDocPageFields: docs/http-api.md's list of JSON field names is
// testdata/fields.golden, word for word (TestFieldNames keeps that file
// true to the types).
func TestDocPageFields(t *testing.T) {
	page, err := os.ReadFile("../docs/http-api.md")
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile("testdata/fields.golden")
	if err != nil {
		t.Fatal(err)
	}
	const open = "## JSON field names\n"
	s := string(page)
	i := strings.Index(s, open)
	if i < 0 {
		t.Fatal(`docs/http-api.md has no "## JSON field names" section`)
	}
	s = s[i:]
	start := strings.Index(s, "```text\n")
	end := strings.LastIndex(s, "\n```")
	if start < 0 || end < start {
		t.Fatal("docs/http-api.md's field names are not in a ```text block")
	}
	if got := s[start+len("```text\n") : end+1]; got != string(golden) {
		t.Errorf("docs/http-api.md's field names differ from api/testdata/fields.golden: copy the file into the block")
	}
}
