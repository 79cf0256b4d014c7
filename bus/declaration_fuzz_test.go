package bus

import (
	"encoding/json"
	"testing"

	"meshplane/declaration"
	"meshplane/internal/gz"
)

// FuzzDecodeDeclaration: a value of a node's key, JSON or gzipped JSON,
// either decodes to a declaration for that node or is refused with
// ErrBadDeclaration; nothing panics, and what decodes from the gzip is
// what decodes from the JSON inside it.
func FuzzDecodeDeclaration(f *testing.F) {
	good, _ := json.Marshal(declaration.Declaration{Node: "n1", ID: "n1/1", RosterRevision: 2, RosterDigest: "sha256:00"})
	f.Add(good)
	f.Add(gz.Compress(good))
	f.Add([]byte(`{"node":"n2"}`))
	f.Add([]byte{0x1f, 0x8b, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := decodeDeclaration("n1", b)
		if err != nil {
			return
		}
		if d.Node != "n1" {
			t.Fatalf("decoded a declaration for %q under n1's key", d.Node)
		}
		if !gz.Compressed(b) {
			z, err := decodeDeclaration("n1", gz.Compress(b))
			if err != nil || z.ID != d.ID || z.Digest != d.Digest {
				t.Fatalf("the same JSON gzipped: %v", err)
			}
		}
	})
}
