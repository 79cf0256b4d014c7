package imagebuild

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

// TestProgram builds cmd/mesh-demo twice: one image of one file, its
// entrypoint, its label, and one digest both times.
func TestProgram(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const pkg = "meshplane/cmd/mesh-demo"
	first, err := Program(ctx, pkg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := first.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.Config.Entrypoint; len(got) != 1 || got[0] != "/mesh-demo" {
		t.Errorf("entrypoint %q, want [/mesh-demo]", got)
	}
	if cf.OS != "linux" || cf.Config.Labels[LabelProgram] != pkg {
		t.Errorf("os %q, labels %v; want linux and %s=%s", cf.OS, cf.Config.Labels, LabelProgram, pkg)
	}
	layers, err := first.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, %v; want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Mode != 0o755 || h.Size < 1<<20 || !h.ModTime.Equal(time.Time{}) && h.ModTime.Unix() != 0 {
			t.Errorf("%s: mode %o, size %d, mtime %v; want 0755, a program, no time", h.Name, h.Mode, h.Size, h.ModTime)
		}
	}
	if len(names) != 1 || names[0] != "mesh-demo" {
		t.Errorf("layer holds %q, want [mesh-demo]", names)
	}

	again, err := Program(ctx, pkg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d1, err1 := first.Digest()
	d2, err2 := again.Digest()
	if err1 != nil || err2 != nil || d1 != d2 {
		t.Errorf("two builds of one program: %v (%v) and %v (%v); want one digest", d1, err1, d2, err2)
	}
}

func TestProgramRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name, pkg string
		build     bool // the error is ErrBuild
	}{
		{"empty", "", false},
		{"no such package", "meshplane/cmd/no-such-program", true},
		{"not a main package", "meshplane/artifacts/imagebuild", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img, err := Program(ctx, tc.pkg, Options{})
			if err == nil {
				t.Fatalf("Program(%q) = %v, want an error", tc.pkg, img)
			}
			if errors.Is(err, ErrBuild) != tc.build {
				t.Errorf("Program(%q): %v; ErrBuild %v, want %v", tc.pkg, err, errors.Is(err, ErrBuild), tc.build)
			}
		})
	}
}

// TestImageLabels: Options.Labels are in the config beside LabelProgram,
// which they cannot replace, and in the digest: one program with the same
// labels is one digest, with another data directory's another.
func TestImageLabels(t *testing.T) {
	prog := []byte("#!/not/really/a/program\n")
	digest := func(labels map[string]string) string {
		t.Helper()
		im, err := image("prog", "meshplane/cmd/prog", "amd64", prog, labels)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := im.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Config.Labels[LabelProgram] != "meshplane/cmd/prog" {
			t.Errorf("labels %v: %s replaced", cf.Config.Labels, LabelProgram)
		}
		for k, v := range labels {
			if k != LabelProgram && cf.Config.Labels[k] != v {
				t.Errorf("labels %v lack %s=%s", cf.Config.Labels, k, v)
			}
		}
		d, err := im.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d.String()
	}
	a1, a2 := digest(map[string]string{"meshplane.data": "aaaa"}), digest(map[string]string{"meshplane.data": "aaaa"})
	b := digest(map[string]string{"meshplane.data": "bbbb"})
	none := digest(nil)
	if a1 != a2 || a1 == b || a1 == none {
		t.Errorf("digests: a %s and %s, b %s, none %s; want a's equal, the others distinct", a1, a2, b, none)
	}
	digest(map[string]string{LabelProgram: "elsewhere"})
}
