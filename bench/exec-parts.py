#!/usr/bin/env python3
"""Where a probe's exec through Docker's Engine API spends its time.

    bench/exec-parts.py KEY.pem PROBE ROUNDS JOBS CONTAINER...

PROBE is the probe's path inside each CONTAINER (running, with the probe
placed there and KEY.pem copied to /tmp/key.pem in it, e.g. by `docker cp`);
JOBS containers are used at once, ROUNDS execs in all. For each of four
ways of running the probe as the watch does (`run --format json --attest -`):
the key on the exec's stdin (as the watch gives it), the key from a file in
the container (through /bin/sh), no key at all, and the key on stdin with
the report to /dev/null (the envelope alone on stdout: 38 KB of the 82),
prints the medians of:
the exec's start call to the daemon's 101; the exec's create to the run's
start (run.started in the report: the engine starting the process, the
probe's start-up, reading its key); the run (run.started to run.finished);
the run's end to the stream's end (signing, writing the report, exiting,
the daemon's copy); the whole exec with its inspect. The container's clock
is the host's. Used for bench/RESULTS.md, "The watch", 2026-12-03 (twice).
"""

import base64
import datetime
import importlib.util
import json
import os
import socket
import statistics
import sys
import threading
import time

spec = importlib.util.spec_from_file_location(
    "bare", os.path.join(os.path.dirname(os.path.abspath(__file__)), "watch-bare.py"))
bare = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bare)


def stamp(s):
    day, _, frac = s.rstrip("Z").partition(".")
    t = datetime.datetime.fromisoformat(day).replace(tzinfo=datetime.timezone.utc)
    return t.timestamp() + float("0." + (frac or "0"))


def run(cid, cmd, key):
    t0 = time.time()
    ex = bare.api("POST", f"/containers/{cid}/exec",
                  {"Cmd": cmd, "AttachStdout": True, "AttachStderr": True,
                   "AttachStdin": key is not None})
    s = bare.api("POST", f"/exec/{ex['Id']}/start", {"Detach": False, "Tty": False},
                 upgrade=True)
    t1 = time.time()
    if key is not None:
        s.sendall(key)
    s.shutdown(socket.SHUT_WR)
    got = bare.read_to_end(s)
    t2 = time.time()
    bare.api("GET", f"/exec/{ex['Id']}/json")
    t3 = time.time()
    out, i = b"", 0
    while i + 8 <= len(got):
        n = int.from_bytes(got[i + 4:i + 8], "big")
        if got[i] == 1:
            out += got[i + 8:i + 8 + n]
        i += 8 + n
    r, _ = json.JSONDecoder().raw_decode(out.decode())
    if "payload" in r:
        r = json.loads(base64.b64decode(r["payload"]))["predicate"]
    rs, rf = stamp(r["run"]["started"]), stamp(r["run"]["finished"])
    return [(t1 - t0) * 1000, (rs - t0) * 1000, (rf - rs) * 1000, (t2 - rf) * 1000,
            (t3 - t0) * 1000]


def main():
    key_path, probe, rounds, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    ctrs = sys.argv[5:5 + jobs]
    if len(ctrs) < jobs:
        sys.exit(f"exec-parts: {jobs} at once needs {jobs} containers, got {len(ctrs)}")
    key = open(key_path, "rb").read()
    argv = [probe, "run", "--format", "json", "--attest", "-", "--sign-key-fd", "0",
            "--root", "/", "--nonce", "bench", "--timeout", "10000ms", "--fail-on", "none"]
    ways = {
        "key on stdin": (argv, key),
        "key from a file": (["/bin/sh", "-c", " ".join(argv) + " < /tmp/key.pem"], None),
        "no key": (argv[:4] + argv[8:], None),
        "key on stdin, the envelope alone": (argv + ["-o", "/dev/null"], key),
    }
    for name, (cmd, k) in ways.items():
        parts = []

        def worker(c):
            for _ in range(rounds // jobs):
                parts.append(run(c, cmd, k))

        threads = [threading.Thread(target=worker, args=(c,)) for c in ctrs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        m = [statistics.median(p[i] for p in parts) for i in range(5)]
        print(f"{jobs} at once, {name}: start to 101 {m[0]:.1f} ms; create to the run's start "
              f"{m[1]:.1f}; the run {m[2]:.1f}; its end to the stream's end {m[3]:.1f}; "
              f"the whole exec {m[4]:.1f} (medians of {len(parts)})")


if __name__ == "__main__":
    main()
