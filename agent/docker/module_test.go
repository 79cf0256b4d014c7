package docker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"meshplane/commands"
	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/internal/freeport"
)

// TestModuleFilePublishReachable, the whole way on the real engine: a
// module file that publishes its container's 8080 as the node's setting
// http, defined and assigned through the write side, composed for a node
// whose private address is loopback, applied by the agent: the service
// answers at that address and port from the host, and what it reads at
// /etc/hosts names localhost beside the roster.
func TestModuleFilePublishReachable(t *testing.T) {
	r := newRT(t, anyImage)
	ag := newAgent(t, r.Runtime, r.node)
	port := freeport.Port(t)
	file := `module: hello
routes: [hello.example]
containers:
  - name: hello
    image: docker.io/library/nginx:1.27
    publish: [{port: http, container: 8080}]
    healthcheck: {test: [CMD, /mesh-demo, cat, /etc/hosts], interval: 1s}
    restart: always
`
	name, spec, err := commands.ParseModuleFile("hello.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	h := commands.NewHandler(memstore.New(), events.NewRegistry())
	for _, c := range []commands.Command{
		commands.RegisterNode{Node: r.node},
		commands.SetNodeSetting{Node: r.node, Key: events.SettingPrivateAddress, Value: "127.0.0.1"},
		commands.SetNodeSetting{Node: r.node, Key: "port.http", Value: fmt.Sprint(port)},
		commands.DefineModule{Module: name, Spec: spec},
		commands.AssignModule{Module: name, Node: r.node},
	} {
		if _, err := h.Execute(ctx, "test", c); err != nil {
			t.Fatalf("%T: %v", c, err)
		}
	}
	comp, err := commands.Compose(ctx, h, r.node, "")
	if err != nil {
		t.Fatal(err)
	}
	if o := apply(t, ag, comp.Declaration); len(o.Created) != 1 || len(o.Failed) != 0 {
		t.Fatalf("apply: %+v", o)
	}
	body, took := get(t, fmt.Sprintf("http://127.0.0.1:%d/", port), 30*time.Second)
	t.Logf("the module's service answered at 127.0.0.1:%d %s after the apply", port, took.Round(time.Millisecond))
	for _, want := range []string{"127.0.0.1\tlocalhost", "hello.example"} {
		if !strings.Contains(body, want) {
			t.Errorf("the service's page (its /etc/hosts) does not name %q:\n%s", want, body)
		}
	}
}
