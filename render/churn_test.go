package render_test

import (
	"bytes"
	"strings"
	"testing"

	"meshplane/api"
	"meshplane/render"
)

// TestChurnTableIsNoJSON: mesh churn's table writes its evidence in words,
// never as JSON ("failed_reads": null was what an operator read), both
// for an episode that saw everything and one that saw nothing.
func TestChurnTableIsNoJSON(t *testing.T) {
	var b bytes.Buffer
	resp := churn
	resp.Nodes = append(resp.Nodes, api.NodeChurn{Node: "empty", Episodes: []api.Episode{{Loop: true}}})
	if err := render.Churn(&b, render.Table, resp, api.Skipped{}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"{", "}", "null", `"`, "failed_reads", "roster_changed"} {
		if strings.Contains(b.String(), bad) {
			t.Errorf("the table holds %q, JSON's:\n%s", bad, b.String())
		}
	}
	for _, want := range []string{"failed read: module forge: timeout", "roster changed: photos.mesh", "evidence: none recorded"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, b.String())
		}
	}
}
