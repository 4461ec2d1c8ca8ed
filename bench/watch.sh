#!/usr/bin/env bash
# Benchmark (issue 31): the latency from a container's start to its verified
# report under `selfprobe-host watch`, against the engine's own exec cost.
#   bench/watch.sh [N] [JOBS]
# N (default 40) containers of the FROM-scratch busybox test image
# (--cap-drop=all --network none, a workspace bind: the acceptance tests'
# case (a)) start in a burst, JOBS (default 4, the watch's default --jobs)
# at a time, three times:
#   - bare: a follower of `docker events` (bench/watch-bare.py) runs
#     `docker exec CTR true` for each container as its start event comes,
#     JOBS at a time: the least any watch can cost, the engine's exec;
#   - bare through the API: the same exec of `true` through the Engine
#     API's socket, as the watch now execs (without the CLI's own start);
#   - watch: `selfprobe-host watch --engine docker --jobs JOBS` inspects
#     each as it starts (placement, the probe's run, verification, the
#     cross-check, removal), and watch.json says when each report was
#     written and verified (latency_ms: from the engine's start event).
# Prints, with the load average before and after, the median and 95th
# percentile of each, their ratio, and the probe's own run (run.duration_ms
# in the reports): the goal (issue 31) is that the inspection adds no more
# than the probe's own run to the engine's exec cost.
# Needs root, docker with dockerd answering, busybox-static, python3.
# Every container it starts is removed at its end (by name).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
n=${1:-40}
jobs=${2:-4}
# SELFPROBE_HOST: another build's selfprobe-host (with its selfprobe beside
# it), to measure a change before and after under the same conditions.
if [ -z "${SELFPROBE_HOST:-}" ]; then
    cargo build --release --quiet
