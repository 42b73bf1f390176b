-- The judge makes its inputs' secret itself, in its own process (remote-agent/remote_agent/judge.py): a secret made
-- here went through the payload to the worker and the agent, which need it for nothing. None is kept.
ALTER TABLE submissions DROP COLUMN input_secret;
