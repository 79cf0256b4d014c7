package web_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// update rewrites the screenshots in docs/img that the browser tests make
// (docs/guide.md shows them):
//
//	go test ./web -run InChromium -update
var update = flag.Bool("update", false, "rewrite docs/img's screenshots (the browser tests make them)")

// docShot saves what the browser's window shows as name (a PNG) in the
// test's artifact directory and, with -update, as docs/img/name.
func docShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
	if !*update {
		return
	}
	doc := filepath.Join("..", "docs", "img", name)
	if err := os.MkdirAll(filepath.Dir(doc), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(doc, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("rewrote %s", doc)
}
