-- Unfinished submissions per user, kept by the statements that create and finish submissions: the active
-- limit is then checked and taken in the one statement that creates (a row lock per user, no advisory lock
-- and no count in a transaction of its own).
CREATE TABLE user_quota (
    user_id text    PRIMARY KEY,
    active  integer NOT NULL CHECK (active >= 0)
);

INSERT INTO user_quota (user_id, active)
SELECT user_id, count(*) FROM submissions WHERE finished_at IS NULL GROUP BY user_id;
