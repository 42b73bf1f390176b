-- Where a re-attached dstack follower resumes: log_offset counts the lines consumed (it only moves forward),
-- log_position is the backend's note of where they end (a log timestamp and the bytes after it).
ALTER TABLE submissions ADD COLUMN log_position text;
-- The secret key of a run's signed events, kept so that a run that outlives the service can be checked later.
-- Never sent to a client.
ALTER TABLE submissions ADD COLUMN event_key text;
