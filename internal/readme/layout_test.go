package readme

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the module's root, two levels up from this package.
const root = "../.."

// layoutTable is the text of README.md's "## Layout" section.
func layoutTable(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n## Layout\n")
	if i < 0 {
		t.Fatal("README.md has no \"## Layout\" section")
	}
	s = s[i+len("\n## Layout\n"):]
	if j := strings.Index(s, "\n## "); j >= 0 {
		s = s[:j]
	}
	return s
}

// packages is every directory of the module holding a Go file that is not
// a test, testdata excepted, slash-separated and relative to the root. A
// directory holding a go.mod of its own (a module beside this one, such as
// a copy of a dependency under third_party/, named by its own row) and
// what is under it are not this module's.
func packages(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() && path != root {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		if d.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		if rel != "." {
			seen[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

var backticked = regexp.MustCompile("`([^`]+)`")

// TestLayoutNamesEveryPackage: each package is named in the layout table,
// in backticks, by its path (`events/pgstore`, with or without a trailing
// slash) or, inside its parent's row, by its last two elements
// (`pgstore/pgtest`).
func TestLayoutNamesEveryPackage(t *testing.T) {
	named := map[string]bool{}
	for _, m := range backticked.FindAllStringSubmatch(layoutTable(t), -1) {
		named[strings.TrimSuffix(m[1], "/")] = true
	}
	for _, p := range packages(t) {
		if named[p] {
			continue
		}
		if parts := strings.Split(p, "/"); len(parts) > 2 && named[strings.Join(parts[len(parts)-2:], "/")] {
			continue
		}
		t.Errorf("README.md's layout table does not name package %s", p)
	}
}

// TestLayoutRowsExist: the path of each row of the layout table is a
// directory of the tree.
func TestLayoutRowsExist(t *testing.T) {
	rows := 0
	for _, line := range strings.Split(layoutTable(t), "\n") {
		m := regexp.MustCompile("^\\| `([^`]+)` \\|").FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rows++
		fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(strings.TrimSuffix(m[1], "/"))))
		if err != nil || !fi.IsDir() {
			t.Errorf("README.md's layout table has a row for %s, which is not a directory of the tree", m[1])
		}
	}
	if rows < 10 {
		t.Fatalf("read %d rows of README.md's layout table: is its format still | `path` | owns |?", rows)
	}
}
