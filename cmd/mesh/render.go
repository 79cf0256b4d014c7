package main

import (
	"io"

	"meshplane/events"
	"meshplane/render"
)

// The verbs show the API's answers through package render; these two are
// its helpers under the names the verbs not yet moved to it still call
// (up.go's progress lines, sim.go's JSON).

func writeJSON(w io.Writer, v any) error { return render.WriteJSON(w, v) }

func health(state string, held []events.ModuleCount) string { return render.Health(state, held) }
