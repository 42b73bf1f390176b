-- Worker pools (issue 28): a worker token belongs to a pool its creator names, which says the GPU types it may serve
-- (null: any type served by connecting workers, never this host's own) and whether its results may rank.
ALTER TABLE api_tokens ADD COLUMN pool text;
ALTER TABLE api_tokens ADD COLUMN gpu_types text[];
ALTER TABLE api_tokens ADD COLUMN trusted boolean NOT NULL DEFAULT false;
