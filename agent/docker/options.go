package docker

import (
	"strconv"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/go-connections/nat"

	"meshplane/declaration"
)

// options carries a declared container's options into the engine's create
// config: the health check (the engine runs it), the network mode, the
// published ports, the restart policy (Options.RestartPolicy when the spec
// names none), the stop timeout, the limits, the entrypoint, the user, the
// capabilities, the tmpfs mounts and a read-only root.
func options(s declaration.Container, cfg *container.Config, hc *container.HostConfig) {
	if h := s.Healthcheck; h != nil {
		cfg.Healthcheck = &container.HealthConfig{Test: h.Test, Interval: h.Interval, Timeout: h.Timeout, Retries: h.Retries, StartPeriod: h.StartPeriod}
	}
	if s.NetworkMode != "" {
		hc.NetworkMode = container.NetworkMode(s.NetworkMode)
	}
	for _, p := range s.Publish {
		port := nat.Port(strconv.Itoa(p.ContainerPort) + "/tcp")
		if cfg.ExposedPorts == nil {
			cfg.ExposedPorts, hc.PortBindings = nat.PortSet{}, nat.PortMap{}
		}
		cfg.ExposedPorts[port] = struct{}{}
		hc.PortBindings[port] = append(hc.PortBindings[port], nat.PortBinding{HostIP: p.HostIP, HostPort: strconv.Itoa(p.HostPort)})
	}
	if s.Restart != "" {
		hc.RestartPolicy = container.RestartPolicy{Name: container.RestartPolicyMode(s.Restart)}
	}
	if s.StopGracePeriod > 0 {
		secs := int((s.StopGracePeriod + 999_999_999) / 1e9) // the engine counts whole seconds: never less than asked
		cfg.StopTimeout = &secs
	}
	hc.Memory, hc.NanoCPUs = s.Memory, s.NanoCPUs
	if len(s.Entrypoint) > 0 {
		cfg.Entrypoint = s.Entrypoint
	}
	cfg.User = s.User
	hc.CapAdd = s.CapAdd
	if len(s.Tmpfs) > 0 {
		hc.Tmpfs = map[string]string{}
		for _, t := range s.Tmpfs {
			hc.Tmpfs[t] = ""
		}
	}
	hc.ReadonlyRootfs = s.ReadOnly
}
