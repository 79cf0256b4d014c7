package artifacts

import (
	"strings"
	"testing"
)

// FuzzManifestPath: the split of a registry URL path into repository and
// reference never panics, and what it returns rebuilds the path.
func FuzzManifestPath(f *testing.F) {
	for _, s := range []string{
		"/v2/forge/web/manifests/sha256:ab12", "/v2/a/manifests/latest", "/v2/", "/v2/manifests/x",
		"/v2/a/manifests/", "/v2/a/b/manifests/c/manifests/d", "/v2/x/blobs/sha256:00", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		repo, ref, ok := manifestPath(p)
		if !ok {
			return
		}
		if repo == "" || ref == "" || strings.Contains(ref, "/manifests/") {
			t.Fatalf("manifestPath(%q) = %q, %q", p, repo, ref)
		}
		if got := "/v2/" + repo + "/manifests/" + ref; got != p {
			t.Fatalf("manifestPath(%q) = %q, %q, which rebuilds %q", p, repo, ref, got)
		}
	})
}
