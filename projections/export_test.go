package projections

// SetSnapKeep sets how many declarations a snapshot keeps per node, for a
// test; it returns the restore.
func SetSnapKeep(n int) func() {
	was := snapKeep
	snapKeep = n
	return func() { snapKeep = was }
}

// RunEntries is how many entries the timeline holds in runs (not kept),
// and in how many runs, for a test.
func (t *Timeline) RunEntries() (entries, runs int) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.runs.members, len(t.runs.list)
}

// SetLogRuns sets how many runs a walk may open before it reads the log
// (logRuns), for a test; it returns the restore.
func SetLogRuns(n int) func() {
	was := logRuns
	logRuns = n
	return func() { logRuns = was }
}
