package artifacts

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Push uploads the image in the tarball at path (as `docker save` writes
// it; it must hold exactly one image) to the artifact store at addr
// ("10.1.0.3:5000") as repository repo ("forge/web"), by digest, and returns
// the manifest digest ("sha256:…"), which is what the mesh records. The
// store is spoken to over plain HTTP: it is reached on the mesh's private
// network or by loopback. ctx bounds the whole upload.
func Push(ctx context.Context, addr, repo, path string) (string, error) {
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		return "", fmt.Errorf("artifacts: push %s: read image tarball %s: %w", repo, path, err)
	}
	return PushImage(ctx, addr, repo, img)
}

// PushImage uploads img to the artifact store at addr as repository repo,
// by digest, as Push does, and returns its manifest digest.
func PushImage(ctx context.Context, addr, repo string, img v1.Image) (string, error) {
	dig, err := img.Digest()
	if err != nil {
		return "", fmt.Errorf("artifacts: push %s: digest: %w", repo, err)
	}
	ref, err := name.NewDigest(addr+"/"+repo+"@"+dig.String(), name.Insecure, name.StrictValidation)
	if err != nil {
		return "", fmt.Errorf("artifacts: push %s: reference: %w", repo, err)
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		return "", fmt.Errorf("artifacts: push %s to %s: %w", repo, addr, err)
	}
	return dig.String(), nil
}
