package controller_test

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// layer is what one package of the core (or the controller) may import.
type layer struct {
	// imports are its direct imports, every one: a new one fails the
	// test until it is added here, in review.
	imports []string
	// fileIO is the phrase of its package comment that names the file I/O
	// it does; "" when it does none, and then it imports none of
	// fileIOImports.
	fileIO string
}

// fileIOImports are the imports that touch files (or processes).
var fileIOImports = []string{"os", "io/fs", "path/filepath", "syscall", "io/ioutil", "os/exec"}

// forbidden are what neither the core nor the controller links, directly
// or not: HTTP, SQL and every driver, the bus, the stores, the adapters.
var forbidden = []string{
	"net/http", "database/sql", "os/exec",
	"github.com/jackc/", "go.etcd.io/bbolt", "github.com/nats-io/", "github.com/docker/",
	"github.com/kurrent-io/", "github.com/EventStore/", "google.golang.org/grpc",
	"meshplane/api/httpapi", "meshplane/bus", "meshplane/events/", "meshplane/projections/",
	"meshplane/agent/", "meshplane/metrics", "meshplane/web", "meshplane/sim", "meshplane/artifacts",
}

var layers = map[string]layer{
	"meshplane/events": {imports: []string{
		"bytes", "context", "crypto/sha256", "encoding", "encoding/binary", "encoding/hex", "encoding/json", "errors", "fmt",
		"github.com/goccy/go-json", "github.com/google/uuid", "hash/crc32", "maps", "math", "reflect", "slices",
		"sort", "strconv", "strings", "sync", "time", "unicode/utf8",
	}},
	"meshplane/declaration": {imports: []string{"crypto/sha256", "encoding/hex", "encoding/json", "errors", "fmt", "strings", "time"}},
	"meshplane/commands": {imports: []string{
		"bytes", "cmp", "context", "crypto/sha256", "encoding/hex", "encoding/json", "errors", "fmt",
		"github.com/google/uuid", "github.com/opencontainers/go-digest", "go.yaml.in/yaml/v3", "io", "maps", "math",
		"meshplane/declaration", "meshplane/events", "meshplane/wire", "net/netip", "path", "reflect", "slices", "sort", "strconv",
		"strings", "sync", "time", "unicode", "unicode/utf8",
	}},
	"meshplane/projections": {
		imports: []string{
			"bytes", "container/heap", "context", "encoding/binary", "encoding/json", "errors", "fmt", "hash/crc32", "maps", "math",
			"meshplane/events", "meshplane/internal/atomicfile", "meshplane/internal/gcboost", "meshplane/internal/safego", "os", "path/filepath",
			"runtime", "slices", "sort", "strconv", "strings", "sync", "sync/atomic", "time", "unsafe",
		},
		fileIO: "to one file (versioned, CRC-32C, written",
	},
	// The API's types: no HTTP (api/httpapi), no projection, no agent.
	"meshplane/api": {imports: []string{
		"context", "encoding/base64", "encoding/hex", "encoding/json", "errors", "fmt", "meshplane/commands",
		"meshplane/events", "slices", "strconv", "strings", "time", "unicode", "unicode/utf8",
	}},
	"meshplane/controller": {
		imports: []string{
			"cmp", "context", "crypto/rand", "crypto/sha256", "crypto/subtle", "encoding/base64", "encoding/hex", "encoding/json", "errors", "fmt",
			"github.com/google/uuid", "golang.org/x/sync/errgroup", "io", "io/fs", "log/slog",
			"meshplane/agent", "meshplane/api", "meshplane/commands", "meshplane/declaration", "meshplane/events",
			"meshplane/internal/atomicfile", "meshplane/internal/safego", "meshplane/projections", "meshplane/secrets", "os", "path/filepath", "slices", "strings", "sync",
			"sync/atomic", "syscall", "time",
		},
		fileIO: "controller.json (WriteInfo, ReadInfo)",
	},
}

type listed struct {
	ImportPath string
	Dir        string
	Imports    []string
	Deps       []string
}

// TestCoreImports holds the core (events, declaration, commands,
// projections), the API's types and the controller to their imports: each imports exactly
// what layers lists (a new import is a failure, to be added in review),
// none links HTTP, SQL, a driver, the bus, a store or an adapter, and one
// that touches files says so in its package comment.
func TestCoreImports(t *testing.T) {
	args := []string{"list", "-json=ImportPath,Dir,Imports,Deps"}
	for p := range layers {
		args = append(args, p)
	}
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := 0
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		l, ok := layers[p.ImportPath]
		if !ok {
			t.Fatalf("go list answered %s", p.ImportPath)
		}
		seen++
		for _, imp := range p.Imports {
			if !slices.Contains(l.imports, imp) {
				t.Errorf("%s imports %s, new: add it to layers in controller/deps_test.go if it belongs in the core", p.ImportPath, imp)
			}
		}
		for _, dep := range p.Deps {
			for _, f := range forbidden {
				if dep == f || strings.HasSuffix(f, "/") && strings.HasPrefix(dep, f) {
					t.Errorf("%s links %s: the core and the controller link no HTTP, SQL, driver, bus, store or adapter", p.ImportPath, dep)
				}
			}
		}
		var io []string
		for _, imp := range p.Imports {
			if slices.Contains(fileIOImports, imp) {
				io = append(io, imp)
			}
		}
		switch doc := packageDoc(t, p.Dir); {
		case len(io) > 0 && l.fileIO == "":
			t.Errorf("%s imports %v and its package comment names no file I/O", p.ImportPath, io)
		case l.fileIO != "" && !strings.Contains(doc, l.fileIO):
			t.Errorf("%s's package comment no longer says %q, the file I/O it does (%v)", p.ImportPath, l.fileIO, io)
		}
	}
	if seen != len(layers) {
		t.Errorf("go list answered %d packages, want %d", seen, len(layers))
	}
}

// packageDoc is the package comment of the package in dir, its lines
// joined by spaces.
func packageDoc(t *testing.T, dir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var doc []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if af.Doc != nil {
			doc = append(doc, af.Doc.Text())
		}
	}
	return strings.Join(strings.Fields(strings.Join(doc, " ")), " ")
}
