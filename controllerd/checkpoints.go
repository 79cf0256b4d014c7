package controllerd

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"meshplane/controller"
	"meshplane/projections"
)

// CheckpointDir is where the controller keeps its projections' checkpoints
// in the data directory: DATA/checkpoints/controller, one file each
// (projections.DirCheckpoints, as a local call's in DATA/checkpoints, which
// keep no token table: so the two are apart). At most CheckpointPolicy's
// count and bytes are kept, the old ones thinned.
var CheckpointDir = filepath.Join(projections.CheckpointDir, "controller")

// CheckpointPolicy bounds the controller's checkpoints on disk: the
// Keeper's defaults (one every 8,192 events or 6 h of events, at most 128
// files and 512 MiB).
var CheckpointPolicy = projections.KeepPolicy{}

// controllerCheckpoints is the Keeper of the controller's checkpoints in
// data; what it passes over is logged.
func controllerCheckpoints(data string, log *slog.Logger) *projections.Keeper {
	dir := projections.DirCheckpoints(filepath.Join(data, CheckpointDir))
	return projections.NewKeeper(dir, CheckpointPolicy, func(n string) { log.Warn("controller: checkpoints: " + n) })
}

// resume restores ctl's projections from its newest usable checkpoint and
// folds them to the store's head (controller.Resume), before it runs: a
// restart folds the events after the checkpoint, not the history. A
// standby resumes so too, and leads from there.
func resume(ctx context.Context, ctl *controller.Controller, log *slog.Logger) error {
	start := time.Now()
	from, err := ctl.Resume(ctx)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	pos := ctl.Runner().Position()
	if from == 0 {
		log.Info("controller: no usable checkpoint: the projections fold from position 0")
		return nil
	}
	log.Info("controller: resumed from a checkpoint", "checkpoint", from, "position", pos, "folded", pos-from, "took", time.Since(start).Round(time.Millisecond))
	return nil
}
