package bus_test

import (
	"encoding/json"
	"errors"
	"testing"

	"meshplane/agent"
	"meshplane/bus"
)

// FuzzDecodeDryRunReply holds that whatever comes back on a dry run either
// decodes into a preview of the node asked, or is the agent's failure
// (ErrDryRunFailed) or refused (ErrBadDryRun); it never panics.
func FuzzDecodeDryRunReply(f *testing.F) {
	good, err := json.Marshal(map[string]any{"version": 1, "preview": agent.Preview{Node: "n1", Declaration: "n1/2",
		Steps: []agent.PreviewStep{{Name: "web", Action: "replace", Changes: []agent.Change{{Field: "mounts./data", From: "/a", To: "/b"}}}}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add("n1", good)
	f.Add("n2", good)
	f.Add("n1", []byte(`{"version":1,"error":"observe: engine away"}`))
	f.Add("n1", []byte(`{"version":1}`))
	f.Add("n1", []byte(`null`))
	f.Add("n1", []byte(`{"preview":{"node":"n1","steps":[{}],"outcome":{"held":[{}]}}}`))
	f.Fuzz(func(t *testing.T, node string, data []byte) {
		pv, err := bus.DecodeDryRunReply(node, data)
		if err != nil {
			if !errors.Is(err, bus.ErrBadDryRun) && !errors.Is(err, bus.ErrDryRunFailed) {
				t.Fatalf("error neither ErrBadDryRun nor ErrDryRunFailed: %v", err)
			}
			return
		}
		if pv.Node != node {
			t.Fatalf("a preview of %q for node %q", pv.Node, node)
		}
	})
}
