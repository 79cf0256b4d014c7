package api_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"meshplane/api"
)

var testSecret = base64.RawURLEncoding.EncodeToString(make([]byte, api.JoinSecretSize))

func TestJoinTokenRoundTrip(t *testing.T) {
	for _, tok := range []api.JoinToken{
		{URL: "https://10.0.0.1:7480", CAFingerprint: strings.Repeat("0f", 32), Node: "n4", Secret: testSecret},
		{URL: "http://127.0.0.1:7480", Node: "n4", Secret: testSecret},
	} {
		s := tok.String()
		if !strings.HasPrefix(s, api.JoinTokenPrefix) || strings.ContainsAny(s, " \n=") {
			t.Fatalf("String() = %q", s)
		}
		got, err := api.ParseJoinToken(s + "\n")
		if err != nil || got != tok {
			t.Fatalf("ParseJoinToken(String()) = %+v, %v; want %+v", got, err, tok)
		}
	}
}

func TestParseJoinTokenRefuses(t *testing.T) {
	enc := func(json string) string {
		return api.JoinTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(json))
	}
	for _, tt := range []struct{ in, msg string }{
		{"", "does not start with MJ1."},
		{"MJ2.abc", "does not start with MJ1."},
		{"MJ1.***", "illegal base64"},
		{enc(`[]`), "cannot unmarshal"},
		{enc(`{"u":"https://x","n":"n4","s":"` + testSecret + `","x":1}`), "unknown field"},
		{enc(`{"u":"ftp://x","n":"n4","s":"` + testSecret + `"}`), "not http(s)"},
		{enc(`{"u":"https://x","s":"` + testSecret + `"}`), "names no node"},
		{enc(`{"u":"https://x","n":"n4","ca":"AB","s":"` + testSecret + `"}`), "ca is not 64"},
		{enc(`{"u":"https://x","n":"n4","s":"abc"}`), "secret is not 32 bytes"},
		{enc(`{"u":"https://x","n":"n4","s":"` + testSecret + `"} {}`), "data after"},
	} {
		_, err := api.ParseJoinToken(tt.in)
		if !errors.Is(err, api.ErrBadJoinToken) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("ParseJoinToken(%q) = %v; want ErrBadJoinToken saying %q", tt.in, err, tt.msg)
		}
	}
}

func FuzzParseJoinToken(f *testing.F) {
	f.Add(api.JoinToken{URL: "https://10.0.0.1:7480", CAFingerprint: strings.Repeat("0f", 32), Node: "n4", Secret: testSecret}.String())
	f.Add("MJ1.e30")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := api.ParseJoinToken(s)
		if err != nil {
			if !errors.Is(err, api.ErrBadJoinToken) {
				t.Fatalf("error %v is not ErrBadJoinToken", err)
			}
			return
		}
		again, err := api.ParseJoinToken(tok.String())
		if err != nil || again != tok {
			t.Fatalf("a parsed token does not round-trip: %+v, %v", again, err)
		}
		if _, err := tok.SecretBytes(); err != nil {
			t.Fatalf("a parsed token's secret: %v", err)
		}
	})
}
