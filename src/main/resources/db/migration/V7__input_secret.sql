-- Each submission's input secret: the agent's judge derives the inputs it checks the solution on from it, so that
-- nobody can know them beforehand. Made here, from the server's strong random source (gen_random_uuid, 122 random
-- bits each, two of them), never shown by the API, given only to the agent in the payload.
ALTER TABLE submissions
    ADD COLUMN input_secret text NOT NULL DEFAULT replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '');
