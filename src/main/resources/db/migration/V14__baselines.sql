-- PyTorch's own times for each problem, dtype and GPU type (issue 30): eager and torch.compile, per test case, as
-- the agent's timer measures a submission. A re-measure is a new row, never an overwrite; the newest of each
-- (gpu_type, problem, dtype, method) is the current one.
CREATE TABLE baselines (
    id          bigserial PRIMARY KEY,
    gpu_type    text NOT NULL,
    problem     text NOT NULL,
    dtype       text NOT NULL,
    method      text NOT NULL,                 -- eager | torch_compile
    tests       jsonb NOT NULL,                -- {test name: {median, mean, std, min, max, samples}} (ms)
    hardware    jsonb NOT NULL,                -- {hardware, driver, torch, triton, cuda}
    source      text NOT NULL,                 -- the file or job it came from
    measured_at timestamptz NOT NULL,
    loaded_at   timestamptz NOT NULL DEFAULT now(),
    current     boolean NOT NULL DEFAULT false,
    UNIQUE (gpu_type, problem, dtype, method, measured_at)
);
CREATE UNIQUE INDEX baselines_one_current ON baselines (gpu_type, problem, dtype, method) WHERE current;
