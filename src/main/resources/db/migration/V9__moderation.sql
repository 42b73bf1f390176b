-- Moderation: an admin can take a result off every leaderboard, saying why; the owner sees the reason.
ALTER TABLE submissions
    ADD COLUMN invalidated_at     timestamptz,
    ADD COLUMN invalidated_by     text,
    ADD COLUMN invalidated_reason text;

-- The boards read finished benchmark results of one problem (and GPU type, dtype).
CREATE INDEX submissions_benchmarked ON submissions (problem, gpu_type, dtype)
    WHERE status = 'BENCHMARKED' AND mode = 'benchmark';
