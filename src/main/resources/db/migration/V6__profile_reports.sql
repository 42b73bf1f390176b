-- The profiler's report file of a profile-mode submission (an Nsight Compute .ncu-rep, or a zip of rocprofv3's
-- CSV files), kept beside it for download. One per submission: a re-run after a restart replaces it.
CREATE TABLE profile_reports (
    submission_id uuid        PRIMARY KEY REFERENCES submissions (id) ON DELETE CASCADE,
    file_name     text        NOT NULL,
    sha256        text        NOT NULL,
    content       bytea       NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);