fi
host=${SELFPROBE_HOST:-$PWD/target/x86_64-unknown-linux-gnu/release/selfprobe-host}
tmp=$(mktemp -d /tmp/selfprobe-bench-watch.XXXXXX)
tag="selfprobe-bench-watch-$$"
watch_pid=
cleanup() {
    [ -z "$watch_pid" ] || kill "$watch_pid" 2>/dev/null || true
    # By name: burst's names are made in a pipeline's subshell, so a list
    # kept there never reached this one (the runs before 2026-12-02 21:00
    # left every container running, and each run saw all the earlier ones).
    # Eight at a time: 120 in one `docker rm -f` deadlocked dockerd 20.10
    # here (every removal waiting in libnetwork's releaseNetwork).
    docker ps -aq --filter "name=^$tag-" | xargs -r -n 8 docker rm -f >/dev/null 2>&1 || true
    docker rmi -f "localhost/$tag:latest" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT

# The image: busybox and its applets, as tests/it/common/engines.rs builds it.
mkdir -p "$tmp/tree/bin" "$tmp/tree/tmp" "$tmp/tree/workspace" "$tmp/tree/etc" "$tmp/ws"
cp /bin/busybox "$tmp/tree/bin/"
for a in $(/bin/busybox --list); do [ -e "$tmp/tree/bin/$a" ] || ln -s busybox "$tmp/tree/bin/$a"; done
chmod 1777 "$tmp/tree/tmp"
printf 'root:x:0:0:root:/root:/bin/sh\n' > "$tmp/tree/etc/passwd"
tar -C "$tmp/tree" -cf "$tmp/image.tar" .
docker import -c 'WORKDIR /workspace' "$tmp/image.tar" "localhost/$tag:latest" >/dev/null

# N containers labelled LABEL, started JOBS at a time.
burst() {
    local label=$1 round=$2
    for i in $(seq 1 "$n"); do
        echo "$tag-$round-$i"
    done | xargs -P"$jobs" -I{} docker run -d --name {} --label "$label" \
        --cap-drop=all --network none -v "$tmp/ws:/workspace" \
        "localhost/$tag:latest" /bin/sleep 3600 >/dev/null
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, $n containers, $jobs at a time"

# Bare: the engine's exec, as each start event comes.
python3 bench/watch-bare.py "$tag-bare=1" "$n" "$jobs" > "$tmp/bare.json" &
bare_pid=$!
sleep 1
burst "$tag-bare=1" bare
wait "$bare_pid"
python3 bench/watch-bare.py "$tag-api=1" "$n" "$jobs" api > "$tmp/api.json" &
bare_pid=$!
sleep 1
burst "$tag-api=1" api
wait "$bare_pid"

# The watch.
"$host" watch --engine docker --filter "label=$tag-watch=1" --jobs "$jobs" \
    --out-dir "$tmp/out" 2> "$tmp/watch.log" &
watch_pid=$!
for _ in $(seq 1 100); do
    grep -q "watching the" "$tmp/watch.log" 2>/dev/null && break
    sleep 0.1
done
burst "$tag-watch=1" watch
python3 - "$tmp/out/watch.json" "$n" <<'PY'
import json, sys, time
path, n = sys.argv[1], int(sys.argv[2])
for _ in range(6000):
    try:
        st = json.load(open(path))
        done = [e for e in st["containers"].values() if e["state"] in ("inspected", "missed")]
        if len(done) >= n:
            break
    except (OSError, ValueError):
        pass
    time.sleep(0.1)
PY
# The watch's own CPU (its threads; the probes run in the containers).
cpu_ms=$(awk -v hz="$(getconf CLK_TCK)" '{print int(($14 + $15) * 1000 / hz)}' "/proc/$watch_pid/stat")
kill -TERM "$watch_pid"
wait "$watch_pid" || true
watch_pid=

python3 - "$tmp/bare.json" "$tmp/out" "$n" "$jobs" "$tmp/api.json" <<'PY'
import json, statistics, sys
from pathlib import Path
bare, out, n, jobs = json.load(open(sys.argv[1])), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
bare_api = json.load(open(sys.argv[5]))["latency_ms"]
st = json.load(open(out / "watch.json"))
es = list(st["containers"].values())
lat = [e["latency_ms"] for e in es if e.get("verified") and e.get("latency_ms") is not None]
own = []
for e in es:
    d = out / e["inspection"] if e.get("inspection") else None
    if d and (d / "inspection.json").is_file():
        c = json.load(open(d / "inspection.json"))["containers"][0]
        if c.get("report"):
            own.append(json.load(open(d / c["report"]))["run"]["duration_ms"])
def q(v, p):
    v = sorted(v)
    return v[max(0, min(len(v) - 1, -(-len(v) * p // 100) - 1))]
b = bare["latency_ms"]
print(f"bare docker exec CTR true, {jobs} at a time, from each start event: "
      f"median {q(b, 50):.0f} ms, p95 {q(b, 95):.0f} ms ({len(b)} of {n})")
print(f"watch, --jobs {jobs}, start to verified report: median {q(lat, 50):.0f} ms, "
      f"p95 {q(lat, 95):.0f} ms ({len(lat)} of {n} verified)")
print(f"ratio watch / bare: median {q(lat, 50) / q(b, 50):.1f}x, p95 {q(lat, 95) / q(b, 95):.1f}x; "
      f"the probe's own run (run.duration_ms) median {statistics.median(own):.0f} ms; "
      f"median watch - bare - probe's run: {q(lat, 50) - q(b, 50) - statistics.median(own):.0f} ms")
print(f"bare exec of true through the Engine API, {jobs} at a time: median {q(bare_api, 50):.0f} ms, "
      f"p95 {q(bare_api, 95):.0f} ms ({len(bare_api)} of {n}); median watch - API exec - probe's run: "
      f"{q(lat, 50) - q(bare_api, 50) - statistics.median(own):.0f} ms")
# Where the time goes, per container (medians, ms): watch.json's times
# (the start event, the dispatch, the result taken by the loop) around
# inspection.json's (its started/finished and the container's steps_ms).
def t(s):
    if not s:
        return None
    day, frac = s.rstrip("Z").split(".") if "." in s else (s.rstrip("Z"), "0")
    from datetime import datetime, timezone
    base = datetime.fromisoformat(day).replace(tzinfo=timezone.utc).timestamp()
    return base * 1000 + float("0." + frac) * 1000
parts = {}
for e in es:
    d = out / e["inspection"] if e.get("inspection") else None
    if not (e.get("verified") and d and (d / "inspection.json").is_file()):
        continue
    i = json.load(open(d / "inspection.json"))
    steps = i["containers"][0].get("steps_ms", {})
    s0, s1, s2 = t(e.get("started")), t(e.get("inspection_started")), t(e.get("inspection_finished"))
    i0, i1 = t(i["started"]), t(i["finished"])
    total = steps.get("total", 0)
    rows = {
        "to a worker": s1 - s0,
        "record (container inspect)": i0 - s1,
        "before the run (digests, settle)": (i1 - i0) - total,
        "placement": steps.get("place", 0),
        "the probe's exec": steps.get("run", 0),
        "removal (plant)": steps.get("plant", 0),
        "verification, cross-check": total - steps.get("place", 0) - steps.get("run", 0) - steps.get("plant", 0),
        "written, back to the loop": s2 - i1,
    }
    for k, v in rows.items():
        parts.setdefault(k, []).append(v)
print("where the time goes (median ms): " + "; ".join(
    f"{k} {statistics.median(v):.0f}" for k, v in parts.items()))
PY
echo "the watch's own CPU over the burst: $cpu_ms ms ($((cpu_ms / n)) ms a container)"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
