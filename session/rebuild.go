package session

import (
	"context"
	"fmt"

	"meshplane/controller"
	"meshplane/projections/snapstore"
)

// RebuildLocal rebuilds names (every projection when none) from the local
// store twice, checked byte-identical (controller.RebuildLocal); a
// rebuild of every projection from the bolt store of t is saved as its
// data directory's snapshot (saved says so). progress is told of the
// events folded.
func (s *Session) RebuildLocal(ctx context.Context, t Target, names []string, progress func(done, total uint64)) (res controller.LocalRebuild, saved bool, err error) {
	if s.Local == nil {
		return res, false, fmt.Errorf("rebuild: %s is a controller's; it rebuilds in the shadow", t.Server)
	}
	if res, err = s.Local.RebuildLocal(ctx, names, progress); err != nil {
		return res, false, err
	}
	if !t.Bolt() || len(names) > 0 {
		return res, false, nil
	}
	if err := snapstore.Save(ctx, t.Data, res.Runner, res.Set); err != nil {
		return res, false, fmt.Errorf("save the snapshot in %s: %w", t.Data, err)
	}
	return res, true, nil
}
