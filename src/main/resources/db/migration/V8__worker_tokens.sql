-- Worker tokens (issue 15): a GPU worker authenticates with one; it can do nothing but serve jobs.
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_role_check;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_role_check CHECK (role IN ('user', 'admin', 'worker'));
