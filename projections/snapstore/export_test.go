package snapstore

// SetFlushEvery sets how many events Open folds between flushes, for a test.
func SetFlushEvery(n uint64) func() {
	was := flushEvery
	flushEvery = n
	return func() { flushEvery = was }
}
