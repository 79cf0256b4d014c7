package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"meshplane/agent"
	"meshplane/declaration"
)

// What a container sees at /etc/hosts.
//
// Compose mounts the node's hosts file (declaration.HostsPath, the roster)
// at /etc/hosts. Mounted as it is, a container would lose what the engine's
// own /etc/hosts holds: localhost, and its own name and address, so a
// health check calling localhost or a program resolving its own host name
// fails. So each container gets a file of its own, HostsDir/NAME, bound at
// /etc/hosts instead: the engine's lines (localhost, the IPv6 names, the
// container's host name at its address, known once it has started) above a
// marker line, the roster below it. Writing the node's hosts file rewrites
// the roster part of every container's file in place (rule 2: same inode,
// no container recreated). The declared spec keeps naming HostsPath: this is
// how this runtime serves it.

// HostsDir is where each container's own hosts file lives on the host.
const HostsDir = declaration.HostsPath + ".d"

// rosterMark divides a container's hosts file: the engine's lines above
// it, the roster below.
const rosterMark = "# the mesh's roster (meshplane), rewritten in place:\n"

// engineHosts are the lines the engine's own /etc/hosts starts with.
const engineHosts = "127.0.0.1\tlocalhost\n" +
	"::1\tlocalhost ip6-localhost ip6-loopback\n" +
	"fe00::0\tip6-localnet\n" +
	"ff00::0\tip6-mcastprefix\n" +
	"ff02::1\tip6-allnodes\n" +
	"ff02::2\tip6-allrouters\n"

func hostsOf(name string) string { return HostsDir + "/" + name }

// rosterHosts mounts the node's hosts file at /etc/hosts: m is that mount.
func rosterHosts(src, target string) bool {
	return src == declaration.HostsPath && target == "/etc/hosts"
}

// roster reads the node's hosts file: "" when there is none yet.
func (r *Runtime) roster(ctx context.Context) (string, error) {
	b, err := r.ReadFile(ctx, declaration.HostsPath)
	if errors.Is(err, agent.ErrNotFound) {
		return "", nil
	}
	return string(b), err
}

// WriteFile implements agent.Runtime: writeFile (fs.go), and when p is the
// node's hosts file, the roster part of every container's own hosts file
// rewritten in place with it.
func (r *Runtime) WriteFile(ctx context.Context, p string, content []byte, mode uint32) error {
	if err := r.writeFile(ctx, p, content, mode); err != nil {
		return err
	}
	if p == declaration.HostsPath {
		return r.refreshHosts(ctx, content)
	}
	return nil
}

// writeContainerHosts writes container name's hosts file: the engine's
// lines, own (its host name at its address; nil keeps what the file has,
// for a container not started yet), the roster.
func (r *Runtime) writeContainerHosts(ctx context.Context, name string, own *string) error {
	r.hostsMu.Lock()
	defer r.hostsMu.Unlock()
	roster, err := r.roster(ctx)
	if err != nil {
		return err
	}
	head := engineHosts
	if own != nil {
		head += *own
	} else if old, err := r.ReadFile(ctx, hostsOf(name)); err == nil {
		if h, _, ok := strings.Cut(string(old), rosterMark); ok {
			head = h
		}
	}
	return r.writeFile(ctx, hostsOf(name), []byte(head+rosterMark+roster), agent.HostsMode)
}

// startedHosts writes the own line of container name, started as id, into
// its hosts file.
func (r *Runtime) startedHosts(ctx context.Context, name, id string) error {
	own, err := r.ownHosts(ctx, id)
	if err != nil {
		return fmt.Errorf("inspect for its hosts file: %w", err)
	}
	return r.writeContainerHosts(ctx, name, &own)
}

// ownHosts is the line naming a started container by its host name: at
// each of its addresses; on the node's network, at 127.0.1.1, as Debian
// names a host itself.
func (r *Runtime) ownHosts(ctx context.Context, id string) (string, error) {
	in, err := r.eng.ContainerInspect(ctx, id)
	if err != nil {
		return "", err
	}
	if in.Config == nil || in.Config.Hostname == "" {
		return "", nil
	}
	var b strings.Builder
	if in.NetworkSettings != nil {
		for _, n := range in.NetworkSettings.Networks {
			if n != nil && n.IPAddress != "" && !strings.Contains(b.String(), n.IPAddress+"\t") {
				fmt.Fprintf(&b, "%s\t%s\n", n.IPAddress, in.Config.Hostname)
			}
		}
	}
	if b.Len() == 0 && in.HostConfig != nil && in.HostConfig.NetworkMode.IsHost() {
		fmt.Fprintf(&b, "127.0.1.1\t%s\n", in.Config.Hostname)
	}
	return b.String(), nil
}

// refreshHosts rewrites the roster part of every container's hosts file in
// place, after the node's hosts file became roster.
func (r *Runtime) refreshHosts(ctx context.Context, roster []byte) error {
	r.hostsMu.Lock()
	defer r.hostsMu.Unlock()
	entries, err := os.ReadDir(r.host(HostsDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("docker: the containers' hosts files: %w: %v", agent.ErrRuntime, err)
	}
	var errs []error
	for _, e := range entries {
		if !e.Type().IsRegular() || agent.ValidateContainerName(e.Name()) != nil {
			continue
		}
		p := hostsOf(e.Name())
		old, err := r.ReadFile(ctx, p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		head, _, ok := strings.Cut(string(old), rosterMark)
		if !ok {
			head = engineHosts
		}
		if err := r.writeFile(ctx, p, []byte(head+rosterMark+string(roster)), agent.HostsMode); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
