package bus

// WatchSeen is the newest revision w has handled, for tests that must wait
// for the watch without taking from it.
func WatchSeen(w *Watch) uint64 { return w.seen.Load() }
