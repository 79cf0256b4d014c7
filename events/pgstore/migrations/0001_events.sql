-- 0001: the event log. See the package comment (doc.go) for the format and
-- its invariants. A change is a new migration file, never an edit of this one.

CREATE TABLE events (
    position    bigint  NOT NULL,  -- dense from 1 across the store
    id          uuid    NOT NULL,
    stream      text    NOT NULL,
    version     bigint  NOT NULL,  -- dense from 1 within the stream
    type        text    NOT NULL,
    schema      integer NOT NULL,
    at_ns       bigint  NOT NULL,  -- Unix nanoseconds: timestamptz keeps only microseconds
    actor       text    NOT NULL,
    causation   text    NOT NULL,
    correlation text    NOT NULL,
    data        bytea   NOT NULL,  -- the payload's bytes exactly as appended (JSON)
    CONSTRAINT events_pkey PRIMARY KEY (position),
    CONSTRAINT events_id_key UNIQUE (id),
    CONSTRAINT events_stream_version_key UNIQUE (stream, version),
    CONSTRAINT events_position_check CHECK (position > 0),
    CONSTRAINT events_version_check CHECK (version > 0),
    CONSTRAINT events_schema_check CHECK (schema > 0)
);
