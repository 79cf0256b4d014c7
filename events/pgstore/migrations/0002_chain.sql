-- 0002: the hash chain (events' chain.go). Each row appended since carries
-- its chain value, computed by the append's transaction under the append
-- lock from the value of the position before; rows older than this
-- migration keep NULL, and the chain starts at the first row that has one.

ALTER TABLE events ADD COLUMN chain bytea;
ALTER TABLE events ADD CONSTRAINT events_chain_check CHECK (chain IS NULL OR length(chain) = 32);
