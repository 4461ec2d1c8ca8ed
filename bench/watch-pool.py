#!/usr/bin/env python3
"""Pools several runs of bench/watch.sh (issue 31's latency goal).

    bench/watch-pool.py RAW...

RAW: files bench/watch.sh appended to with RAW=FILE, one JSON line a run.
The latencies of every run (same N and JOBS) are pooled per phase, and the
goal is read off the pool as bench/watch.sh reads it off one run: watch -
bare CLI exec against the probe's own run, at the median and the 95th
percentile. One run's rounds move the median of watch - CLI by tens of
milliseconds (bench/RESULTS.md): the pool is the figure that counts.
"""

import json
import sys


def q(v, p):
    """The p-th percentile as bench/watch.sh takes it (nearest rank)."""
    v = sorted(v)
    return v[max(0, min(len(v) - 1, -(-len(v) * p // 100) - 1))]


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: bench/watch-pool.py RAW... (files written by bench/watch.sh with RAW=FILE)")
    runs = []
    for path in sys.argv[1:]:
        try:
            with open(path) as f:
                for i, line in enumerate(f, 1):
                    if line.strip():
                        try:
                            runs.append(json.loads(line))
                        except ValueError as e:
                            sys.exit(f"watch-pool: {path}:{i}: not a JSON line of bench/watch.sh ({e})")
        except OSError as e:
            sys.exit(f"watch-pool: {path}: {e.strerror}")
    shapes = {(r.get("n"), r.get("jobs")) for r in runs}
    if not runs or len(shapes) != 1:
        sys.exit(f"watch-pool: expected runs of one N and JOBS, got {sorted(map(str, shapes))}")
    pool = {}
    for r in runs:
        for k, v in r.items():
            if isinstance(v, list):
                pool.setdefault(k, []).extend(v)
    rounds = sum(r["rounds"] for r in runs)
    print(f"{len(runs)} runs, {rounds} rounds, {runs[0]['n']} a round, {runs[0]['jobs']} at a time "
          f"({runs[0]['at']} .. {runs[-1]['at']}); median / p95 ms:")
    for k, v in pool.items():
        if v and isinstance(v[0], list):
            lat, own = [x[0] for x in v], [x[1] for x in v]
            print(f"  {k}: {q(lat, 50):.0f} / {q(lat, 95):.0f} ({len(lat)}), "
                  f"its probe's run {q(own, 50):.0f} / {q(own, 95):.0f}")
            if "cli" in pool:
                b = pool["cli"]
                dm, dp = q(lat, 50) - q(b, 50), q(lat, 95) - q(b, 95)
                om, op = q(own, 50), q(own, 95)
                print(f"    {k} - bare CLI exec: median {dm:.0f} (goal <= {om:.0f}: "
                      f"{'held' if dm <= om else 'missed'}), p95 {dp:.0f} (goal <= {op:.0f}: "
                      f"{'held' if dp <= op else 'missed'})")
        else:
            print(f"  bare {k}: {q(v, 50):.0f} / {q(v, 95):.0f} ({len(v)})")


if __name__ == "__main__":
    main()
