package snapstore

// SetFlush sets how many events Open folds between flushes, and how far
// behind the head it leaves the files, for a test; it returns the restore.
func SetFlush(every, after uint64) func() {
	e, a := flushEvery, flushAfter
	flushEvery, flushAfter = every, after
	return func() { flushEvery, flushAfter = e, a }
}
