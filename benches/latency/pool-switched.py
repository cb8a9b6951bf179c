#!/usr/bin/env python3
"""Pool the third phase of several runs of benches/latency/overhead.sh: the
windows with blktune's program switched on and off, from the `window` lines
of each run's output. Each window with the program attached is compared with
its neighbours in its own run; the pooled figures resample all of them.

    benches/latency/pool-switched.py RUN_OUTPUT...
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stats import switched_losses, switched_report, switched_windows  # noqa: E402

hz = os.sysconf("SC_CLK_TCK")
all_loss, all_more = [], []
for path in sys.argv[1:]:
    with open(path) as f:
        loss, more = switched_losses(switched_windows(f, hz))
    if not loss:
        print(f"{path}: no `window` lines (the runs before the fourth of 2026-11-25 printed none)")
        continue
    print(f"{path}: {switched_report(loss, more)}")
    all_loss += loss
    all_more += more
if not all_loss:
    sys.exit("no windows in any run")
print(f"pooled, {len(sys.argv) - 1} runs: {switched_report(all_loss, all_more)}")
