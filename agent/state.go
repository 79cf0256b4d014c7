package agent

import (
	"context"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ContainerState is what the engine says of one managed container now.
type ContainerState struct {
	Name       string
	Status     string // "running", "restarting", "exited", "created", "dead"
	ExitCode   int
	OOMKilled  bool
	Restarts   int // the engine's restart count
	StartedAt  time.Time
	FinishedAt time.Time
	Health     string // "" (no check), "starting", "healthy", "unhealthy"
	HealthLog  string // the last probe's output, bounded, control chars escaped
}

// Engine statuses of a container (ContainerState.Status), in the engine's
// own words.
const (
	StatusRunning    = "running"
	StatusRestarting = "restarting"
	StatusExited     = "exited"
	StatusCreated    = "created"
	StatusDead       = "dead"
)

// Health of a container (ContainerState.Health); "" is a container with no
// health check.
const (
	HealthStarting  = "starting"
	HealthHealthy   = "healthy"
	HealthUnhealthy = "unhealthy"
)

// Inspector is implemented by runtimes that can say how their containers run.
//
// InspectContainer of a name no managed container has is ErrNotFound; a
// failure to ask is an error wrapping ErrRuntime, never a state.
// ContainerLogTail returns at most the last maxBytes bytes of the
// container's output (stdout and stderr as the engine interleaves them),
// escaped with EscapeLog; a name no managed container has is ErrNotFound.
type Inspector interface {
	InspectContainer(ctx context.Context, name string) (ContainerState, error)
	ContainerLogTail(ctx context.Context, name string, maxBytes int) (string, error)
}

// Bounds of what a container's state carries to the controller.
const (
	// MaxLogTail is the most of a container's log an event carries: its
	// last 4 KiB, escaped.
	MaxLogTail = 4096
	// MaxHealthLog is the most of a health probe's output an event carries.
	MaxHealthLog = 1024
)

// EscapeLog makes s safe to carry and print: invalid UTF-8 and every
// control character but newline and tab are written as Go escapes (\x1b,
// \u0085), and the result is at most max bytes, cut at the front (the
// last lines are what tell why a container died) on a rune boundary.
func EscapeLog(s string, max int) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x` + strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r == '\\':
			b.WriteString(`\\`)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 || r == 0xfeff || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	out := b.String()
	if max > 0 && len(out) > max {
		cut := len(out) - max
		for cut < len(out) && !utf8.RuneStart(out[cut]) {
			cut++
		}
		out = out[cut:]
	}
	return out
}
