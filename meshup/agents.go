package meshup

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"meshplane/agent"
	"meshplane/agent/agentd"
	"meshplane/internal/forker"
)

// Where `mesh up` keeps the local agents it starts, in its data directory:
// DATA/agents/NODE/ is one agent's data directory (its outbox and lock),
// holding creds.json (the node's bus credentials, mode 0600) and agent.log
// (the agent process's output, appended).
const (
	AgentsDir = "agents"
	CredsFile = "creds.json"
	LogFile   = "agent.log"
	// DockerRootDir, in an agent's directory, holds a node on the Docker
	// runtime's directories and files (--docker-root): up does not write
	// to this machine's /etc or /var/lib for the example.
	DockerRootDir = "root"
	// ArtifactsDir is where, in an agent's data directory, the artifact
	// store it serves keeps its blobs and manifests (`mesh agent
	// --artifact-store`, agentd.ArtifactsDir; format in package artifacts).
	ArtifactsDir = agentd.ArtifactsDir
)

// DockerPrefixFile, in a node's agent directory, is the --docker-prefix
// its agent is given on the Docker runtime: "NODE-ID6-", the node and the
// first 6 hex digits of the data directory's id, so that two data
// directories' nodes of one name on one engine (two checkouts running the
// example's local) never want the same container, network or volume name.
// A node an older up already ran on the engine (its root directory there,
// and no file) keeps "NODE-", the names its containers, networks and
// volumes have (a volume is data: renaming it would start the node on an
// empty one); its containers are found by their labels whatever their
// names, and nothing is recreated on the upgrade. The file keeps the choice.
// Two such older directories of one node name still want the same names:
// the second's resources fail naming the first's data id
// (docker.ErrOtherMesh), never a churn.
const DockerPrefixFile = "docker-prefix"

