package commands

import (
	"time"

	"go.yaml.in/yaml/v3"

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
// What the mesh acts on today is stop-first (what every roll-out has
// always done): order start-first and on_failure revert are refused as
// not supported yet, since nothing would do what they say; min_healthy
// and healthy_deadline are recorded and checked.

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
		return specErr("update.order", "start-first is not supported yet: the agent replaces a container stop-first (the old one stops, then the new one starts)")
	default:
		return specErr("update.order", "%s is not an order (want %s or %s)", quote(u.Order), events.UpdateStopFirst, events.UpdateStartFirst)
	}
	switch u.OnFailure {
	case events.UpdatePause:
	case events.UpdateRevert:
		return specErr("update.on_failure", "revert is not supported yet: a failed roll-out is not reverted by itself (mesh revert does it by hand)")
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
