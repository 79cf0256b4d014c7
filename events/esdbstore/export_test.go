package esdbstore

// WithChunk sets how many positions a chunk of the position table holds
// (defaultChunk otherwise), so that tests reach chunks with a few events.
func WithChunk(n int) Option { return func(s *Store) { s.chunk = n } }

// WithoutChain opens a store that computes no chain value (every one is
// zero), so that a benchmark measures what the chain costs beside it.
func WithoutChain() Option { return func(s *Store) { s.unchained = true } }

// TableChunks encodes the full chunks of size positions that s's tail
// holds from position 1 (s has written no chunk: open it WithChunk(1<<20)),
// as a table writes them: in the format before the chain if legacy (for
// LegacyTableStream), else in the current one (for TableStream), with the
// chain value of position bad, if not 0, changed.
func TableChunks(s *Store, size int, legacy bool, bad uint64) [][]byte {
	s.tab.Lock()
	defer s.tab.Unlock()
	t := s.tail
	if t.first != 1 {
		panic("TableChunks: the store has written chunks")
	}
	f := chunkV2
	if legacy {
		f = chunkV1
	}
	var out [][]byte
	var dir []chunkRef
	prev := t.prev
	for i := 0; i+size <= len(t.at); i += size {
		c := &chunk{first: uint64(i + 1), prev: prev, at: t.at[i : i+size], ids: t.ids[i : i+size]}
		c.chain = append(c.chain, t.chain[i:i+size]...)
		if bad >= c.first && bad < c.next() {
			c.chain[bad-c.first][0] ^= 1
		}
		out = append(out, encodeChunkAs(f, uint64(len(dir)), c, dir))
		ref := chunkRef{first: c.first, at: c.at[0]}
		if !legacy {
			ref.prev = prev
		}
		dir = append(dir, ref)
		prev = t.chain[i+size-1]
	}
	return out
}
