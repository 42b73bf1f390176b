-- Per-user quota windows kept on the quota row the create already locks (no count over submissions per create):
-- submissions in the hour that began with hour_start, GPU-seconds of runs that ended in the day that began with
-- day_start. A window starts again with the first use after it ran out.
ALTER TABLE user_quota
    ADD COLUMN hour_start      timestamptz,
    ADD COLUMN hour_count      integer          NOT NULL DEFAULT 0,
    ADD COLUMN day_start       timestamptz,
    ADD COLUMN day_gpu_seconds double precision NOT NULL DEFAULT 0;
