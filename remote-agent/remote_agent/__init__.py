"""kernel-runner's remote agent: compiles, checks and benchmarks one submitted kernel on this machine's GPU.

Run as ``python3 -m remote_agent --payload FILE``. Every event is one ``JSON_EVENT:{...}`` line on stdout;
logs go to stderr.
"""
