package agentd

import (
	"errors"
	"strings"
	"testing"

	"meshplane/internal/usage"
	"time"
)

// TestConfigCheck: a runtime that is not one, and another runtime's
// settings, are refused as usage.Err naming the flag; a Config that goes
// together passes.
func TestConfigCheck(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string // "" for none
	}{
		{Config{Runtime: RuntimeSim, SimFound: []string{"/srv"}}, ""},
		{Config{Runtime: RuntimeDocker, DockerRoot: "/r", DockerPrefix: "n1-", DockerLabels: map[string]string{"a": "b"}}, ""},
		{Config{Runtime: "podman"}, `--runtime "podman": want sim or docker`},
		{Config{Runtime: RuntimeDocker, SimFound: []string{"/srv"}}, "--sim-found is for --runtime sim"},
		{Config{Runtime: RuntimeSim, DockerRoot: "/r"}, "--docker-root is for --runtime docker"},
		{Config{Runtime: RuntimeSim, DockerPrefix: "p"}, "--docker-prefix is for --runtime docker"},
		{Config{Runtime: RuntimeSim, DockerLabels: map[string]string{"a": "b"}}, "--docker-label is for --runtime docker"},
	} {
		err := c.cfg.Check()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v, want none", c.cfg, err)
		case c.want != "" && (err == nil || !errors.Is(err, usage.Err) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: %v, want usage.Err saying %q", c.cfg, err, c.want)
		}
	}
}

// TestLabelsAndClockOffset: a label key given twice with two values is
// refused, with one value kept; the clock offset reads a duration or none.
func TestLabelsAndClockOffset(t *testing.T) {
	if l, err := Labels([]string{"a=1", "a=1", "b=2"}); err != nil || len(l) != 2 || l["a"] != "1" {
		t.Errorf("Labels: %v, %v; want a=1 b=2", l, err)
	}
	if _, err := Labels([]string{"a=1", "a=2"}); !errors.Is(err, usage.Err) || !strings.Contains(err.Error(), `a given twice ("1", "2")`) {
		t.Errorf("Labels a twice: %v, want refused", err)
	}
	if d, err := ClockOffset("-10m"); err != nil || d != -10*time.Minute {
		t.Errorf("ClockOffset(-10m): %v, %v", d, err)
	}
	if d, err := ClockOffset(""); err != nil || d != 0 {
		t.Errorf("ClockOffset(\"\"): %v, %v", d, err)
	}
	if _, err := ClockOffset("soon"); !errors.Is(err, usage.Err) || !strings.Contains(err.Error(), ClockOffsetEnv) {
		t.Errorf("ClockOffset(soon): %v, want refused naming %s", err, ClockOffsetEnv)
	}
}
