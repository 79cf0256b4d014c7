package render

import (
	"io"
	"strings"

	"meshplane/api"
)

// SecretList shows every secret, one a row (mesh secret list): never a
// value; its JSON is the answer.
func SecretList(w io.Writer, f Format, l api.SecretList) error {
	if f == JSON {
		return WriteJSON(w, l)
	}
	if len(l.Secrets) == 0 {
		pf(w, "no secret is set (mesh secret set NAME < value)\n")
		return nil
	}
	tw := table(w)
	pf(tw, "SECRET\tDIGEST\tSET\tBY\tTIMES\tMODULES\n")
	for _, s := range l.Secrets {
		pf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", s.Name, shortDigest(s.Digest), stamp(s.Set), s.By, s.Version, orDash(strings.Join(s.Modules, ", ")))
	}
	return tw.Flush()
}

// shortDigest is a digest's kind and its first 12 hex digits.
func shortDigest(d string) string {
	if i := strings.IndexByte(d, ':'); i >= 0 && len(d) > i+13 {
		return d[:i+13]
	}
	return d
}
