package agent

// SetCompactBytes sets the size past which a log is compacted, and returns
// what restores it.
func SetCompactBytes(n int) (restore func()) {
	was := compactBytes
	compactBytes = n
	return func() { compactBytes = was }
}
