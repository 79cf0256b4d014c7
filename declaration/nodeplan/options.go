package nodeplan

import (
	"fmt"
	"strconv"
	"strings"

	"meshplane/declaration"
)

// optionFields are a container's options as report paths, in the module
// file's words, each with how a spec's value reads ("" when absent): what
// ContainerFields names and ContainerChanges shows, field by field. A
// published port is a field of its own, "publish.PORT" (the container's
// port), whose value is the address and host port ("10.1.0.3:8443", "*:8443"
// for every address).
var optionFields = []struct {
	name string
	word func(declaration.Container) string
}{
	{"healthcheck.test", func(c declaration.Container) string {
		if c.Healthcheck == nil {
			return ""
		}
		return strings.Join(c.Healthcheck.Test, " ")
	}},
	{"healthcheck.interval", func(c declaration.Container) string {
		return health(c, func(h *declaration.Healthcheck) string { return dur(h.Interval.String(), h.Interval == 0) })
	}},
	{"healthcheck.timeout", func(c declaration.Container) string {
		return health(c, func(h *declaration.Healthcheck) string { return dur(h.Timeout.String(), h.Timeout == 0) })
	}},
	{"healthcheck.retries", func(c declaration.Container) string {
		return health(c, func(h *declaration.Healthcheck) string { return dur(strconv.Itoa(h.Retries), h.Retries == 0) })
	}},
	{"healthcheck.start_period", func(c declaration.Container) string {
		return health(c, func(h *declaration.Healthcheck) string { return dur(h.StartPeriod.String(), h.StartPeriod == 0) })
	}},
	{"network", func(c declaration.Container) string { return c.NetworkMode }},
	{"restart", func(c declaration.Container) string { return c.Restart }},
	{"stop_grace_period", func(c declaration.Container) string { return dur(c.StopGracePeriod.String(), c.StopGracePeriod == 0) }},
	{"memory", func(c declaration.Container) string { return bytesWord(c.Memory) }},
	{"cpus", func(c declaration.Container) string {
		if c.NanoCPUs == 0 {
			return ""
		}
		return strconv.FormatFloat(float64(c.NanoCPUs)/1e9, 'f', -1, 64)
	}},
	{"entrypoint", func(c declaration.Container) string { return strings.Join(c.Entrypoint, " ") }},
	{"user", func(c declaration.Container) string { return c.User }},
	{"cap_add", func(c declaration.Container) string { return strings.Join(c.CapAdd, " ") }},
	{"tmpfs", func(c declaration.Container) string { return strings.Join(c.Tmpfs, " ") }},
	{"read_only", func(c declaration.Container) string { return dur("true", !c.ReadOnly) }},
	{"depends_on", func(c declaration.Container) string {
		words := make([]string, len(c.DependsOn))
		for i, d := range c.DependsOn {
			words[i] = d.Container + " (" + d.Condition + ")"
		}
		return strings.Join(words, " ")
	}},
	{"update.order", func(c declaration.Container) string {
		return rolloutWord(c, func(r *declaration.Rollout) string { return r.Order })
	}},
	{"update.min_healthy", func(c declaration.Container) string {
		return rolloutWord(c, func(r *declaration.Rollout) string { return r.MinHealthy.String() })
	}},
	{"update.healthy_deadline", func(c declaration.Container) string {
		return rolloutWord(c, func(r *declaration.Rollout) string { return r.HealthyDeadline.String() })
	}},
}

func rolloutWord(c declaration.Container, f func(*declaration.Rollout) string) string {
	if c.Rollout == nil {
		return ""
	}
	return f(c.Rollout)
}

// dur is s, or "" when absent.
func dur(s string, absent bool) string {
	if absent {
		return ""
	}
	return s
}

func health(c declaration.Container, f func(*declaration.Healthcheck) string) string {
	if c.Healthcheck == nil {
		return ""
	}
	return f(c.Healthcheck)
}

// bytesWord is a memory limit in compose's words: "512m", "1g", else bytes.
func bytesWord(b int64) string {
	switch {
	case b == 0:
		return ""
	case b%(1<<30) == 0:
		return fmt.Sprintf("%dg", b>>30)
	case b%(1<<20) == 0:
		return fmt.Sprintf("%dm", b>>20)
	case b%(1<<10) == 0:
		return fmt.Sprintf("%dk", b>>10)
	}
	return strconv.FormatInt(b, 10)
}

// publishMap maps a container's published ports to where they are
// published on the node.
func publishMap(ps []declaration.Published) map[string]string {
	m := make(map[string]string, len(ps))
	for _, p := range ps {
		ip := p.HostIP
		if ip == "" {
			ip = "*"
		}
		k := strconv.Itoa(p.ContainerPort)
		if prev, ok := m[k]; ok {
			m[k] = prev + " " + ip + ":" + strconv.Itoa(p.HostPort)
			continue
		}
		m[k] = ip + ":" + strconv.Itoa(p.HostPort)
	}
	return m
}

// optionChanges names the options in which have and want differ, with what
// each was and becomes.
func optionChanges(have, want declaration.Container) []Change {
	var out []Change
	for _, f := range optionFields {
		if a, b := f.word(have), f.word(want); a != b {
			out = append(out, Change{Field: f.name, From: a, To: b})
		}
	}
	hp, wp := publishMap(have.Publish), publishMap(want.Publish)
	for _, k := range changedKeys(hp, wp) {
		out = append(out, Change{Field: "publish." + k, From: hp[k], To: wp[k]})
	}
	if len(out) == 0 && !optionsEqual(have, want) {
		// Equal in words, not in the spec (a publish in another order).
		out = append(out, Change{Field: "options"})
	}
	return out
}

func optionsEqual(a, b declaration.Container) bool {
	of := func(c declaration.Container) string {
		return declaration.Digest([]any{c.Healthcheck, c.NetworkMode, c.Publish, c.Restart, c.StopGracePeriod, c.Memory,
			c.NanoCPUs, c.Entrypoint, c.User, c.CapAdd, c.Tmpfs, c.ReadOnly, c.DependsOn, c.Rollout})
	}
	return of(a) == of(b)
}
