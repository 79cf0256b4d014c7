// Package web is the controller's page: every node's status on one screen,
// what runs on each node now (every resource of the declaration it last
// applied, with its state and why: api.Service's Resources), each node's
// timeline in swimlanes with its churn episodes as shaded bands, the
// roster diff between two declarations, and live updates. The controller
// daemon (cmd/mesh) serves it at / beside the API at /v1, on the same
// origin and with the same token.
//
// The pages are html/template rendered on the server from the api.Service
// queries (status, resources, the timeline paged by position, churn,
// roster diff, why); a little script (static/app.js) fetches them as
// fragments and swaps them in. Every asset is embedded in the binary:
// controllers run on machines without internet access, so nothing comes
// from a CDN. Every query is bounded: the timeline is read a page at a
// time (at most MaxColumns entries), never whole, so the page answers as
// fast with a million events in the store as with a hundred.
//
// # Routes
//
//	GET /                   the page (no data: it asks for the token)
//	GET /static/{file}      the script, the style sheet, the icon
//	GET /ui/status          fragment: ?state=S &module=M &name=N &page=P
//	                        the nodes' status, a page (StatusPageSize) at a
//	                        time, what is wrong first, each with its modules
//	                        and containers and their states; above it every
//	                        node counted by state; and the controller's
//	GET /ui/node            fragment: ?node=N [&before=P | &after=P] [&limit=L]
//	                        what runs on the node now, its swimlanes, churn
//	                        bands and evidence, and the roster diff form
//	GET /ui/diff            fragment: ?node=N&from=DECL&to=DECL
//	GET /ui/why             fragment: ?node=N&resource=R
//	GET /ui/events          server-sent events: the projections' position
//
// Every fragment takes ?at=POSITION or ?at=TIME (RFC 3339): it is then
// rendered as the mesh stood after the last event at or before it (the
// controller's At, api.Historian), and says it is a moment: the status
// opens with a banner naming it and a way back to live, and leaves out
// now's controller facts; the node's head names it and never says live;
// its resources are "What ran then".
// The page's time control (the "as of" field) asks every fragment so,
// keeps the moment in the link (#at=...&node=...), and follows no live
// update while it shows one; "now" goes back to the live page.
//
// The page and its static files carry no data and are served to anyone;
// everything under /ui/ wants "Authorization: Bearer TOKEN", a token the
// API takes (httpapi.Gate): the bootstrap token (DATA/api-token), compared
// in constant time, or a live per-operator one (mesh token create, with
// Options.Authenticate), and answers 401 without it; a revoked token is
// refused from its revocation on, and ends the event stream it holds. The page asks for the token once and keeps it in the
// browser's sessionStorage (gone when the tab closes); the script sends it
// with every fetch, the event stream included (read with fetch, since
// EventSource cannot send a header; a token is never put in a URL).
//
// # The event stream
//
// /ui/events is text/event-stream. On connect (once the store holds an
// event), and then each time the projections fold new events (at most once
// per Options.MinInterval), one event:
//
//	event: position
//	id: 1234
//	data: {"position":1234}
//
// where 1234 is the last position the projections have folded: "the
// timeline changed at or before 1234". A comment line (": keep-alive")
// every Options.KeepAlive keeps proxies from closing an idle stream. The
// script then fetches the status again, and the node's latest page when it
// shows the latest; a page paged back in history says that newer events
// came and stays where it is.
//
// # Colours
//
// Every state is a word on the page; a colour only repeats it, and two
// meanings never share one: a failure (a failed resource, compose, push or
// apply) is red, a heavy pass and a churn band magenta, a hold amber, a
// resource restarted after it was found stopped orange, what runs green,
// a past moment slate blue. The overview styles the states it shows (a
// node's health, a module's, a container's as the engine says it) by
// kind (stateKind): failure red (failed, crash-looping, restarting,
// unhealthy, exited), waiting amber, well green, and neutral grey for
// starting and any state it does not know, shown as it is.
package web
