package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/events/memstore"
)

// The CLI's seam: one rendering over an api.Service, whether the service
// is a controller on the local store or a client of a running controller.
func Example() {
	ctx := context.Background()
	ctrl, err := controller.New(controller.Config{Store: memstore.New()})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(httpapi.Handler(ctrl, "token"))
	defer srv.Close()
	client, err := httpapi.NewClient(srv.URL, "token")
	if err != nil {
		panic(err)
	}

	res, err := client.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: "alice", Nodes: []string{"a", "b"}})
	if err != nil {
		panic(err)
	}
	for _, r := range res.Results {
		for _, ev := range r.Events {
			fmt.Printf("%s #%d %s\n", ev.Stream, ev.Position, ev.Type)
		}
	}

	render := func(mode string, svc api.Service) {
		st, err := svc.Status(ctx, api.StatusRequest{})
		if err != nil {
			panic(err)
		}
		for _, n := range st.Nodes {
			fmt.Printf("%s: %s %s %s\n", mode, n.Node, n.Sync, n.Health)
		}
		_, err = svc.Assign(ctx, api.ModuleNodeRequest{Operator: "alice", Module: "forge", Node: "a"})
		var rej *commands.Rejection
		if errors.As(err, &rej) {
			fmt.Printf("%s: refused (%s)\n", mode, rej.Code)
		}
	}
	render("local", ctrl)
	render("remote", client)
	// Output:
	// node-a #1 node.registered
	// node-b #2 node.registered
	// local: a unreported unknown
	// local: b unreported unknown
	// local: refused (module-unknown)
	// remote: a unreported unknown
	// remote: b unreported unknown
	// remote: refused (module-unknown)
}
