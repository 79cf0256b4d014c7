package docker

import (
	"context"
	"fmt"
	"time"

	dockerevents "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"

	"meshplane/agent"
)

// Following the engine (agent.Watcher). Changes follows the engine's event
// stream, filtered by the labels this runtime puts on its containers
// (meshplane.managed, meshplane.node, and Options.Labels), for the actions
// that mean a container is no longer as the agent left it:
//
//	die      the container's process ended (a crash, a kill, a stop)
//	stop     someone stopped it
//	oom      the kernel killed it for memory
//	destroy  someone removed it
//	start    it started again (the engine's restart policy, or someone)
//	health_status  its health check's verdict changed
//
// (A kill alone is not watched: a signal that ends the container is
// followed by its die.) A running agent makes a pass at once (agent.Run,
// after the burst of events one stop makes has settled): a container
// stopped behind its back is started again, and reported, within seconds
// rather than at the next drift check. What the runtime does itself (the
// stop and removal of a container it replaces or removes) is not reported:
// it marks the container's id as its own before it acts, until the
// container is destroyed or a minute has passed.
//
// When the stream breaks (the engine restarted) it is followed again after
// a second, doubling to 30 s, and a change is said once it is back: what
// happened meanwhile is unknown.

// EventsEngine is the part of the Docker client that streams the engine's
// events (*client.Client implements it). An Options.Engine without it has
// no changes to tell: Changes yields nothing.
type EventsEngine interface {
	Events(ctx context.Context, options dockerevents.ListOptions) (<-chan dockerevents.Message, <-chan error)
}

var _ agent.Watcher = (*Runtime)(nil)

// watchedActions are the container actions Changes reports.
var watchedActions = []dockerevents.Action{
	dockerevents.ActionDie, dockerevents.ActionStop, dockerevents.ActionOOM, dockerevents.ActionDestroy,
	dockerevents.ActionStart, dockerevents.ActionHealthStatus,
}

// ownFor is how long an id the runtime acts on stays its own.
const ownFor = time.Minute

// mine marks id as acted on by the runtime itself: its events are not
// changes behind the agent's back.
func (r *Runtime) mine(id string) {
	r.ownMu.Lock()
	defer r.ownMu.Unlock()
	now := time.Now()
	for k, until := range r.own {
		if now.After(until) {
			delete(r.own, k)
		}
	}
	r.own[id] = now.Add(ownFor)
}

// isMine reports whether the event of action on id is of the runtime's own
// doing; a destroy ends the mark.
func (r *Runtime) isMine(id string, action dockerevents.Action) bool {
	r.ownMu.Lock()
	defer r.ownMu.Unlock()
	until, ok := r.own[id]
	if !ok {
		return false
	}
	if action == dockerevents.ActionDestroy || time.Now().After(until) {
		delete(r.own, id)
	}
	return time.Now().Before(until)
}

// startedMine marks the next start event of id as the runtime's own (a
// create or a start it makes): only that one, so that the engine's restarts
// after it are changes.
func (r *Runtime) startedMine(id string) {
	r.ownMu.Lock()
	defer r.ownMu.Unlock()
	if r.ownStart == nil {
		r.ownStart = map[string]bool{}
	}
	r.ownStart[id] = true
}

// isMyStart reports, once, whether a start of id is the runtime's own.
func (r *Runtime) isMyStart(id string) bool {
	r.ownMu.Lock()
	defer r.ownMu.Unlock()
	if r.ownStart[id] {
		delete(r.ownStart, id)
		return true
	}
	return false
}

// eventFilter is what the stream is filtered by: this node's managed
// containers (and Options.Labels), the watched actions.
func (r *Runtime) eventFilter() filters.Args {
	f := filters.NewArgs(
		filters.Arg("type", string(dockerevents.ContainerEventType)),
		filters.Arg("label", agent.LabelManaged+"=true"),
		filters.Arg("label", agent.LabelNode+"="+r.opt.Node),
	)
	for k, v := range r.opt.Labels {
		f.Add("label", k+"="+v)
	}
	for _, a := range watchedActions {
		f.Add("event", string(a))
	}
	return f
}

// Changes implements agent.Watcher: see above.
func (r *Runtime) Changes(ctx context.Context) (<-chan string, error) {
	out := make(chan string, 1)
	ee, ok := r.eng.(EventsEngine)
	if !ok {
		go func() { <-ctx.Done(); close(out) }()
		return out, nil
	}
	// The client negotiates its API version on its first call, writing
	// what Events reads unlocked: negotiate before the stream starts.
	if n, ok := ee.(interface{ NegotiateAPIVersion(context.Context) }); ok {
		n.NegotiateAPIVersion(ctx)
	}
	go r.follow(ctx, ee, out)
	return out, nil
}

// say offers what on out without blocking: one change waiting is enough
// for a pass, which sees every change made until then.
func say(out chan<- string, what string) {
	select {
	case out <- what:
	default:
	}
}

func (r *Runtime) follow(ctx context.Context, ee EventsEngine, out chan<- string) {
	defer close(out)
	wait := time.Second
	broken := false
	for ctx.Err() == nil {
		sctx, cancel := context.WithCancel(ctx)
		msgs, errs := ee.Events(sctx, dockerevents.ListOptions{Filters: r.eventFilter()})
		if broken {
			say(out, "engine event stream followed again (what happened while it was broken is unknown)")
		}
		err := r.drain(ctx, msgs, errs, out)
		cancel()
		if ctx.Err() != nil {
			return
		}
		broken = true
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		if err == nil {
			wait = time.Second
		} else {
			wait = min(wait*2, 30*time.Second)
		}
	}
}

// drain reads the stream until it breaks (its error) or ctx ends.
func (r *Runtime) drain(ctx context.Context, msgs <-chan dockerevents.Message, errs <-chan error, out chan<- string) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errs:
			return err
		case m := <-msgs:
			if !r.ours(m.Actor.Attributes) || r.isMine(m.Actor.ID, m.Action) {
				continue
			}
			if m.Action == dockerevents.ActionStart && r.isMyStart(m.Actor.ID) {
				continue
			}
			what := fmt.Sprintf("container %s: %s", m.Actor.Attributes[agent.LabelResource], m.Action)
			if code := m.Actor.Attributes["exitCode"]; code != "" && m.Action == dockerevents.ActionDie {
				what += ", exit " + code
			}
			say(out, what)
		}
	}
}
