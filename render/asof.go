package render

import (
	"io"

	"meshplane/api"
)

// AsOf prints, in a table, the header line of an answer as of a past
// moment (mesh ... --at): "as of position 1234 (2026-12-01T23:02:00Z)".
// Nothing for an answer for now (m nil) or in JSON, whose "as_of" says it.
func AsOf(w io.Writer, f Format, m *api.Moment) error {
	if f == JSON || m == nil {
		return nil
	}
	_, err := pf(w, "as of position %d (%s)\n", m.Position, stamp(m.Time))
	return err
}

// AsOfAnswer is AsOf of an answer that says its moment (api.AsOfer);
// nothing for any other.
func AsOfAnswer(w io.Writer, f Format, v any) error {
	if a, ok := v.(api.AsOfer); ok {
		return AsOf(w, f, a.Moment())
	}
	return nil
}

// writeJSONAt is WriteJSON of v, a list, for an answer for now; as of a
// past moment m, the object {"as_of": m, key: v}, so that the JSON says
// the moment it answers for.
func writeJSONAt(w io.Writer, m *api.Moment, key string, v any) error {
	if m == nil {
		return WriteJSON(w, v)
	}
	return WriteJSON(w, map[string]any{"as_of": m, key: v})
}
