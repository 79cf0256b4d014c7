package session

import (
	"context"
	"errors"
	"fmt"
	"os"

	"meshplane/commands"
	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/events/storeurl"
)

// ArtifactStore checks, on t's local store (read-only, closed before the
// upload), that module is defined, and returns addr, or the artifact
// store's address when addr is empty (commands.ArtifactStoreOfMesh: rule
// 6's one reading, as compose reads it).
func ArtifactStore(ctx context.Context, t Target, module, name, addr string) (string, error) {
	s, err := storeurl.Open(ctx, t.Store, storeurl.Options{Data: t.Data, ReadOnly: true})
	switch {
	case t.Bolt() && errors.Is(err, os.ErrNotExist):
		return "", noStore{storeurl.Path(t.Data)}
	case errors.Is(err, boltstore.ErrLocked) && addr != "":
		// A controller holds the store: the record goes through it (see
		// the CLI's execute), which refuses an undefined module.
		return addr, nil
	case errors.Is(err, boltstore.ErrLocked):
		return "", fmt.Errorf("%w; if a controller holds it, give --registry HOST:PORT (the API does not say where the artifact store is)", err)
	case err != nil:
		return "", err
	}
	defer s.Close()
	h := commands.NewHandler(s, events.NewRegistry())
	m, err := h.Module(ctx, module)
	if err != nil {
		return "", fmt.Errorf("read module %s: %w", module, err)
	}
	if !m.Defined {
		return "", &commands.Rejection{Code: commands.CodeModuleUnknown, Msg: fmt.Sprintf("cannot record artifact %s: module %s is not defined", name, module)}
	}
	if addr != "" {
		return addr, nil
	}
	addr, err = commands.ArtifactStoreOfMesh(ctx, h)
	switch {
	case errors.Is(err, commands.ErrNoArtifactStore):
		return "", fmt.Errorf("%w (mesh node set NODE artifact-store PORT), and no --registry was given", err)
	case errors.Is(err, commands.ErrArtifactStoreUnreachable):
		return "", fmt.Errorf("%w: give it one (mesh node set NODE private-address ADDR), or give --registry HOST:PORT", err)
	}
	return addr, err
}
