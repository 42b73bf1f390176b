-- One row per submission: what was asked, where it ran, how it ended.
CREATE TABLE submissions (
    id                   uuid PRIMARY KEY,
    user_id              text        NOT NULL,
    problem              text        NOT NULL,
    language             text        NOT NULL,
    gpu_type             text        NOT NULL,
    dtype                text        NOT NULL,
    mode                 text        NOT NULL,
    code                 text        NOT NULL,
    status               text        NOT NULL,
    last_seq             integer     NOT NULL DEFAULT 0,
    cancel_on_disconnect boolean     NOT NULL DEFAULT false,
    backend              text,
    node                 text,
    pid                  integer,
    run_name             text,
    restart_count        integer     NOT NULL DEFAULT 0,
    result               jsonb,
    error                jsonb,
    cancelled_by         text,
    cancel_reason        text,
    created_at           timestamptz NOT NULL DEFAULT now(),
    started_at           timestamptz,
    updated_at           timestamptz NOT NULL DEFAULT now(),
    finished_at          timestamptz
);

CREATE INDEX submissions_by_user ON submissions (user_id, created_at DESC);
CREATE INDEX submissions_by_created ON submissions (created_at DESC);
CREATE INDEX submissions_unfinished ON submissions (created_at) WHERE finished_at IS NULL;

-- Append-only event log; (submission_id, seq) is what SSE clients resume from.
CREATE TABLE submission_events (
    submission_id uuid        NOT NULL REFERENCES submissions (id) ON DELETE CASCADE,
    seq           integer     NOT NULL,
    type          text        NOT NULL,
    payload       jsonb       NOT NULL,
    created_at    timestamptz NOT NULL,
    PRIMARY KEY (submission_id, seq)
);

-- Bearer tokens, stored as SHA-256 hex digests only.
CREATE TABLE api_tokens (
    token_hash text PRIMARY KEY,
    user_id    text        NOT NULL,
    role       text        NOT NULL CHECK (role IN ('user', 'admin')),
    created_by text,
    created_at timestamptz NOT NULL DEFAULT now()
);
