// Package artifacts is the mesh's artifact store (seed 004): an OCI image
// registry, served by the agent of the node that holds it (`node set NODE
// artifact-store PORT`), and the push that fills it (`mesh artifact push`).
//
// The registry is go-containerregistry's pkg/registry. Its blobs are on disk
// (registry.NewDiskBlobHandler); its manifests, which that package keeps in
// memory, are also written to disk as they are pushed and put back when the
// store opens, so a restarted agent serves what was pushed before.
//
// # On disk
//
// Under the store's directory:
//
//	blobs/sha256/<hex>          a blob, named by its digest (the disk blob handler's layout)
//	manifests/<hex>.json        one pushed manifest, named by the sha256 of "<repository>@<reference>"
//
// A manifest file is JSON: {"repository": "forge/web", "reference":
// "sha256:…" or a tag, "media_type": the Content-Type it was pushed with,
// "manifest": the manifest's bytes, base64}. It is written to a temporary
// file and renamed into place. A file that does not decode is an error when
// the store opens, naming the file: the store does not serve half of what
// it holds.
//
// The store names no address (docs/design.md rule 6): where it is reached is
// composed per declaration, from the node that holds it and its port.
package artifacts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"meshplane/internal/atomicfile"
	"meshplane/internal/httpstop"
)

// storedManifest is one manifest file (see the package comment).
type storedManifest struct {
	Repository string `json:"repository"`
	Reference  string `json:"reference"`
	MediaType  string `json:"media_type"`
	Manifest   []byte `json:"manifest"`
}

// NewHandler opens the store in dir (made if missing) and returns the
// registry's HTTP handler, with every manifest pushed before put back.
func NewHandler(dir string) (http.Handler, error) {
	blobs := filepath.Join(dir, "blobs")
	mdir := filepath.Join(dir, "manifests")
	for _, d := range []string{blobs, mdir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("artifacts: open %s: %w", dir, err)
		}
	}
	reg := registry.New(registry.WithBlobHandler(registry.NewDiskBlobHandler(blobs)), registry.Logger(nopLogger()))
	if err := replay(reg, mdir); err != nil {
		return nil, fmt.Errorf("artifacts: open %s: %w", dir, err)
	}
	return &store{reg: reg, dir: mdir}, nil
}

// Serve serves the store in dir on addr ("10.1.0.3:5000", ":5000") until ctx
// is done, then shuts the server down. It returns the error that stopped it,
// nil after ctx is done.
func Serve(ctx context.Context, addr, dir string) error {
	h, err := NewHandler(dir)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("artifacts: serve: %w", err)
	}
	return ServeOn(ctx, ln, h)
}

// ServeOn serves the store's handler h (NewHandler) on ln until ctx is
// done, then shuts the server down, as Serve does. It closes ln. Stopping,
// it gives the requests in flight five seconds (package httpstop).
func ServeOn(ctx context.Context, ln net.Listener, h http.Handler) error {
	addr := ln.Addr().String()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	stopper := httpstop.Track(srv)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("artifacts: serve %s: %w", addr, err)
	case <-ctx.Done():
	}
	err := stopper.Stop(5 * time.Second)
	<-done
	if err != nil {
		return fmt.Errorf("artifacts: serve %s: stop: %w", addr, err)
	}
	return nil
}

// Ready waits until the artifact store at addr answers the registry API
// (GET /v2/), or ctx is done: a store its agent is still starting is
// waited for, not failed.
func Ready(ctx context.Context, addr string) error {
	url := "http://" + addr + "/v2/"
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("artifacts: ready %s: %w", addr, err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET /v2/: %s", resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("artifacts: the store at %s did not answer: %w (last: %v)", addr, ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

type store struct {
	reg http.Handler
	dir string
}

// manifestPath splits "/v2/<repository>/manifests/<reference>".
func manifestPath(p string) (repo, ref string, ok bool) {
	rest, ok := strings.CutPrefix(p, "/v2/")
	if !ok {
		return "", "", false
	}
	i := strings.LastIndex(rest, "/manifests/")
	if i <= 0 {
		return "", "", false
	}
	return rest[:i], rest[i+len("/manifests/"):], rest[i+len("/manifests/"):] != ""
}

func (s *store) file(repo, ref string) string {
	sum := sha256.Sum256([]byte(repo + "@" + ref))
	return filepath.Join(s.dir, hex.EncodeToString(sum[:])+".json")
}

func (s *store) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	repo, ref, isManifest := manifestPath(r.URL.Path)
	if !isManifest || (r.Method != http.MethodPut && r.Method != http.MethodDelete) {
		s.reg.ServeHTTP(w, r)
		return
	}
	var body []byte
	if r.Method == http.MethodPut {
		b, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
		if err != nil {
			http.Error(w, "artifacts: read manifest: "+err.Error(), http.StatusBadRequest)
			return
		}
		body = b
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	// The registry answers into a recorder first, so that a manifest it
	// accepts is on disk before the client hears it was.
	rec := httptest.NewRecorder()
	s.reg.ServeHTTP(rec, r)
	if rec.Code/100 == 2 {
		var err error
		if r.Method == http.MethodPut {
			err = s.keep(storedManifest{Repository: repo, Reference: ref, MediaType: r.Header.Get("Content-Type"), Manifest: body})
		} else if err = os.Remove(s.file(repo, ref)); errors.Is(err, os.ErrNotExist) {
			err = nil
		}
		if err != nil {
			http.Error(w, "artifacts: keep manifest: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

func (s *store) keep(m storedManifest) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(s.file(m.Repository, m.Reference), b, 0o600)
}

// replay pushes every stored manifest back into reg: image manifests first,
// then indexes (an index needs its manifests).
func replay(reg http.Handler, dir string) error {
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return err
	}
	var ms []storedManifest
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return err
		}
		var m storedManifest
		if err := json.Unmarshal(b, &m); err != nil || m.Repository == "" || m.Reference == "" {
			return fmt.Errorf("manifest file %s: does not decode (%v)", n, err)
		}
		ms = append(ms, m)
	}
	sort.SliceStable(ms, func(i, j int) bool {
		return !types.MediaType(ms[i].MediaType).IsIndex() && types.MediaType(ms[j].MediaType).IsIndex()
	})
	for _, m := range ms {
		req := httptest.NewRequest(http.MethodPut, "/v2/"+m.Repository+"/manifests/"+m.Reference, bytes.NewReader(m.Manifest))
		req.Header.Set("Content-Type", m.MediaType)
		rec := httptest.NewRecorder()
		reg.ServeHTTP(rec, req)
		if rec.Code/100 != 2 {
			return fmt.Errorf("put back manifest %s@%s: %d %s", m.Repository, m.Reference, rec.Code, strings.TrimSpace(rec.Body.String()))
		}
	}
	return nil
}
