#!/usr/bin/env python3
"""Minimum wall time of N interleaved runs of each command (every command once per round).

On the shared development machines, speed drifts between stretches of minutes; interleaving
exposes every command to the same stretches, and the minimum is the least disturbed run.

Usage: benches/min_of_runs.py N 'command one' 'command two' ...
"""
import subprocess
import sys
import time


def main() -> None:
    n = int(sys.argv[1])
    cmds = sys.argv[2:]
    best = {c: float("inf") for c in cmds}
    for _ in range(n):
        for c in cmds:
            t = time.perf_counter()
            subprocess.run(c, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            best[c] = min(best[c], time.perf_counter() - t)
    for c in cmds:
        print(f"{best[c] * 1000:8.1f} ms  {c}")


if __name__ == "__main__":
    main()
