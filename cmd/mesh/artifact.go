package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"meshplane/artifacts"
	"meshplane/commands"
)

// cmdArtifactPush uploads an image tarball to the artifact store and
// records the build: its module, its name and its digest, never an address
// (DESIGN.md rule 6). The store is found where it is used: at the private
// address of the node holding it (`node set NODE artifact-store PORT`), or
// by loopback when that node has none yet; --registry overrides.
//
// The store is read, the image pushed, then the build recorded: the event
// store is not held open during the upload, and nothing is recorded unless
// the store holds the image.
func cmdArtifactPush(ctx context.Context, e *env, args []string) error {
	fs := e.flags("artifact push", "[--data DIR] [--registry ADDR] [--timeout D] MODULE NAME IMAGE.tar")
	data := dataFlag(fs)
	registry := fs.String("registry", "", "push to the artifact store at `host:port`, not the one the mesh's node holds")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up the upload after this `duration`")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 3 {
		return usagef("want MODULE NAME IMAGE.tar (an image tarball, as docker save writes it)")
	}
	module, name, tarball := pos[0], pos[1], pos[2]
	addr := *registry
	err = withLocal(ctx, *data, false, false, func(l *local) error {
		m, err := l.handler.Module(ctx, module)
		if err != nil {
			return fmt.Errorf("read module %s: %w", module, err)
		}
		if !m.Defined {
			return &commands.Rejection{Code: commands.CodeModuleUnknown, Msg: fmt.Sprintf("cannot record artifact %s: module %s is not defined", name, module)}
		}
		if addr == "" {
			addr, err = storeAddress(ctx, l.handler)
		}
		return err
	})
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	digest, err := artifacts.Push(pctx, addr, name, tarball)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "pushed %s to %s/%s@%s\n", tarball, addr, name, digest)
	return execute(ctx, e, *data, commands.RecordArtifact{Module: module, Name: name, Digest: digest})
}

// storeAddress is "host:port" of the artifact store, from the node that
// holds it. A failure to read a node is an error, never "no store" (rule 1).
func storeAddress(ctx context.Context, h *commands.Handler) (string, error) {
	names, err := h.Nodes(ctx)
	if err != nil {
		return "", fmt.Errorf("find the artifact store: read the node list: %w", err)
	}
	for _, name := range names {
		n, err := h.Node(ctx, name)
		if err != nil {
			return "", fmt.Errorf("find the artifact store: read node %s: %w", name, err)
		}
		port := n.ArtifactStorePort()
		if port == "" {
			continue
		}
		host := n.PrivateAddress()
		if host == "" {
			host = "127.0.0.1" // a first node, mid-genesis: this machine
		}
		return net.JoinHostPort(host, port), nil
	}
	return "", fmt.Errorf("no node holds the artifact store (mesh node set NODE artifact-store PORT), and no --registry was given")
}
