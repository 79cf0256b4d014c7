package projections

// SetSnapKeep sets how many declarations a snapshot keeps per node, for a
// test; it returns the restore.
func SetSnapKeep(n int) func() {
	was := snapKeep
	snapKeep = n
	return func() { snapKeep = was }
}
