package commands

import (
	"context"
	"errors"
	"testing"

	"meshplane/events"
)

func storeNode(name, private, port string) Node {
	n := Node{Name: name, Settings: map[string]string{}}
	if private != "" {
		n.Settings[events.SettingPrivateAddress] = private
	}
	if port != "" {
		n.Settings[events.SettingArtifactStore] = port
	}
	return n
}

// TestArtifactStoreAddress is rule 6's one reading: the private address,
// and loopback only for the store's own node while it has none.
func TestArtifactStoreAddress(t *testing.T) {
	for _, tc := range []struct {
		name    string
		store   Node
		forNode string
		want    string
		err     error
	}{
		{"private address, for another node", storeNode("a", "10.0.0.1", "7481"), "b", "10.0.0.1:7481", nil},
		{"private address, for itself", storeNode("a", "10.0.0.1", "7481"), "a", "10.0.0.1:7481", nil},
		{"private address, for no node", storeNode("a", "10.0.0.1", "7481"), "", "10.0.0.1:7481", nil},
		{"IPv6 private address", storeNode("a", "fd00::1", "7481"), "b", "[fd00::1]:7481", nil},
		{"no private address, for itself: loopback", storeNode("a", "", "7481"), "a", "127.0.0.1:7481", nil},
		{"no private address, for another node", storeNode("a", "", "7481"), "b", "", ErrArtifactStoreUnreachable},
		{"no private address, for no node", storeNode("a", "", "7481"), "", "", ErrArtifactStoreUnreachable},
		{"no port", storeNode("a", "10.0.0.1", ""), "a", "", ErrNoArtifactStore},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ArtifactStoreAddress(tc.store, tc.forNode)
			if got != tc.want || !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Fatalf("ArtifactStoreAddress(%v, %q) = %q, %v; want %q, %v", tc.store.Settings, tc.forNode, got, err, tc.want, tc.err)
			}
		})
	}
}

// TestArtifactStoreOfMesh: the operator reaches the store by loopback only
// while its node is the mesh's only one (mid-genesis); a failed read is an
// error, never "no store".
func TestArtifactStoreOfMesh(t *testing.T) {
	boom := errors.New("disk on fire")
	for _, tc := range []struct {
		name  string
		nodes []Node
		fail  string // a read that fails
		want  string
		err   error
	}{
		{"no node", nil, "", "", ErrNoArtifactStore},
		{"no node holds it", []Node{storeNode("a", "10.0.0.1", "")}, "", "", ErrNoArtifactStore},
		{"first node, mid-genesis", []Node{storeNode("a", "", "7481")}, "", "127.0.0.1:7481", nil},
		{"a second node joined", []Node{storeNode("a", "", "7481"), storeNode("b", "10.0.0.2", "")}, "", "", ErrArtifactStoreUnreachable},
		{"at its private address", []Node{storeNode("a", "10.0.0.1", "7481"), storeNode("b", "10.0.0.2", "")}, "", "10.0.0.1:7481", nil},
		{"the first in name order", []Node{storeNode("b", "10.0.0.2", "7482"), storeNode("a", "10.0.0.1", "7481")}, "", "10.0.0.1:7481", nil},
		{"the node list unread", []Node{storeNode("a", "", "7481")}, "nodes", "", boom},
		{"a node unread", []Node{storeNode("a", "", ""), storeNode("b", "10.0.0.2", "7481")}, "node a", "", boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeMesh()
			for _, n := range tc.nodes {
				f.nodes[n.Name] = n
			}
			if tc.fail != "" {
				f.fail[tc.fail] = boom
			}
			got, err := ArtifactStoreOfMesh(context.Background(), f)
			if got != tc.want || !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Fatalf("ArtifactStoreOfMesh = %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
			if tc.err == boom && errors.Is(err, ErrNoArtifactStore) {
				t.Fatalf("a failed read said no store: %v", err)
			}
		})
	}
}
