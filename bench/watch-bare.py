#!/usr/bin/env python3
"""The baseline of bench/watch.sh: the least a watch can do per container.

    bench/watch-bare.py LABEL N JOBS [cli|api|stdin|stdinhead|stdinnoerr]

Follows `docker events` for containers labelled LABEL (KEY=VALUE) as they
start and runs `true` in each, JOBS at a time, as the watch runs its
inspections: with `cli` (the default) as `docker exec CTR true`; with `api`
through the Engine API on /var/run/docker.sock as the watch now execs
(create, start attached, inspect: outside/engine_api.rs), so the engine's
exec cost is shown both with and without the CLI's own; with `stdin` the
same API exec of `cat` with its stdin attached, 439 bytes written and
closed as the watch gives the probe its key (a stand-in of a key's size,
no key): what attaching stdin costs the engine; `stdinhead` execs `head -c
439` instead (it ends once it has the bytes, not waiting for stdin's end
of file), `stdinnoerr` is `stdin` without stderr attached. Prints JSON: each
container's latency in ms from its start event (the engine's timeNano) to
the exec's end, once N have been done.
"""

import json
import queue
import socket
import subprocess
import sys
import threading
import time

SOCKET = "/var/run/docker.sock"
# What stands for the key on stdin: a PEM-shaped block of an Ed25519
# OpenSSH key's size, no key in it.
KEY_SIZED = (b"-----BEGIN OPENSSH PRIVATE KEY-----\n" + b"A" * 70 + b"\n") * 4 + b"x" * 11


def api(method, path, body=None, upgrade=False):
    """One request on its own connection; with upgrade, the connection
    once the daemon has handed it over (its head read)."""
    s = socket.socket(socket.AF_UNIX)
    s.connect(SOCKET)
    data = json.dumps(body).encode() if body is not None else b""
    head = (f"{method} {path} HTTP/1.1\r\nHost: docker\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n")
    head += "Upgrade: tcp\r\n" if upgrade else "Connection: close\r\n"
    s.sendall(head.encode() + b"\r\n" + data)
    got = b""
    while b"\r\n\r\n" not in got:
        got += s.recv(4096)
    if upgrade:
        return s
    got = read_to_end(s, got)
    head, _, rest = got.partition(b"\r\n\r\n")
    if b"chunked" in head.lower():
        rest = rest.split(b"\r\n")[1]
    return json.loads(rest) if rest.strip() else None


def read_to_end(s, got=b""):
    """What is left on the connection until the daemon closes it, after
    `got`; the connection closed."""
    while True:
        d = s.recv(65536)
        if not d:
            break
        got += d
    s.close()
    return got


def api_exec_true(cid, stdin=None, cmd=None, stderr=True):
    cmd = cmd or (["true"] if stdin is None else ["cat"])
    ex = api("POST", f"/containers/{cid}/exec",
             {"Cmd": cmd, "AttachStdin": stdin is not None,
              "AttachStdout": True, "AttachStderr": stderr})
    s = api("POST", f"/exec/{ex['Id']}/start", {"Detach": False, "Tty": False},
            upgrade=True)
    if stdin is not None:
        s.sendall(stdin)
    s.shutdown(socket.SHUT_WR)
    read_to_end(s)
    api("GET", f"/exec/{ex['Id']}/json")


def main():
    label, n, jobs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    mode = sys.argv[4] if len(sys.argv) > 4 else "cli"
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
            if mode == "api":
                api_exec_true(cid)
            elif mode == "stdin":
                api_exec_true(cid, KEY_SIZED)
            elif mode == "stdinnoerr":
                api_exec_true(cid, KEY_SIZED, stderr=False)
            elif mode == "stdinhead":
                api_exec_true(cid, KEY_SIZED, ["head", "-c", str(len(KEY_SIZED))])
            else:
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
