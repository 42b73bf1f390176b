-- How many lines of a dstack run's log have been turned into stored events: a restarted service resumes
-- following the run from there instead of replaying (and duplicating) its events.
ALTER TABLE submissions ADD COLUMN log_offset integer NOT NULL DEFAULT 0;
