package readme

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"meshplane/events"
)

// skipDirs are directories of the tree that are not the repository's text:
// what a run leaves (a data directory, built binaries) and the VCS.
var skipDirs = map[string]bool{".git": true, ".mesh": true, "bin": true, "node_modules": true}

// textFiles calls fn with every text file of the tree (valid UTF-8, no NUL,
// under 4 MiB), its path relative to the root, slash-separated.
func textFiles(t *testing.T, fn func(rel string, b []byte)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDirs[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if info, err := d.Info(); err != nil || !info.Mode().IsRegular() || info.Size() > 4<<20 {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b) {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		fn(filepath.ToSlash(rel), b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// outside are references to files a clone does not have: the spec the
// project began from lived beside the repository, and its documents are
// in docs/ now. (Spelt in pieces so this file does not name them.)
var outside = []string{"../" + "shared", "DESIGN" + ".md", "STEPS" + ".md", "STYLE" + ".md"}

// TestNothingPointsOutside: no file of the repository refers to a file
// outside it (the shared folder beside it, or the spec documents that
// were there).
func TestNothingPointsOutside(t *testing.T) {
	files := 0
	textFiles(t, func(rel string, b []byte) {
		files++
		for _, ref := range outside {
			if i := bytes.Index(b, []byte(ref)); i >= 0 {
				line := bytes.Count(b[:i], []byte("\n")) + 1
				t.Errorf("%s:%d refers to %s, outside the repository: point at docs/ instead", rel, line, ref)
			}
		}
	})
	if files < 100 {
		t.Fatalf("read %d text files: is the root %s the module's?", files, root)
	}
}

// mdLink is a markdown link or image: [text](target) or ![alt](target).
var mdLink = regexp.MustCompile(`\]\(([^()\s]+)\)`)

// TestMarkdownLinksExist: every relative link of every markdown file names
// a file or directory of the tree, and its #anchor, in a markdown file, a
// heading of that file (as GitHub makes them).
func TestMarkdownLinksExist(t *testing.T) {
	links := 0
	textFiles(t, func(rel string, b []byte) {
		if !strings.HasSuffix(rel, ".md") {
			return
		}
		for _, m := range mdLink.FindAllSubmatch(stripCode(b), -1) {
			target := string(m[1])
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			file, anchor, _ := strings.Cut(target, "#")
			path := rel
			if file != "" {
				path = filepath.ToSlash(filepath.Join(filepath.Dir(rel), file))
			}
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(path))); err != nil {
				t.Errorf("%s links to %s, which does not exist", rel, target)
				continue
			}
			if anchor == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			body, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path)))
			if err != nil {
				t.Fatal(err)
			}
			if !headings(body)[anchor] {
				t.Errorf("%s links to %s: %s has no heading #%s", rel, target, path, anchor)
			}
		}
	})
	if links < 10 {
		t.Fatalf("found %d relative links in the markdown files: is the pattern still right?", links)
	}
}

// stripCode blanks fenced code blocks and inline code, where a "](" is
// no link.
func stripCode(b []byte) []byte {
	fence := regexp.MustCompile("(?ms)^```.*?^```")
	inline := regexp.MustCompile("`[^`\n]*`")
	b = fence.ReplaceAllFunc(b, func(m []byte) []byte { return bytes.Repeat([]byte(" "), len(m)) })
	return inline.ReplaceAllFunc(b, func(m []byte) []byte { return bytes.Repeat([]byte(" "), len(m)) })
}

// headings is the set of anchors GitHub gives b's headings: lower case,
// what is not a letter, digit, space, '-' or '_' dropped, spaces as '-'.
func headings(b []byte) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(string(stripFences(b)), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var s strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
				s.WriteRune(r)
			case r == ' ':
				s.WriteRune('-')
			}
		}
		out[s.String()] = true
	}
	return out
}

// stripFences blanks fenced code blocks (a "# comment" in one is no heading).
func stripFences(b []byte) []byte {
	fence := regexp.MustCompile("(?ms)^```.*?^```")
	return fence.ReplaceAllFunc(b, func(m []byte) []byte { return bytes.Repeat([]byte(" "), len(m)) })
}

// TestDesignNamesEveryEventType: docs/design.md's event vocabulary has a
// section "### `TYPE`" for every type of the registry, naming each of its
// payload's JSON fields in backticks, and no section for a type the
// registry does not know.
func TestDesignNamesEveryEventType(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "\n## The event vocabulary\n")
	if i < 0 {
		t.Fatal(`docs/design.md has no "## The event vocabulary" section`)
	}
	doc = doc[i:]
	sections := map[string]string{}
	heading := regexp.MustCompile("(?m)^### `([^`]+)`\n")
	locs := heading.FindAllStringSubmatchIndex(doc, -1)
	for k, l := range locs {
		end := len(doc)
		if k+1 < len(locs) {
			end = locs[k+1][0]
		}
		sections[doc[l[2]:l[3]]] = doc[l[1]:end]
	}
	reg := events.NewRegistry()
	for _, typ := range reg.Types() {
		sec, ok := sections[typ]
		if !ok {
			t.Errorf("docs/design.md has no section ### `%s`", typ)
			continue
		}
		delete(sections, typ)
		p, err := reg.Decode(events.Event{Type: typ, Schema: 1, Data: []byte("{}")})
		if err != nil {
			t.Fatalf("decode an empty %s: %v", typ, err)
		}
		rt := reflect.TypeOf(p)
		for f := range rt.NumField() {
			name, _, _ := strings.Cut(rt.Field(f).Tag.Get("json"), ",")
			if name != "" && name != "-" && !strings.Contains(sec, "`"+name+"`") {
				t.Errorf("docs/design.md's section on %s does not name its field `%s`", typ, name)
			}
		}
	}
	for typ := range sections {
		t.Errorf("docs/design.md has a section on %s, which is no registered event type", typ)
	}
}
