package nodeplan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"meshplane/declaration"
)

// DeclaredChanges is what each of fields (an apply report's, for one
// resource replaced or updated) was in have and is in want, two declared
// specs of the resource: the one the node applied before, the one it
// applied now. A container's fields read as ContainerChanges words them; a
// directory's or a file's "mode" as octal; a file's "content" as its
// digest. A field neither spec explains (a container changed behind the
// agent's back reads the same in both) is left out. Each value is Shown.
func DeclaredChanges(have, want declaration.Resource, fields []string) []Change {
	var all []Change
	switch {
	case have.Container != nil && want.Container != nil:
		all = ContainerChanges(*have.Container, *want.Container)
		if have.Module != want.Module {
			all = append(all, Change{Field: "module", From: have.Module, To: want.Module})
		}
	case have.Directory != nil && want.Directory != nil:
		all = append(all, Change{Field: "mode", From: fmt.Sprintf("%o", have.Directory.Mode), To: fmt.Sprintf("%o", want.Directory.Mode)})
	case have.File != nil && want.File != nil:
		all = append(all,
			Change{Field: "content", From: digestOf(have.File.Content), To: digestOf(want.File.Content)},
			Change{Field: "mode", From: fmt.Sprintf("%o", have.File.Mode), To: fmt.Sprintf("%o", want.File.Mode)})
	}
	var out []Change
	for _, c := range all {
		if c.From == c.To || !slices.Contains(fields, c.Field) {
			continue
		}
		c.From, c.To = Shown(c.Field, c.From), Shown(c.Field, c.To)
		out = append(out, c)
	}
	return out
}

// MaxShownValue is the longest value Shown prints as it is, in runes.
const MaxShownValue = 64

// secretWords mark an env key whose value is a secret (upper case).
var secretWords = []string{"SECRET", "PASSWORD", "PASSWD", "TOKEN", "PRIVATE", "CREDENTIAL", "API_KEY", "APIKEY"}

// Shown is a changed field's value as why prints it: as it is, unless it
// is a secret (an env key naming one: SECRET, PASSWORD, TOKEN, ...) or
// longer than a line (a newline in it, or more than MaxShownValue runes),
// which reads as its digest, "sha256:" and 12 hex digits. Absent ("")
// stays "".
func Shown(field, value string) string {
	if value == "" {
		return value
	}
	secret := false
	if k, ok := strings.CutPrefix(field, "env."); ok {
		k = strings.ToUpper(k)
		for _, w := range secretWords {
			secret = secret || strings.Contains(k, w)
		}
	}
	if secret || strings.ContainsAny(value, "\n\r") || utf8.RuneCountInString(value) > MaxShownValue {
		return digestOf(value)
	}
	return value
}

// digestOf is value's SHA-256, "sha256:" and its first 12 hex digits.
func digestOf(value string) string {
	sum := sha256.Sum256([]byte(value))
	return "sha256:" + hex.EncodeToString(sum[:])[:12]
}
