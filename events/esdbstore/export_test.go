package esdbstore

// WithChunk sets how many positions a chunk of the position table holds
// (defaultChunk otherwise), so that tests reach chunks with a few events.
func WithChunk(n int) Option { return func(s *Store) { s.chunk = n } }
