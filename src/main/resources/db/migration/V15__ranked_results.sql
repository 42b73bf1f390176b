-- Whether a result may rank, kept with its row as it is written (the boards' rule: LeaderboardSql.ACCEPTED):
-- ranked_ms is its figure (the geometric mean of its tests' times) where it may, else null. Read from the result's
-- JSON on every read of a board, the rule cost ~25 us a row (the TOASTed JSON read once a path): 270 ms for a board
-- of 10,000 results, on every benchmark's dispatch and every board page (docs/benchmarks.md, "The boards' reads").
-- Only a flag the agent writes as JSON true counts as set (needs_review, unverified), as before for its booleans.
ALTER TABLE submissions ADD COLUMN ranked_ms float8 GENERATED ALWAYS AS (
    CASE WHEN status = 'BENCHMARKED' AND mode = 'benchmark'
              AND result #>> '{verification,judge}' = 'passed'
              AND result #>> '{verification,timing,method}' = 'replayed'
              AND result #>> '{verification,timing,status}' = 'verified'
              AND result #>> '{isolation,full}' = 'true'
              AND COALESCE(result #>> '{runner,trusted}', 'true') = 'true'
              AND COALESCE(result ->> 'needs_review', 'false') <> 'true'
              AND COALESCE(result ->> 'unverified', 'false') <> 'true'
              AND jsonb_typeof(result -> 'geomean_runtime_ms') = 'number'
         THEN (result ->> 'geomean_runtime_ms')::float8 END) STORED;

-- A board's users' best results in its order, read from the index alone.
CREATE INDEX submissions_ranked ON submissions (problem, gpu_type, dtype, user_id, ranked_ms, created_at, id)
    WHERE ranked_ms IS NOT NULL AND invalidated_at IS NULL;
DROP INDEX submissions_benchmarked;
