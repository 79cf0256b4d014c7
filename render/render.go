package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"meshplane/api"
	"meshplane/events"
)

// Format is how an answer is shown: a table for people, or JSON.
type Format string

// The formats, as -o names them.
const (
	Table Format = "table"
	JSON  Format = "json"
)

// WriteJSON writes v as indented JSON, one value and a newline, with
// DEL, the C1 and the bidi controls escaped as \uXXXX too (escape.go).
func WriteJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(escapeJSON(buf.Bytes()))
	return err
}

// table is the tab writer every table is aligned with.
func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// stamp is a time to the second, in UTC ("-" for none).
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// span is a run's time range: "2026-11-30 00:00 to 23:55", the date of the
// end only when it differs, to the second when both fall in one minute.
func span(from, to time.Time) string {
	from, to = from.UTC(), to.UTC()
	layout := "15:04"
	if from.Truncate(time.Minute).Equal(to.Truncate(time.Minute)) {
		layout = "15:04:05"
	}
	end := to.Format(layout)
	if from.Format("2006-01-02") != to.Format("2006-01-02") {
		end = to.Format("2006-01-02 " + layout)
	}
	return from.Format("2006-01-02 "+layout) + " to " + end
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// healthWaitingOnTake is the health of a node whose last apply held
// resources for modules it has not taken (projections.HealthWaitingOnTake,
// checked equal by a test: the API carries the projection's words).
const healthWaitingOnTake = "waiting-on-take"

// Health is a node's health with its held counts ("waiting-on-take
// (route-proxy: 13, photos: 3)"), escaped (Escape): printers of other
// packages (mesh up's report) print it as it is.
func Health(state string, held []events.ModuleCount) string {
	if len(held) == 0 || state != healthWaitingOnTake {
		return Escape(state)
	}
	var parts []string
	for _, h := range held {
		parts = append(parts, fmt.Sprintf("%s: %d", h.Module, h.Count))
	}
	return Escape(fmt.Sprintf("%s (%s)", state, strings.Join(parts, ", ")))
}

// describeDiff says in a few words what changed between two declarations.
func describeDiff(d api.RosterDiff) string {
	var parts []string
	for _, c := range []struct {
		sign  string
		names []string
	}{
		{"+", d.Added}, {"-", d.Removed},
	} {
		for _, n := range c.names {
			parts = append(parts, c.sign+n)
		}
	}
	if n := len(d.ResourcesAdded) + len(d.ResourcesRemoved) + len(d.ResourcesChanged); n > 0 {
		parts = append(parts, fmt.Sprintf("%d resource(s)", n))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, " ")
}

// short shortens a digest for a table.
func short(digest string) string {
	if i := strings.IndexByte(digest, ':'); i >= 0 && len(digest) > i+13 {
		return digest[:i+13]
	}
	return digest
}
