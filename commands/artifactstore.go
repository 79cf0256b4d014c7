package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Where the artifact store is reached (docs/design.md rule 6).
var (
	// ErrNoArtifactStore: no node was given an artifact-store port.
	ErrNoArtifactStore = errors.New("no node holds the artifact store")
	// ErrArtifactStoreUnreachable: the node holding the artifact store has
	// no private address, and the one asking is not that node.
	ErrArtifactStoreUnreachable = errors.New("the artifact store has no private address to reach it by")
)

// ArtifactStoreAddress is the address ("host:port") at which the
// declaration of node forNode reaches the artifact store held by store,
// the one reading of rule 6: at store's private address, on the port it
// was given; by loopback in the one case where forNode is store itself and
// it has no private address yet (a first node, mid-genesis). Otherwise it
// is an error wrapping ErrArtifactStoreUnreachable (ErrNoArtifactStore when
// store was given no port).
func ArtifactStoreAddress(store Node, forNode string) (string, error) {
	port := store.ArtifactStorePort()
	if port == "" {
		return "", fmt.Errorf("node %s: %w", store.Name, ErrNoArtifactStore)
	}
	host := store.PrivateAddress()
	if host == "" {
		if forNode != store.Name {
			return "", fmt.Errorf("the artifact store on %s: %w", store.Name, ErrArtifactStoreUnreachable)
		}
		host = "127.0.0.1"
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return host + ":" + port, nil
}

// ArtifactStoreOfMesh reads where the operator reaches the artifact store
// from outside any declaration (mesh artifact push): ArtifactStoreAddress
// of the node holding it (the first, in name order, given a port, as
// compose finds it; r.Nodes is sorted), asked for by the mesh's only node while it is the
// only one (the first node, mid-genesis: the operator is on it), and by no
// node once there are others. A failed read is an error, never "no store"
// (rule 1).
func ArtifactStoreOfMesh(ctx context.Context, r Reader) (string, error) {
	names, err := r.Nodes(ctx)
	if err != nil {
		return "", fmt.Errorf("find the artifact store: read the node list: %w", err)
	}
	for _, name := range names {
		n, err := r.Node(ctx, name)
		if err != nil {
			return "", fmt.Errorf("find the artifact store: read node %s: %w", name, err)
		}
		if n.ArtifactStorePort() == "" {
			continue
		}
		forNode := ""
		if len(names) == 1 {
			forNode = name
		}
		return ArtifactStoreAddress(n, forNode)
	}
	return "", ErrNoArtifactStore
}
