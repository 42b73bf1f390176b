-- Whether a result may rank, kept with its row as it is written (the boards' rule: LeaderboardSql.ACCEPTED):
-- ranked_ms is its figure (the geometric mean of its tests' times) where it may, else null. Read from the result's
-- JSON on every read of a board, the rule cost ~25 us a row (the TOASTed JSON read once a path): 270 ms for a board
-- of 10,000 results, on every benchmark's dispatch and every board page (docs/benchmarks.md, "The boards' reads").
-- A flag (needs_review, unverified) lets a result rank only where it is absent, null or false (the agent writes JSON
-- booleans; the read's cast to boolean had refused any other value, failing every read of the board); a figure
-- that is not a positive number in float8's range does not rank (a cast out of it would fail the row's write).
ALTER TABLE submissions ADD COLUMN ranked_ms float8 GENERATED ALWAYS AS (
    CASE WHEN status = 'BENCHMARKED' AND mode = 'benchmark'
              AND result #>> '{verification,judge}' = 'passed'
              AND result #>> '{verification,timing,method}' = 'replayed'
              AND result #>> '{verification,timing,status}' = 'verified'
              AND result #>> '{isolation,full}' = 'true'
              AND COALESCE(result #>> '{runner,trusted}', 'true') = 'true'
              AND lower(btrim(COALESCE(result ->> 'needs_review', 'false'))) IN ('false', 'f', 'no', 'n', 'off', '0')
              AND lower(btrim(COALESCE(result ->> 'unverified', 'false'))) IN ('false', 'f', 'no', 'n', 'off', '0')
              AND jsonb_typeof(result -> 'geomean_runtime_ms') = 'number'
         THEN CASE WHEN (result -> 'geomean_runtime_ms')::numeric BETWEEN 1e-300 AND 1e300
                   THEN (result ->> 'geomean_runtime_ms')::float8 END END) STORED;

-- A board's users' best results in its order, read from the index alone.
CREATE INDEX submissions_ranked ON submissions (problem, gpu_type, dtype, user_id, ranked_ms, created_at, id)
    WHERE ranked_ms IS NOT NULL AND invalidated_at IS NULL;
DROP INDEX submissions_benchmarked;
