package main

// Where the agent of the node holding the artifact store serves it on
// this machine, for `mesh up` (its builds and the runtimes are meshup's).

import (
	"fmt"
	"net"
	"strconv"

	"meshplane/commands"
	"meshplane/events"
	"meshplane/meshup"
)

// storeServed is where the agent of the node holding mf's artifact store
// serves it, when that node runs on this machine's engine: where that
// node's own declaration reaches it (commands.ArtifactStoreAddress: its
// private address, else loopback). "" when no such node: a simulated node
// serves nothing.
func storeServed(mf meshup.File, rts map[string]string) (node, addr string, err error) {
	for _, n := range mf.Nodes {
		if n.ArtifactStore == 0 || rts[n.Name] != runtimeDocker {
			continue
		}
		held := commands.Node{Name: n.Name, Settings: map[string]string{
			events.SettingPrivateAddress: n.PrivateAddress,
			events.SettingArtifactStore:  strconv.Itoa(n.ArtifactStore),
		}}
		addr, err := commands.ArtifactStoreAddress(held, n.Name)
		if err != nil {
			return "", "", fmt.Errorf("node %s: %w", n.Name, err)
		}
		return n.Name, addr, nil
	}
	return "", "", nil
}

// storeFree checks that nothing listens on addr yet, so that an agent that
// could not serve the artifact store there fails up at once, not after
// storeTimeout.
func storeFree(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("the artifact store's address %s: %w (another mesh up running? change the node's artifact-store port in the mesh file)", addr, err)
	}
	return ln.Close()
}
