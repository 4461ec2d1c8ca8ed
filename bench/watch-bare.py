#!/usr/bin/env python3
"""The baseline of bench/watch.sh: the least a watch can do per container.

    bench/watch-bare.py LABEL N JOBS

Follows `docker events` for containers labelled LABEL (KEY=VALUE) as they
start and runs `docker exec CTR true` for each, JOBS at a time, as the watch
runs its inspections. Prints JSON: each container's latency in ms from its
start event (the engine's timeNano) to the exec's end, once N have been
done.
"""

import json
import queue
import subprocess
import sys
import threading
import time


def main():
    label, n, jobs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    events = subprocess.Popen(
        ["docker", "events", "--format", "{{json .}}",
         "--filter", "type=container", "--filter", "event=start",
         "--filter", f"label={label}"],
        stdout=subprocess.PIPE, text=True)
    todo = queue.Queue()
    done = []
    lock = threading.Lock()

    def worker():
        while True:
            item = todo.get()
            if item is None:
                return
            cid, started_ns = item
            subprocess.run(["docker", "exec", cid, "true"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            with lock:
                done.append((time.time_ns() - started_ns) / 1e6)

    threads = [threading.Thread(target=worker) for _ in range(jobs)]
    for t in threads:
        t.start()
    seen = 0
    for line in events.stdout:
        ev = json.loads(line)
        todo.put((ev["id"], ev["timeNano"]))
        seen += 1
        if seen >= n:
            break
    events.kill()
    for _ in threads:
        todo.put(None)
    for t in threads:
        t.join()
    print(json.dumps({"latency_ms": done}))


if __name__ == "__main__":
    main()
