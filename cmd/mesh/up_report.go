package main

// What mesh up says: once the controller serves, and after its run (the
// in-process --passes run's, and --once's).

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"meshplane/api/httpapi"
	"meshplane/daemon"
	"meshplane/meshup"
	"meshplane/projections"
	"meshplane/render"
)

// sayPasses prints each node's status after the --passes run, and where to
// look.
func (e *env) sayPasses(o upOptions, sts []projections.NodeStatus) {
	w := e.stdout
	for _, st := range sts {
		fmt.Fprintf(w, "%-8s sync %-10s health %s\n", st.Node, st.Sync, render.Health(st.Health, st.Held))
		if st.ComposeFailed != nil {
			fmt.Fprintf(w, "         last compose failed: %s\n", st.ComposeFailed.Error)
		}
	}
	fmt.Fprintf(w, `
where to look (the store is closed when this exits; every answer comes from its events):
  go run ./cmd/mesh status%[1]s
  go run ./cmd/mesh node show%[1]s NODE
  go run ./cmd/mesh timeline%[1]s --node NODE
  go run ./cmd/mesh why%[1]s NODE RESOURCE
  go run ./cmd/mesh churn%[1]s
`, dataArg(o, false))
}

// sayOnce prints each node's status after --once, where to look, and how
// to clean up what its nodes on the engine made; it is exit 1 (the nodes
// named on stderr) when a node did not report.
func (e *env) sayOnce(o upOptions, mf meshup.File, res meshup.UpResult) error {
	w := e.stdout
	fmt.Fprintln(w)
	for _, s := range res.Status.Nodes {
		fmt.Fprintf(w, "%-8s sync %-10s health %s\n", s.Node, s.Sync, render.Health(s.Health, s.Held))
		if s.Applied != nil {
			fmt.Fprintf(w, "         applied %s: %s\n", s.Applied.Declaration, s.Applied.Summary)
		}
		if s.ComposeFailed != nil {
			fmt.Fprintf(w, "         last compose failed: %s\n", s.ComposeFailed.Error)
		}
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
`, dataArg(o, true), filepath.Join(o.data, meshup.AgentsDir), meshup.LogFile, o.meshPath, filepath.Join(o.data, meshup.ControllerLogFile))
	var onEngine []string
	for _, n := range mf.Nodes {
		if res.Runtimes[n.Name] == meshup.RuntimeDocker {
			onEngine = append(onEngine, n.Name)
		}
	}
	if len(onEngine) > 0 {
		fmt.Fprintf(w, "on the Docker engine (containers keep running after up exits; run up again to reconcile them):\n%s", meshup.DockerCleanup(onEngine, res.DataID))
	}
	if len(res.Missing) > 0 {
		fmt.Fprintf(e.stderr, "mesh: no report recorded within %s from: %s\n", meshup.OnceTimeout, strings.Join(res.Missing, ", "))
		return &exitError{code: exitFailed}
	}
	return nil
}

// upReady is said once the controller serves: DATA/bus-urls written, and
// where its API is.
func (e *env) upReady(o upOptions, r daemon.Ready) error {
	if err := writeBusURLs(o.data, r.BusURLs); err != nil {
		return err
	}
	tokenFile := filepath.Join(o.data, httpapi.TokenFile)
	fmt.Fprintf(e.stdout, "controller: API %s (token in %s), bus %s, data %s\n", r.APIURL, tokenFile, strings.Join(r.BusURLs, ","), o.data)
	if !o.once {
		fmt.Fprintf(e.stdout, "the CLI against it: export MESH_SERVER=%s MESH_TOKEN=$(cat %s)\n", r.APIURL, tokenFile)
	}
	return nil
}

// dataArg is the --data (and, for the controller, --store) to name in
// "where to look": none for the defaults, the store's password left out.
func dataArg(o upOptions, withStore bool) string {
	s := ""
	if o.data != ".mesh" {
		s = " --data " + o.data
	}
	if withStore && o.store != "" && o.store != "bolt" {
		shown := o.store
		if u, err := url.Parse(o.store); err == nil {
			shown = u.Redacted()
		}
		s += " --store '" + shown + "'"
	}
	return s
}
