package sim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"meshplane/events/boltstore"
)

// The intermediate child of BenchmarkQueries1MCLI (mode "cli" of
// queryChildEnv): it runs the mesh binary MESH_CLI_BIN with the JSON
// arguments MESH_CLI_ARGS, and prints the bytes it wrote, its wall time in
// µs, its peak RSS in bytes and the CPU time it took (user and system) in µs. The RSS is the mesh process's: Linux's
// maxrss of a child counts the address space it was forked from (this small
// process, about 10 MB), not the benchmark's, which holds a million events.
func cliChild() error {
	var args []string
	if err := json.Unmarshal([]byte(os.Getenv("MESH_CLI_ARGS")), &args); err != nil {
		return err
	}
	cmd := exec.Command(os.Getenv("MESH_CLI_BIN"), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err != nil {
		return fmt.Errorf("mesh %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	if errOut.Len() > 0 {
		fmt.Fprint(os.Stderr, errOut.String()) // notes
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return fmt.Errorf("no rusage")
	}
	cpu := time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
	fmt.Printf("%d %d %d %d\n", out.Len(), took.Microseconds(), ru.Maxrss*1024, cpu.Microseconds())
	return nil
}

// cliCall runs `mesh args...` through the intermediate child and returns its
// wall time, peak RSS and CPU time, and what it wrote on stderr.
func cliCall(b *testing.B, bin string, args ...string) (time.Duration, int64, time.Duration, string) {
	b.Helper()
	j, err := json.Marshal(args)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), queryChildEnv+"=cli", "MESH_CLI_BIN="+bin, "MESH_CLI_ARGS="+string(j))
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("mesh %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut.String())
	}
	var size, us, rss, cpu int64
	if _, err := fmt.Sscan(string(out), &size, &us, &rss, &cpu); err != nil {
		b.Fatalf("cli child printed %q: %v", out, err)
	}
	if size == 0 {
		b.Fatalf("mesh %s printed nothing", strings.Join(args, " "))
	}
	return time.Duration(us) * time.Microsecond, rss, time.Duration(cpu) * time.Microsecond, errOut.String()
}

// loadAvg is the machine's load average over the last minute (-1 if unknown).
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	var l float64
	if _, err := fmt.Sscan(string(b), &l); err != nil {
		return -1
	}
	return l
}

// BenchmarkQueries1MCLI runs the built mesh binary in local mode on the
// million events of BenchmarkRebuild1M (the boltstore BenchmarkQueries1M
// writes, cached in the user cache directory): `mesh status` and `mesh
// timeline --node node-001 --limit 50`, without and with a time range (the
// middle half of node-001's stream), each a process of its own, 5 times;
// it reports the median wall time, the slowest, the median CPU time (user
// and system: what the call costs whatever else the machine runs), the
// highest peak RSS of each, and the median load average while they ran.
//
// The data directory is kept in the user cache directory beside the store
// (events.db a symbolic link to it): its first call folds every event and
// saves the snapshot and timeline index there (minutes, once; reported as
// first-call), and the calls after resume from them, as an operator's do.
// The files stay up to 1,024 events behind the head (snapstore), so each
// call folds up to 1,024 events too.
//
// MESH_QUERY_EVENTS=N makes it run on N events instead (a quick check).
func BenchmarkQueries1MCLI(b *testing.B) {
	n := uint64(1_000_000)
	if s := os.Getenv("MESH_QUERY_EVENTS"); s != "" {
		if _, err := fmt.Sscan(s, &n); err != nil {
			b.Fatal(err)
		}
	}
	evs := generated(b, n)
	path := boltHistory(b, evs)
	// The time range: the middle half of node-001's stream.
	var node []time.Time
	for _, ev := range evs {
		if ev.Stream == "node-node-001" {
			node = append(node, ev.At)
		}
	}
	if len(node) < 4 {
		b.Fatalf("node-001 has %d events", len(node))
	}
	since, until := node[len(node)/4].UTC().Format(time.RFC3339Nano), node[3*len(node)/4].UTC().Format(time.RFC3339Nano)
	evs, node = nil, nil

	bin := filepath.Join(b.TempDir(), "mesh")
	if out, err := exec.Command("go", "build", "-o", bin, "meshplane/cmd/mesh").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	data := strings.TrimSuffix(path, ".bolt") + ".data"
	if err := os.MkdirAll(data, 0o755); err != nil {
		b.Fatal(err)
	}
	link := filepath.Join(data, "events.db")
	if _, err := os.Lstat(link); err != nil {
		if err := os.Symlink(path, link); err != nil {
			b.Fatal(err)
		}
	}
	store, err := boltstore.Open(path, boltstore.ReadOnly())
	if err != nil {
		b.Fatal(err)
	}
	head, err := store.Head(context.Background())
	store.Close()
	if err != nil {
		b.Fatal(err)
	}
	// The first call, when this run made the data directory: reported
	// after the timer's reset, which forgets metrics.
	var firstMS, firstMB float64
	if _, err := os.Stat(filepath.Join(data, "projections.snap")); err != nil {
		wall, rss, _, notes := cliCall(b, bin, "status", "--data", data)
		b.Logf("first call: %s, peak RSS %d MB, folded %d events and saved the snapshot in %s (%s)",
			wall.Round(time.Millisecond), rss>>20, head, data, strings.TrimSpace(notes))
		firstMS, firstMB = wall.Seconds()*1000, float64(rss)/1e6
	}

	cases := []struct {
		name string
		args []string
	}{
		{"status", []string{"status", "--data", data}},
		{"page", []string{"timeline", "--node", "node-001", "--limit", "50", "--data", data}},
		{"page-range", []string{"timeline", "--node", "node-001", "--since", since, "--until", until, "--limit", "50", "--data", data}},
	}
	type result struct{ wall, rss, cpu []float64 }
	results := make([]result, len(cases))
	var load []float64
	b.ResetTimer()
	for range b.N {
		for i, c := range cases {
			for range 5 {
				load = append(load, loadAvg())
				wall, rss, cpu, notes := cliCall(b, bin, c.args...)
				if notes != "" {
					b.Logf("mesh %s: %s", strings.Join(c.args, " "), notes)
				}
				results[i].wall = append(results[i].wall, wall.Seconds()*1000)
				results[i].rss = append(results[i].rss, float64(rss)/1e6)
				results[i].cpu = append(results[i].cpu, cpu.Seconds()*1000)
			}
		}
	}
	b.StopTimer()
	if firstMS > 0 {
		b.ReportMetric(firstMS, "first-call-ms")
		b.ReportMetric(firstMB, "first-call-maxRSS-MB")
	}
	b.ReportMetric(float64(head), "events")
	slices.Sort(load)
	b.ReportMetric(load[len(load)/2], "loadavg")
	for i, c := range cases {
		r := results[i]
		slices.Sort(r.wall)
		slices.Sort(r.rss)
		slices.Sort(r.cpu)
		b.ReportMetric(r.cpu[len(r.cpu)/2], c.name+"-cpu-ms")
		b.ReportMetric(r.wall[len(r.wall)/2], c.name+"-ms")
		b.ReportMetric(r.wall[len(r.wall)-1], c.name+"-max-ms")
		b.ReportMetric(r.rss[len(r.rss)-1], c.name+"-maxRSS-MB")
	}
}
