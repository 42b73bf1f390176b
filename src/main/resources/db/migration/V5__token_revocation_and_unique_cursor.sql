-- Tokens can be revoked (kept for the record, refused from then on).
ALTER TABLE api_tokens ADD COLUMN revoked_at timestamptz;

-- Lists page by (created_at, id): a unique cursor, since a batch of creates shares one created_at.
DROP INDEX submissions_by_user;
DROP INDEX submissions_by_created;
CREATE INDEX submissions_by_user ON submissions (user_id, created_at DESC, id DESC);
CREATE INDEX submissions_by_created ON submissions (created_at DESC, id DESC);
