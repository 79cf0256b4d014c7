package commands

import (
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"

	"meshplane/declaration"
	"meshplane/events"
)

// A module's update block (events.UpdatePolicy): in the module file
//
//	update: {order: stop-first, min_healthy: 10s, healthy_deadline: 5m, on_failure: pause}
//
// every key optional, the defaults those; decoded strictly (an unknown
// key, a duration that does not parse or is not above zero, a
// min_healthy not below healthy_deadline are refused, naming the field)
// and kept whole in module.defined, so that a change of it is a change of
// the module.
//
// Compose hands the block to the agent with each of the module's
// containers (declaration.Rollout, rollout below): start-first has the
// agent start the new container under a temporary name, wait until it is
// healthy, then stop the old one and give the new its name. A container
// that publishes a port or runs in the node's network cannot roll out
// start-first (the new one could not bind what the old one holds): the
// node does not compose, naming it. A failed roll-out is recorded as
// rollout.failed by the report door (push.go, rolloutsFailed); with
// on_failure revert the controller then reverts the module to before the
// roll-out, and a revert that fails too stops there.

// maxUpdateWait bounds min_healthy and healthy_deadline.
const maxUpdateWait = 24 * time.Hour

// update parses the module file's update block.
func (p *mfParser) update(n *yaml.Node) *events.UpdatePolicy {
	u := events.DefaultUpdatePolicy()
	p.mapping(n, "update", func(key string, v *yaml.Node) {
		switch key {
		case "order":
			u.Order = p.str(v, "update.order")
		case "on_failure":
			u.OnFailure = p.str(v, "update.on_failure")
		case "min_healthy":
			u.MinHealthyMS = p.duration(v, "update.min_healthy")
		case "healthy_deadline":
			u.HealthyDeadlineMS = p.duration(v, "update.healthy_deadline")
		default:
			p.fail(v, "update."+key, "unknown field (want order, min_healthy, healthy_deadline, on_failure)")
		}
	})
	return &u
}

// duration parses a Go duration ("10s", "5m") as milliseconds.
func (p *mfParser) duration(n *yaml.Node, f string) int64 {
	s := p.str(n, f)
	if p.err != nil {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		p.fail(n, f, "%s is not a duration (want 10s, 5m, 1h)", quote(s))
		return 0
	}
	return d.Milliseconds()
}

// validUpdate checks a stored or defined update block (ValidateSpec).
func validUpdate(u *events.UpdatePolicy) error {
	if u == nil {
		return nil
	}
	switch u.Order {
	case events.UpdateStopFirst:
	case events.UpdateStartFirst:
	default:
		return specErr("update.order", "%s is not an order (want %s or %s)", quote(u.Order), events.UpdateStopFirst, events.UpdateStartFirst)
	}
	switch u.OnFailure {
	case events.UpdatePause:
	case events.UpdateRevert:
	default:
		return specErr("update.on_failure", "%s is not a failure action (want %s or %s)", quote(u.OnFailure), events.UpdatePause, events.UpdateRevert)
	}
	for _, w := range []struct {
		field string
		ms    int64
	}{{"update.min_healthy", u.MinHealthyMS}, {"update.healthy_deadline", u.HealthyDeadlineMS}} {
		if w.ms <= 0 || w.ms > maxUpdateWait.Milliseconds() {
			return specErr(w.field, "%v: want above 0 and at most %v", time.Duration(w.ms)*time.Millisecond, maxUpdateWait)
		}
	}
	if u.MinHealthyMS >= u.HealthyDeadlineMS {
		return specErr("update.min_healthy", "%v is not below healthy_deadline %v: no container could be healthy in time",
			time.Duration(u.MinHealthyMS)*time.Millisecond, time.Duration(u.HealthyDeadlineMS)*time.Millisecond)
	}
	return nil
}

// rollout composes the module's update block into spec (compose). A
// start-first container whose new copy would collide with the old one on
// the node (a published host port, the node's own network) is a module
// that cannot do what it says on this node: the node does not compose.
func rollout(n Node, mod Module, c events.ContainerSpec, spec *declaration.Container) error {
	u := mod.Spec.Update
	if u == nil {
		return nil
	}
	if u.Order == events.UpdateStartFirst {
		why := ""
		switch {
		case spec.NetworkMode == "host":
			why = "runs in the node's network (network: host), where the new container's ports are the old one's"
		case len(spec.Publish) > 0:
			why = fmt.Sprintf("publishes host port %d, which the old container holds while the new one starts", spec.Publish[0].HostPort)
		}
		if why != "" {
			return &IncoherentError{Node: n.Name, Reason: fmt.Sprintf("module %s's container %s rolls out start-first and %s on node %s (say update: {order: stop-first})", mod.Name, c.Name, why, n.Name)}
		}
	}
	spec.Rollout = &declaration.Rollout{
		Order:           u.Order,
		MinHealthy:      time.Duration(u.MinHealthyMS) * time.Millisecond,
		HealthyDeadline: time.Duration(u.HealthyDeadlineMS) * time.Millisecond,
	}
	return nil
}
