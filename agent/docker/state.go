package docker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/docker/docker/api/types/container"
	dockerevents "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/pkg/stdcopy"

	"meshplane/agent"
)

// How the runtime says how its containers run (agent.Inspector): one
// ContainerInspect for the state (status, exit code, OOM, the engine's
// restart count, the times, the health and its last probe's output), and
// the engine's log for the tail a dead container leaves.

var (
	_ agent.Inspector = (*Runtime)(nil)
	_ agent.Renamer   = (*Runtime)(nil)
)

// LogsEngine is the part of the Docker client that reads a container's log
// (*client.Client implements it). An Options.Engine without it has no log
// to give: ContainerLogTail is "".
type LogsEngine interface {
	ContainerLogs(ctx context.Context, container string, options container.LogsOptions) (io.ReadCloser, error)
}

// logLines is how many of the log's last lines are asked of the engine
// before the tail is cut to its bytes.
const logLines = 200

// InspectContainer implements agent.Inspector.
func (r *Runtime) InspectContainer(ctx context.Context, name string) (agent.ContainerState, error) {
	if err := done(ctx, "inspect", name); err != nil {
		return agent.ContainerState{}, err
	}
	ids, err := r.find(ctx, "inspect", name)
	if err != nil {
		return agent.ContainerState{}, err
	}
	in, err := r.eng.ContainerInspect(ctx, ids[0])
	if err != nil {
		return agent.ContainerState{}, fail("inspect", name, err)
	}
	st := stateOf(name, in)
	if st.Status == agent.StatusRunning && st.Restarts > 0 && st.ExitCode == 0 {
		// Started again by the engine: it cleared the exit code, which
		// its die event carried (followed while the agent runs, watch.go).
		if code, ok := r.lastExit(ids[0]); ok {
			st.ExitCode = code
		} else if code, ok := r.pastExit(ctx, ids[0], st.StartedAt); ok {
			st.ExitCode = code
		}
	}
	return st, nil
}

// pastExit asks the engine's event history for the exit code of id's last
// die event before started (its latest start), when no watch saw it: a
// runtime asked without following the engine (a roll-out's wait, a test)
// still says why a crash loop crashes. Bounded to two seconds; not found
// is false.
func (r *Runtime) pastExit(ctx context.Context, id string, started time.Time) (int, bool) {
	ee, ok := r.eng.(EventsEngine)
	if !ok || started.IsZero() {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	msgs, errs := ee.Events(ctx, dockerevents.ListOptions{
		Since:   strconv.FormatInt(started.Add(-time.Hour).Unix(), 10),
		Until:   strconv.FormatInt(started.Unix()+1, 10),
		Filters: filters.NewArgs(filters.Arg("container", id), filters.Arg("event", string(dockerevents.ActionDie))),
	})
	code, found := 0, false
	for {
		select {
		case m, open := <-msgs:
			if !open {
				return code, found
			}
			if n, err := strconv.Atoi(m.Actor.Attributes["exitCode"]); err == nil {
				code, found = n, true
			}
		case <-errs:
			return code, found // the history ended (io.EOF) or could not be read
		case <-ctx.Done():
			return code, found
		}
	}
}

// stateOf is the agent's reading of the engine's inspection.
func stateOf(name string, in container.InspectResponse) agent.ContainerState {
	st := agent.ContainerState{Name: name}
	if in.ContainerJSONBase != nil {
		st.Restarts = in.RestartCount
	}
	s := in.State
	if s == nil {
		return st
	}
	st.Status = engineStatus(s)
	st.ExitCode, st.OOMKilled = s.ExitCode, s.OOMKilled
	st.StartedAt, st.FinishedAt = engineTime(s.StartedAt), engineTime(s.FinishedAt)
	if h := s.Health; h != nil && h.Status != container.NoHealthcheck {
		st.Health = string(h.Status)
		if n := len(h.Log); n > 0 && h.Log[n-1] != nil {
			st.HealthLog = agent.EscapeLog(h.Log[n-1].Output, agent.MaxHealthLog)
		}
	}
	return st
}

// engineStatus is the container's status in ContainerState's words: a
// paused container is "running" (it holds its process), "removing" is
// "exited".
func engineStatus(s *container.State) string {
	switch s.Status {
	case container.StateRunning, container.StatePaused:
		return agent.StatusRunning
	case container.StateRestarting:
		return agent.StatusRestarting
	case container.StateCreated:
		return agent.StatusCreated
	case container.StateDead:
		return agent.StatusDead
	}
	return agent.StatusExited
}

// engineTime reads the engine's RFC 3339 time; its zero
// ("0001-01-01T00:00:00Z") and anything unreadable are the zero time.
func engineTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() <= 1 {
		return time.Time{}
	}
	return t.UTC()
}

// ContainerLogTail implements agent.Inspector.
func (r *Runtime) ContainerLogTail(ctx context.Context, name string, maxBytes int) (string, error) {
	if err := done(ctx, "log of", name); err != nil {
		return "", err
	}
	ids, err := r.find(ctx, "log of", name)
	if err != nil {
		return "", err
	}
	le, ok := r.eng.(LogsEngine)
	if !ok {
		return "", nil
	}
	rc, err := le.ContainerLogs(ctx, ids[0], container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: strconv.Itoa(logLines)})
	if err != nil {
		return "", fail("log of", name, err)
	}
	defer rc.Close()
	var out bytes.Buffer
	w := &capped{buf: &out, max: 1 << 20}
	if _, err := stdcopy.StdCopy(w, w, rc); err != nil {
		return "", fail("log of", name, fmt.Errorf("read: %w", err))
	}
	return agent.EscapeLog(out.String(), maxBytes), nil
}

// capped keeps what is written to it up to max bytes, dropping the oldest.
type capped struct {
	buf *bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	c.buf.Write(p)
	if over := c.buf.Len() - c.max; over > 0 {
		c.buf.Next(over)
	}
	return len(p), nil
}
