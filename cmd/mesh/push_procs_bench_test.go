package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"meshplane/agent/agentd"
	"meshplane/agent/simruntime"
	"meshplane/api"
	"meshplane/controllerd"
	"meshplane/internal/meshtest"
)

// benchPushToRecordedProcs is benchPushToRecorded with the agents in procs
// child processes instead of the benchmark's: n agents at about six
// descriptors each do not fit in one process's 20,000 (`ulimit -Hn`), so
// each child (the test binary re-run by TestMain with MESH_TEST_AGENTS,
// testAgents) runs n/procs of them, each agentd.Run as startNode runs it
// (its own connection and watch, the simulated runtime, its outbox on
// disk). The controller stays in the benchmark's process (controllerd.Run, its
// embedded bus on loopback), so its store hooks time every report as the
// one-process cases do: the same method and the same metrics.
func benchPushToRecordedProcs(b *testing.B, n, procs int) {
	rec := &recordings{}
	d := meshtest.StartDaemon(b, b.TempDir(), "", func(c *controllerd.Config) {
		c.Recorded, c.Pushed = rec.recorded, rec.pushed
	})
	nodes := make([]string, n)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("node-%04d", i)
	}
	ctx := context.Background()
	for batch := range slices.Chunk(nodes, 500) {
		if _, err := d.Client.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: meshtest.TestOperator, Nodes: batch}); err != nil {
			b.Fatal(err)
		}
	}
	all := rec.reset(n)
	for part := range slices.Chunk(nodes, (n+procs-1)/procs) {
		dir := b.TempDir()
		for _, node := range part {
			if err := controllerd.RegisterCreds(d.Cfg.Data, node, filepath.Join(dir, node+".creds"), d.Ready.BusURLs, nil); err != nil {
				b.Fatal(err)
			}
		}
		startAgentsProc(b, dir, part)
	}
	limit := 2*time.Minute + time.Duration(n)*50*time.Millisecond
	select {
	case <-all:
	case <-time.After(limit):
		b.Fatalf("the first applies were not all recorded within %v", limit)
	}
	runPushRounds(b, d, rec, n)
}

// startAgentsProc runs nodes' agents in a child process (testAgents), their
// credentials and data in dir, until the test's cleanup closes its stdin.
// Its stderr is dir/agents.log, shown when the benchmark fails.
func startAgentsProc(b *testing.B, dir string, nodes []string) {
	b.Helper()
	logPath := filepath.Join(dir, "agents.log")
	logf, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	defer logf.Close() // the child has its own copy
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "MESH_TEST_AGENTS="+dir, "MESH_TEST_AGENTS_NODES="+strings.Join(nodes, ","))
	cmd.Stderr = logf
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "ready" {
				close(ready)
			}
		}
		_, _ = io.Copy(io.Discard, out)
		done <- cmd.Wait()
	}()
	b.Cleanup(func() {
		stdin.Close() // the child stops its agents at EOF
		select {
		case err := <-done:
			if err != nil {
				b.Errorf("agents %s to %s: %v", nodes[0], nodes[len(nodes)-1], err)
			}
		case <-time.After(90 * time.Second):
			_ = cmd.Process.Kill()
			b.Errorf("agents %s to %s did not stop within 90s", nodes[0], nodes[len(nodes)-1])
			<-done
		}
		if b.Failed() {
			log, _ := os.ReadFile(logPath)
			b.Logf("agents %s to %s, their stderr:\n%s", nodes[0], nodes[len(nodes)-1], tail(string(log), 40))
		}
	})
	select {
	case <-ready:
	case err := <-done:
		done <- err
		b.Fatalf("the agents' process ended before it started them: %v", err)
	case <-time.After(60 * time.Second):
		b.Fatal("the agents' process did not start them within 60s")
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// testAgents is the test binary run as a process of agents (TestMain,
// MESH_TEST_AGENTS=DIR): one agentd.Run for each node of
// MESH_TEST_AGENTS_NODES (comma-separated), as startNode configures it but
// with no Applied hook, its credentials DIR/NODE.creds and its data
// directory DIR/NODE. It prints "ready" once every agent is started, and
// stops them when its stdin ends (the benchmark closed it, or died).
func testAgents() int {
	dir := os.Getenv("MESH_TEST_AGENTS")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for node := range strings.SplitSeq(os.Getenv("MESH_TEST_AGENTS_NODES"), ",") {
		data := filepath.Join(dir, node)
		if err := os.Mkdir(data, 0o700); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		cfg := agentd.Config{
			Creds: filepath.Join(dir, node+".creds"), Data: data, Runtime: agentd.RuntimeSim, Interval: time.Hour,
			RetryMax: 100 * time.Millisecond, ReportTimeout: 2 * time.Second,
			Logger: meshtest.DaemonLogger(), Sim: simruntime.New(),
		}
		wg.Go(func() {
			if err := agentd.Run(ctx, cfg); err != nil {
				fmt.Fprintf(os.Stderr, "agentd.Run %s: %v\n", node, err)
				mu.Lock()
				failed++
				mu.Unlock()
			}
		})
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	cancel()
	wg.Wait()
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "%d agents failed\n", failed)
		return 1
	}
	return 0
}
