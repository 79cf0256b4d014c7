package render

import (
	"io"
	"time"

	"meshplane/api"
)

// Tokens is token list's table: every token, revoked ones too.
func Tokens(w io.Writer, list api.TokenList) error {
	tw := table(w)
	pf(tw, "NAME\tID\tCREATED\tBY\tEXPIRES\tREVOKED\n")
	when := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	}
	for _, t := range list.Tokens {
		revoked := when(t.Revoked)
		if t.RevokedBy != "" {
			revoked += " by " + t.RevokedBy
		}
		pf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.ID, when(t.Created), t.By, when(t.ExpiresAt), revoked)
	}
	return tw.Flush()
}

// TokenCreated prints a new token alone on out, this once, and what it
// is on notes.
func TokenCreated(out, notes io.Writer, res api.CreateTokenResponse) {
	pln(out, res.Token)
	until := "no expiry"
	if !res.ExpiresAt.IsZero() {
		until = "good until " + res.ExpiresAt.UTC().Format(time.RFC3339)
	}
	pf(notes, "API token %s for operator %s, %s; it is shown this once (MESH_TOKEN=... or --token-file)\n", res.TokenID, res.Name, until)
}

// TokenRevoked says what revoking name's token did.
func TokenRevoked(w io.Writer, name string, res api.CommandResult) {
	if len(res.Results) == 0 || len(res.Results[0].Events) == 0 {
		pf(w, "operator %s's token was revoked already\n", name)
		return
	}
	pf(w, "revoked the API token of operator %s\n", name)
}

// JoinToken prints a join token alone on out, and on notes what to run on
// the host.
func JoinToken(out, notes io.Writer, res api.JoinTokenResponse) {
	pln(out, res.Token)
	url := "URL"
	if tok, err := api.ParseJoinToken(res.Token); err == nil {
		url = tok.URL
	}
	pf(notes, "join token for node %s, single use, good until %s\n", res.Node, res.ExpiresAt.UTC().Format(time.RFC3339))
	pf(notes, "on the host, run:\n  mesh agent join %s --token %s --data /var/lib/mesh-agent\n", url, res.Token)
	pf(notes, "or, to install the agent as a service:\n  mesh agent install %s --token %s\n", url, res.Token)
}

// Revoked says what node revoke revoked: each bus user, or that none was
// left (the bus has the list again).
func Revoked(w io.Writer, res api.RevokeResponse) {
	if len(res.Revoked) == 0 {
		pf(w, "node %s has no bus user left to revoke (%d revoked before); the bus has the list again\n", res.Node, len(res.All))
		return
	}
	for _, k := range res.Revoked {
		pf(w, "revoked %s of node %s\n", k, res.Node)
	}
}

// Migrated says what store migrate applied, and the schema's version now.
func Migrated(w io.Writer, applied []int, version int) {
	if len(applied) == 0 {
		pf(w, "schema at version %d already: nothing to apply\n", version)
		return
	}
	for _, v := range applied {
		pf(w, "applied migration %d\n", v)
	}
	pf(w, "schema at version %d\n", version)
}

// Joined says what mesh agent join did in the data directory data: joined
// as node, its credentials in creds, or found joined already.
func Joined(w io.Writer, data, node, creds string, already bool) {
	if already {
		pf(w, "mesh agent join: %s is joined already as %s; its credentials are kept\n", data, node)
		return
	}
	pf(w, "mesh agent join: joined as %s; credentials in %s\n", node, creds)
}
