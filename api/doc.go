// Package api is meshplane's public API: Service, the one interface for
// everything the CLI does (commands and queries), its request and response
// types and the codes of its errors. The controller implements Service;
// the CLI calls a Service, so its output is the same on a local store and
// against a running controller. Package httpapi serves a Service over
// HTTP (its handler, server and token) and is the Service over HTTP (its
// Client); this package imports no net/http.
//
// The JSON names of the types here are a public API (README.md: mesh ...
// -o json prints them, and /v1 answers them): they are the API's own
// structs, never a projection's or the agent's, so a rename inside the
// mesh cannot change them; a golden file (testdata/fields.golden) pins
// every name, so a rename here is a visible diff.
//
// # The timeline, paged by position
//
// Without a cursor a page is the last limit matches (default 100, at most
// 10000), in position order. before=P pages back: the last limit matches
// below P. after=P pages forward: the first limit matches above P
// (forward=true with no after starts from the oldest). The
// answer's "next" is the cursor of the following page in the same
// direction, absent when there are no more matches; every match appears on
// exactly one page.
//
// Rebuild is not part of Service: a controller offers it (Rebuilder), and
// a service that does not answers the rejection "unsupported".
package api
