package commands

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"meshplane/events"
)

func TestDecideJoin(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	sha := strings.Repeat("ab", 32)
	other := strings.Repeat("cd", 32)
	key := "U" + strings.Repeat("A", 55)
	key2 := "U" + strings.Repeat("B", 55)
	reg := events.NodeRegistered{Node: "n4"}
	issued := events.NodeJoinTokenIssued{Node: "n4", TokenID: sha[:16], SecretSHA256: sha, ExpiresAt: now.Add(15 * time.Minute), By: "operator:ana"}
	joined := events.NodeJoined{Node: "n4", TokenID: sha[:16], PublicKey: key, From: "10.0.0.4:5000", AgentVersion: "dev"}
	credsIssued := events.NodeCredentialsIssued{Node: "n4", PublicKey: key2, By: "operator:ana"}
	revoked := events.NodeCredentialsRevoked{Node: "n4", PublicKeys: []string{key}, By: "operator:ana"}
	join := JoinNode{Node: "n4", SecretSHA256: sha, PublicKey: key, From: "10.0.0.4:5000", AgentVersion: "dev", Now: now}

	tests := []struct {
		name  string
		given []events.Payload
		when  Command
		then  []events.Payload
		code  string
		msg   string
	}{
		{name: "a token for a new node registers it", when: IssueJoinToken{Node: "n4", SecretSHA256: sha, ExpiresAt: issued.ExpiresAt, Now: now, By: "operator:ana"},
			then: []events.Payload{reg, issued}},
		{name: "a token for a registered node", given: []events.Payload{reg}, when: IssueJoinToken{Node: "n4", SecretSHA256: sha, ExpiresAt: issued.ExpiresAt, Now: now, By: "operator:ana"},
			then: []events.Payload{issued}},
		{name: "a token that expires before now", when: IssueJoinToken{Node: "n4", SecretSHA256: sha, ExpiresAt: now, Now: now}, code: CodeInvalid, msg: "not after now"},
		{name: "a token whose hash is not one", when: IssueJoinToken{Node: "n4", SecretSHA256: "ab", ExpiresAt: issued.ExpiresAt, Now: now}, code: CodeInvalid, msg: "64 hex"},
		{name: "a token issued twice", given: []events.Payload{reg, issued}, when: IssueJoinToken{Node: "n4", SecretSHA256: sha, ExpiresAt: issued.ExpiresAt, Now: now}, code: CodeInvalid, msg: "issued already"},
		{name: "a token for a bad name", when: IssueJoinToken{Node: "N 4", SecretSHA256: sha, ExpiresAt: issued.ExpiresAt, Now: now}, code: CodeInvalid},
		{name: "join", given: []events.Payload{reg, issued}, when: join, then: []events.Payload{joined}},
		{name: "join with a used token", given: []events.Payload{reg, issued, joined}, when: JoinNode{Node: "n4", SecretSHA256: sha, PublicKey: key2, Now: now},
			code: CodeTokenUsed, msg: "used already, at"},
		{name: "join with an expired token", given: []events.Payload{reg, issued}, when: JoinNode{Node: "n4", SecretSHA256: sha, PublicKey: key, Now: now.Add(15 * time.Minute)},
			code: CodeTokenExpired, msg: "expired at 2026-12-01T12:15:00Z"},
		{name: "join with another node's token", given: []events.Payload{reg, issued}, when: JoinNode{Node: "n4", Asked: "n5", SecretSHA256: sha, PublicKey: key, Now: now},
			code: CodeTokenOtherNode, msg: "is for node n4, not n5"},
		{name: "join with a forged secret of the same id", given: []events.Payload{reg, issued}, when: JoinNode{Node: "n4", SecretSHA256: sha[:16] + other[16:], PublicKey: key, Now: now},
			code: CodeTokenUnknown, msg: "unknown or forged"},
		{name: "join with a token never issued", given: []events.Payload{reg, issued}, when: JoinNode{Node: "n4", SecretSHA256: other, PublicKey: key, Now: now},
			code: CodeTokenUnknown, msg: "never issued for node n4"},
		{name: "join a node never registered", when: join, code: CodeTokenUnknown},
		{name: "join with a key that is not a user's", given: []events.Payload{reg, issued}, when: JoinNode{Node: "n4", SecretSHA256: sha, PublicKey: "A" + key[1:], Now: now},
			code: CodeBadPublicKey, msg: "not a NATS user's public nkey"},
		{name: "join with a key used before", given: []events.Payload{reg, credsIssued, issued}, when: JoinNode{Node: "n4", SecretSHA256: sha, PublicKey: key2, Now: now},
			code: CodeBadPublicKey, msg: "used by node n4 before"},
		{name: "record issued credentials", given: []events.Payload{reg}, when: RecordCredentials{Node: "n4", PublicKey: key2, By: "operator:ana"}, then: []events.Payload{credsIssued}},
		{name: "record issued credentials again", given: []events.Payload{reg, credsIssued}, when: RecordCredentials{Node: "n4", PublicKey: key2, By: "operator:ana"}},
		{name: "record credentials of an unknown node", when: RecordCredentials{Node: "n4", PublicKey: key2}, code: CodeNodeUnknown},
		{name: "revoke every key", given: []events.Payload{reg, credsIssued, issued, joined}, when: RevokeNode{Node: "n4", By: "operator:ana"},
			then: []events.Payload{events.NodeCredentialsRevoked{Node: "n4", PublicKeys: []string{key2, key}, By: "operator:ana"}}},
		{name: "revoke what is left", given: []events.Payload{reg, issued, joined, revoked, credsIssued}, when: RevokeNode{Node: "n4", By: "operator:ana"},
			then: []events.Payload{events.NodeCredentialsRevoked{Node: "n4", PublicKeys: []string{key2}, By: "operator:ana"}}},
		{name: "revoke again: done", given: []events.Payload{reg, issued, joined, revoked}, when: RevokeNode{Node: "n4", By: "operator:ana"}},
		{name: "revoke an unknown node", when: RevokeNode{Node: "n4"}, code: CodeNodeUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := givenAt(now.Add(-time.Minute), tt.given...)
			got, err := Decide(s, tt.when)
			if tt.code != "" {
				var r *Rejection
				if !errors.As(err, &r) || r.Code != tt.code || !errors.Is(err, ErrRejected) {
					t.Fatalf("Decide = %v, %v; want rejection %s", got, err, tt.code)
				}
				if got != nil {
					t.Fatalf("a rejection came with events: %v", got)
				}
				if !strings.Contains(r.Msg, tt.msg) || len(r.Msg) > 300 {
					t.Fatalf("rejection %q: want it to contain %q, in under 300 bytes", r.Msg, tt.msg)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			if !reflect.DeepEqual(got, tt.then) {
				t.Fatalf("Decide = %#v, want %#v", got, tt.then)
			}
			if len(got) == 0 && UnchangedNote(tt.when) == "" {
				t.Fatalf("no sentence for %T's work already done", tt.when)
			}
		})
	}
}

// givenAt is given with every event stamped at.
func givenAt(at time.Time, ps ...events.Payload) State {
	var s State
	for i, p := range ps {
		s.Node = EvolveNode(s.Node, events.Event{Version: uint64(i + 1), Type: p.EventType(), At: at}, p)
	}
	return s
}

func TestEvolveAccessDoesNotModifyItsInput(t *testing.T) {
	sha := strings.Repeat("ab", 32)
	s := givenAt(time.Unix(0, 0), events.NodeRegistered{Node: "n4"},
		events.NodeJoinTokenIssued{Node: "n4", TokenID: sha[:16], SecretSHA256: sha, ExpiresAt: time.Unix(100, 0)})
	_ = EvolveNode(s.Node, events.Event{Version: 3, Type: events.TypeNodeJoined}, events.NodeJoined{Node: "n4", TokenID: sha[:16], PublicKey: "UX"})
	_ = EvolveNode(s.Node, events.Event{Version: 3, Type: events.TypeNodeCredentialsRevoked}, events.NodeCredentialsRevoked{Node: "n4", PublicKeys: []string{"UY"}})
	if !s.Node.Access.Tokens[sha[:16]].Redeemed.IsZero() || len(s.Node.Access.Keys) != 0 || len(s.Node.Access.Revoked) != 0 {
		t.Fatalf("evolve changed the state it was given: %+v", s.Node.Access)
	}
}
