package meshup

// What mesh up says: once the controller serves, and after its run (the
// in-process --passes run's, and --once's).

import (
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/controllerd"
	"meshplane/projections"
	"meshplane/render"
)

// Where is what "where to look" names: the data directory, the store
// (the controller's; "" or bolt for the file in Data) and the mesh file.
type Where struct {
	Data, Store, MeshPath string
}

// args is the --data (and, withStore, --store) to name: none for the
// defaults, the store's password left out.
func (w Where) args(withStore bool) string {
	s := ""
	if w.Data != ".mesh" {
		s = " --data " + w.Data
	}
	if withStore && w.Store != "" && w.Store != "bolt" {
		shown := w.Store
		if u, err := url.Parse(w.Store); err == nil {
			shown = u.Redacted()
		}
		s += " --store '" + shown + "'"
	}
	return s
}

// SayPasses prints each node's status after the --passes run, and where
// to look.
func SayPasses(w io.Writer, where Where, sts []projections.NodeStatus) {
	for _, st := range sts {
		fmt.Fprintf(w, "%-8s sync %-10s health %s\n", st.Node, st.Sync, render.Health(st.Health, st.Held))
		if st.ComposeFailed != nil {
			fmt.Fprintf(w, "         last compose failed: %s\n", render.Escape(st.ComposeFailed.Error))
		}
	}
	fmt.Fprintf(w, `
where to look (the store is closed when this exits; every answer comes from its events):
  go run ./cmd/mesh status%[1]s
  go run ./cmd/mesh node show%[1]s NODE
  go run ./cmd/mesh timeline%[1]s --node NODE
  go run ./cmd/mesh why%[1]s NODE RESOURCE
  go run ./cmd/mesh churn%[1]s
`, where.args(false))
}

// SayOnce prints each node's status after --once, where to look, and how
// to clean up what its nodes on the engine made (the nodes of mf res says
// ran there).
func SayOnce(w io.Writer, where Where, mf File, res UpResult) {
	fmt.Fprintln(w)
	for _, s := range res.Status.Nodes {
		sayNode(w, s)
	}
	fmt.Fprintf(w, `
where to look (the controller has stopped; every answer comes from the store's events):
  go run ./cmd/mesh status%[1]s
  go run ./cmd/mesh node show%[1]s NODE
  go run ./cmd/mesh timeline%[1]s --node NODE
  go run ./cmd/mesh why%[1]s NODE RESOURCE
  %[2]s/NODE/%[3]s    (each agent's log)
  %[5]s    (the controller's log)
  go run ./cmd/mesh up%[1]s --mesh %[4]s    (the controller and the agents, until Ctrl-C)
`, where.args(true), filepath.Join(where.Data, AgentsDir), LogFile, where.MeshPath, filepath.Join(where.Data, ControllerLogFile))
	var onEngine []string
	for _, n := range mf.Nodes {
		if res.Runtimes[n.Name] == RuntimeDocker {
			onEngine = append(onEngine, n.Name)
		}
	}
	if len(onEngine) > 0 {
		fmt.Fprintf(w, "on the Docker engine (containers keep running after up exits; run up again to reconcile them):\n%s", DockerCleanup(onEngine, res.DataID))
	}
}

func sayNode(w io.Writer, s api.NodeStatus) {
	fmt.Fprintf(w, "%-8s sync %-10s health %s\n", s.Node, s.Sync, render.Health(s.Health, s.Held))
	if s.Applied != nil {
		fmt.Fprintf(w, "         applied %s: %s\n", s.Applied.Declaration, render.Escape(s.Applied.Summary))
	}
	if s.ComposeFailed != nil {
		fmt.Fprintf(w, "         last compose failed: %s\n", render.Escape(s.ComposeFailed.Error))
	}
}

// SayReady is said once the controller serves: where its API is, and,
// unless once, how to point the CLI at it. Addresses are ones a client
// dials (controllerd.Ready): loopback for the API when it listens on every
// address, and the bus as DATA/bus-urls names it.
func SayReady(w io.Writer, data string, r controllerd.Ready, once bool) {
	tokenFile := filepath.Join(data, httpapi.TokenFile)
	busURLs := r.AgentBusURLs
	if len(busURLs) == 0 {
		busURLs = r.BusURLs
	}
	fmt.Fprintf(w, "controller: API %s (token in %s), bus %s, data %s\n", r.APIURL, tokenFile, strings.Join(busURLs, ","), data)
	if !once {
		fmt.Fprintf(w, "the CLI against it: export MESH_SERVER=%s MESH_TOKEN=$(cat %s)\n", r.APIURL, tokenFile)
	}
}