// dockerPrefix is the --docker-prefix of node's agent in dir: the one
// DockerPrefixFile keeps, else a new one, written there.
func dockerPrefix(dir, node, dataID string) (string, error) {
	path := filepath.Join(dir, DockerPrefixFile)
	b, err := os.ReadFile(path)
	if err == nil {
		p := strings.TrimSpace(string(b))
		if !strings.HasPrefix(p, node+"-") || strings.ContainsAny(p, " /\t\n") {
			return "", fmt.Errorf("%s holds %.40q, not a prefix of node %s's engine names: remove it and run up again", path, p, node)
		}
		return p, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	prefix := node + "-"
	if _, err := os.Stat(filepath.Join(dir, DockerRootDir)); errors.Is(err, os.ErrNotExist) && len(dataID) >= 6 {
		prefix = node + "-" + dataID[:6] + "-"
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	if err := os.WriteFile(path, []byte(prefix+"\n"), 0o644); err != nil {
		return "", err
	}
	return prefix, nil
}

// StopTimeout is how long Agents.Stop waits for an agent after SIGTERM
// before it kills it.
const StopTimeout = 10 * time.Second

// AgentsConfig is what StartAgents starts.
type AgentsConfig struct {
	// Data is up's data directory: each agent's is Data/agents/NODE.
	Data string
	// DataID is the data directory's id: the label (agent.LabelData) of
	// everything a node on the Docker runtime makes on the engine.
	DataID string
	// File names the nodes, one agent each, and a simulated node's found:
	// directories (passed as --sim-found).
	File File
	// Runtimes is the runtime each node runs on (RuntimeSim or
	// RuntimeDocker).
	Runtimes map[string]string
	// StoreNode's agent serves the artifact store on StoreAt; "": none.
	StoreNode, StoreAt string
	// Program is the mesh binary, run as `Program agent --creds ...`;
	// "" is this process's own executable.
	Program string
	// Register writes node's bus credentials into the file creds before
	// its agent starts.
	Register func(node, creds string) error
	// Out is told of each agent started: its pid, runtime and log.
	Out io.Writer
}

// Agents are the agent processes StartAgents started, stopped by Stop.
type Agents []*exec.Cmd

// StartAgents starts one agent process per node of cfg.File, on the
// runtime cfg.Runtimes gives it: sim (the mesh file's found: directories
// passed as --sim-found), or docker (the engine the environment names; the
// node's paths under DATA/agents/NODE/root, its engine names prefixed with
// the node and the data directory's id (dockerPrefix), everything it makes
// there labelled with that id). Each has its credentials written into DATA/agents/NODE (Register)
// and its output appended to agent.log there; the agent of StoreNode
// serves the artifact store on StoreAt. Each runs in a process group of
// its own, so a Ctrl-C at the terminal reaches up alone, which stops them
// in order; each dies with up (its parent-death signal), and an orphan an
// earlier up left on the node's directory is stopped first (orphans.go).
// On an error the ones started are returned, for the caller to Stop.
func StartAgents(cfg AgentsConfig) (Agents, error) {
	if len(cfg.File.Nodes) == 0 {
		return nil, nil
	}
	exe := cfg.Program
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("start agents: %w", err)
		}
	}
	var procs Agents
	for _, n := range cfg.File.Nodes {
		dir := filepath.Join(cfg.Data, AgentsDir, n.Name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return procs, fmt.Errorf("start agent %s: %w", n.Name, err)
		}
		if err := stopOrphan(dir, n.Name, cfg.Out); err != nil {
			return procs, err
		}
		creds := filepath.Join(dir, CredsFile)
		if err := cfg.Register(n.Name, creds); err != nil {
			return procs, err
		}
		logf, err := os.OpenFile(filepath.Join(dir, LogFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return procs, fmt.Errorf("start agent %s: %w", n.Name, err)
		}
		rt := cfg.Runtimes[n.Name]
		args := []string{"agent", "--creds", creds, "--data", dir, "--runtime", rt}
		switch rt {
		case RuntimeDocker:
			prefix, err := dockerPrefix(dir, n.Name, cfg.DataID) // before the root is made: it tells an older up's node
			if err != nil {
				return procs, fmt.Errorf("start agent %s: %w", n.Name, err)
			}
			root, err := filepath.Abs(filepath.Join(dir, DockerRootDir))
			if err == nil {
				err = os.MkdirAll(root, 0o755)
			}
			if err != nil {
				return procs, fmt.Errorf("start agent %s: %w", n.Name, err)
			}
			args = append(args, "--docker-root", root, "--docker-prefix", prefix,
				"--docker-label", agent.LabelData+"="+cfg.DataID)
		default:
			if len(n.Found) > 0 {
				args = append(args, "--sim-found", strings.Join(n.Found, ","))
			}
		}
		if n.Name == cfg.StoreNode {
			args = append(args, "--artifact-store", cfg.StoreAt)
		}
		c := exec.Command(exe, args...)
		c.Stdout, c.Stderr = logf, logf
		c.Env = append(os.Environ(), "MESH_SERVER=", "MESH_TOKEN=")
		// Its own process group: a Ctrl-C at the terminal reaches up, which
		// stops the agents itself, in order. Pdeathsig: up dying, even by
		// SIGKILL, stops it too (see orphans.go).
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
		err = forker.Do(c.Start)
		logf.Close() // the child has its own descriptor
		if err != nil {
			return procs, fmt.Errorf("start agent %s: %w", n.Name, err)
		}
		procs = append(procs, c)
		if err := writePIDFile(dir, c.Process.Pid); err != nil {
			return procs, fmt.Errorf("start agent %s: %w", n.Name, err)
		}
		fmt.Fprintf(cfg.Out, "agent %-8s pid %d, runtime %s, log %s\n", n.Name, c.Process.Pid, rt, filepath.Join(dir, LogFile))
		if n.Name == cfg.StoreNode {
			fmt.Fprintf(cfg.Out, "agent %-8s serves the artifact store on %s (%s)\n", n.Name, cfg.StoreAt, filepath.Join(dir, ArtifactsDir))
		}
	}
	return procs, nil
}

// Stop stops every agent: SIGTERM (a clean stop: its outbox is on disk),
// then SIGKILL after StopTimeout. An agent that exits with an error, or has
// to be killed, is named in the error.
func (ps Agents) Stop() error {
	var errs []error
	for _, c := range ps {
		_ = c.Process.Signal(syscall.SIGTERM)
	}
	for _, c := range ps {
		exited := make(chan error, 1)
		go func() { exited <- c.Wait() }()
		select {
		case err := <-exited:
			if err != nil && !terminated(err) {
				errs = append(errs, fmt.Errorf("agent pid %d: %w", c.Process.Pid, err))
			}
		case <-time.After(StopTimeout):
			_ = c.Process.Kill()
			<-exited
			errs = append(errs, fmt.Errorf("agent pid %d: did not stop in 10 s: killed", c.Process.Pid))
		}
	}
	return errors.Join(errs...)
}

// terminated says whether err is a process's exit by SIGTERM: an agent
// stopped before it set up its own handling of the signal (it had started
// nothing yet), not a failure.
func terminated(err error) bool {
	var xe *exec.ExitError
	if !errors.As(err, &xe) {
		return false
	}
	ws, ok := xe.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM
}
