-- Machine keys (issue 28): a worker token is bound to the first machine that enrolls with it (its key, sent once at
-- enrollment), and from then on its job stream opens only with a proof made with that key. A trusted pool's token
-- serves no job before it is bound.
ALTER TABLE api_tokens ADD COLUMN machine_key text;
ALTER TABLE api_tokens ADD COLUMN machine_bound_at timestamptz;
