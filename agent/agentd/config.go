package agentd

import (
	"errors"
	"meshplane/internal/usage"
	"strings"
	"time"
)

// ClockOffsetEnv names the environment variable that moves a test host's
// clock (a duration: 10m, -30s); the controller refuses its reports beyond
// events.MaxReportSkew, saying by how much.
const ClockOffsetEnv = "MESH_AGENT_CLOCK_OFFSET"

// ClockOffset reads v, the value of ClockOffsetEnv ("" for none).
func ClockOffset(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, usage.Errorf("%s=%q: want a duration (10m, -30s)", ClockOffsetEnv, v)
	}
	return d, nil
}

// Labels reads --docker-label's KEY=VALUE pairs; a key given twice with
// two values is refused.
func Labels(pairs []string) (map[string]string, error) {
	labels := map[string]string{}
	for _, l := range pairs {
		k, v, _ := strings.Cut(l, "=")
		if old, ok := labels[k]; ok && old != v {
			return nil, usage.Errorf("--docker-label %s given twice (%q, %q)", k, old, v)
		}
		labels[k] = v
	}
	return labels, nil
}

// Check refuses a Config whose fields do not go together (bad usage,
// usage.Err): a runtime that
// is not one, or another runtime's settings.
func (c Config) Check() error {
	if c.Runtime != RuntimeSim && c.Runtime != RuntimeDocker {
		return usage.Errorf("--runtime %q: want sim or docker", c.Runtime)
	}
	other := func(flag string, set bool, runtime string) error {
		if set && c.Runtime != runtime {
			return usage.Errorf("--%s is for --runtime %s", flag, runtime)
		}
		return nil
	}
	return errors.Join(
		other("sim-found", len(c.SimFound) > 0, RuntimeSim),
		other("docker-root", c.DockerRoot != "", RuntimeDocker),
		other("docker-prefix", c.DockerPrefix != "", RuntimeDocker),
		other("docker-label", len(c.DockerLabels) > 0, RuntimeDocker),
	)
}
