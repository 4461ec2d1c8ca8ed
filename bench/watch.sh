#!/usr/bin/env bash
# Benchmark (issue 31): the latency from a container's start to its verified
# report under `selfprobe-host watch`, against the engine's own exec cost.
#   bench/watch.sh [N] [JOBS] [ROUNDS]
# N (default 40) containers of the FROM-scratch busybox test image
# (--cap-drop=all --network none, a workspace bind: the acceptance tests'
# case (a)) start in a burst, JOBS at a time (default: the watch's default
# --jobs), in three phases, each ROUNDS (default 3) times:
#   - bare: a follower of `docker events` (bench/watch-bare.py) runs
#     `docker exec CTR true` for each container as its start event comes,
#     JOBS at a time: the least any watch can cost, the engine's exec;
#   - bare through the API: the same exec of `true` through the Engine
#     API's socket, as the watch now execs (without the CLI's own start);
#   - watch: `selfprobe-host watch --engine docker` inspects each as it
#     starts (placement, the probe's run, verification, the cross-check,
#     removal), and watch.json says when each report was written and
#     verified (latency_ms: from the engine's start event).
# Each phase's containers are removed before the next starts; the order of
# the phases turns each round. A p95 of one burst of 40 is its second-worst
# container: the rounds are pooled for the figures that count.
# Prints, per round and pooled, the median and 95th percentile of each, the
# probe's own run (run.duration_ms in the reports) and where the watch's
# time went: the goal (issue 31) is that the inspection adds no more than
# the probe's own run to the engine's exec cost.
# AB_HOST=/other/build/selfprobe-host adds a phase (`watchb`): that
# build's watch, in the same rounds, so two builds are compared under the
# same load (a change's effect is smaller than the spread between runs).
# BARE_STDIN=1 adds a bare phase (`stdin`): the API exec of `cat` with a
# key-sized stdin written and closed, as the probe's exec has it.
# BARE_EXTRA="stdinhead stdinnoerr" adds those modes of bench/watch-bare.py
# as bare phases too (what part of stdin's cost is its end of file, and
# whether leaving stderr out pays it back).
# RAW=FILE appends this run's latencies to FILE (one JSON line: each bare
# phase's, each watch phase's with its probe's run), for
# bench/watch-pool.py to pool several runs (a relative FILE is taken from
# the repository's root, where the bench runs).
# Needs root, docker with dockerd answering, busybox-static, python3.
# Every container it starts is removed at its end (by name).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
n=${1:-40}
# JOBS: the watch's --jobs and the bare execs' concurrency; without it, the
# watch's default (the CPUs, 2 to 16: docs/watch.md), which the bare
# execs then take too.
if [ -n "${2:-}" ]; then
    jobs=$2
    jobs_flag=(--jobs "$jobs")
else
    jobs=$(nproc)
    jobs=$(( jobs < 2 ? 2 : jobs > 16 ? 16 : jobs ))
    jobs_flag=()
fi
rounds=${3:-3}
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
    # A few at a time: 120 in one `docker rm -f` deadlocked dockerd 20.10
    # here (every removal waiting in libnetwork's releaseNetwork).
    docker ps -aq --filter "name=^$tag-" | xargs -r -n 4 timeout 60 docker rm -f >/dev/null 2>&1 || true
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

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, $n containers, $jobs at a time, $rounds rounds"

# Removes one phase's containers (4 at a time: 8 in one `docker rm -f`
# also hung dockerd 20.10 once, 2026-12-03 11:09, for 20 minutes until it
# was restarted) and lets the machine settle, so no phase runs beside
# another's leftovers. A removal that does not end in 60 s ends the bench:
# its figures would be a hung engine's.
clear_phase() {
    if ! docker ps -aq --filter "label=$1" | xargs -r -n 4 timeout 60 docker rm -f >/dev/null; then
        echo "bench/watch.sh: dockerd did not remove the containers of $1 within 60 s (restart it: .ci/engines)" >&2
        exit 1
    fi
    sleep 3
}

# Bare: the engine's exec, as each start event comes (cli: `docker exec
# CTR true`; api: the same through the Engine API).
bare() {
    local mode=$1 r=$2
    python3 bench/watch-bare.py "$tag-$mode$r=1" "$n" "$jobs" "$mode" > "$tmp/$mode-$r.json" &
    bare_pid=$!
    sleep 1
    burst "$tag-$mode$r=1" "$mode$r"
    wait "$bare_pid"
    clear_phase "$tag-$mode$r=1"
}

# The watch, a new one each round with its own out-dir (`watch`: this
# build or SELFPROBE_HOST; `watchb`: AB_HOST).
watch() {
    local w=$1 r=$2 bin=$host
    [ "$w" = watch ] || bin=$AB_HOST
    "$bin" watch --engine docker --filter "label=$tag-$w$r=1" "${jobs_flag[@]}" \
        --out-dir "$tmp/out-$w-$r" 2> "$tmp/$w-$r.log" &
    watch_pid=$!
    for _ in $(seq 1 100); do
        grep -q "watching the" "$tmp/$w-$r.log" 2>/dev/null && break
        sleep 0.1
    done
    burst "$tag-$w$r=1" "$w$r"
    python3 - "$tmp/out-$w-$r/watch.json" "$n" <<'PY'
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
    awk -v hz="$(getconf CLK_TCK)" '{print int(($14 + $15) * 1000 / hz)}' \
        "/proc/$watch_pid/stat" > "$tmp/cpu-$w-$r"
    kill -TERM "$watch_pid"
    wait "$watch_pid" || true
    watch_pid=
    clear_phase "$tag-$w$r=1"
}

# Each round runs the phases in another order (cli api watch, api watch
# cli, watch cli api), so none always runs first on a rested machine.
bares=(cli api)
# BARE_STDIN=1: the API exec of `cat` with a key-sized stdin as a phase
# (`stdin`): what the engine's exec costs with stdin attached, as the
# probe's has it.
[ -z "${BARE_STDIN:-}" ] || bares+=(stdin)
# shellcheck disable=SC2206
bares+=(${BARE_EXTRA:-})
watches=(watch)
# AB_HOST: a second build's selfprobe-host as a phase (`watchb`), so two
# builds are compared within the same rounds, under the same load.
[ -z "${AB_HOST:-}" ] || watches+=(watchb)
phases=("${bares[@]}" "${watches[@]}")
for r in $(seq 1 "$rounds"); do
    order=("${phases[@]}" "${phases[@]}")
    for phase in "${order[@]:$(( (r - 1) % ${#phases[@]} )):${#phases[@]}}"; do
        case $phase in
            watch*) watch "$phase" "$r" ;;
            *) bare "$phase" "$r" ;;
        esac
    done
done
grep -ho "[0-9]* at a time" "$tmp/watch-1.log" | head -1 | sed 's/^/the watch ran /'

python3 - "$tmp" "$n" "$jobs" "$rounds" "${bares[*]}" "${watches[*]}" <<'PY'
import json, os, statistics, sys
from datetime import datetime, timezone
from pathlib import Path
tmp, n, jobs, rounds = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
bares, watches = sys.argv[5].split(), sys.argv[6].split()
def q(v, p):
    v = sorted(v)
    return v[max(0, min(len(v) - 1, -(-len(v) * p // 100) - 1))]
def t(s):
    if not s:
        return None
    day, frac = s.rstrip("Z").split(".") if "." in s else (s.rstrip("Z"), "0")
    base = datetime.fromisoformat(day).replace(tzinfo=timezone.utc).timestamp()
    return base * 1000 + float("0." + frac) * 1000
# Per round and pooled: the bare execs' latencies, the watch's (start
# event to verified report), the probe's own runs (run.duration_ms), and
# where each container's time went: watch.json's times (the start event,
# the dispatch, the result taken by the loop) around inspection.json's
# (its started/finished and the container's steps_ms).
def read_watch(w, r):
    """One watch phase's verified containers: latency, own run, parts."""
    out = tmp / f"out-{w}-{r}"
    got = []
    for e in json.load(open(out / "watch.json"))["containers"].values():
        d = out / e["inspection"] if e.get("inspection") else None
        if not (e.get("verified") and e.get("latency_ms") is not None and d
                and (d / "inspection.json").is_file()):
            continue
        i = json.load(open(d / "inspection.json"))
        c = i["containers"][0]
        rep = json.load(open(d / c["report"]))["run"] if c.get("report") else None
        ran = rep["duration_ms"] if rep else 0
        steps = c.get("steps_ms", {})
        s0, s1, s2 = t(e.get("started")), t(e.get("inspection_started")), t(e.get("inspection_finished"))
        i0, i1 = t(i["started"]), t(i["finished"])
        total = steps.get("total", 0)
        # When the probe's exec began: the steps end the inspection (what
        # comes before them is the digests and the settle), placement first.
        exec0 = i1 - total + steps.get("place", 0)
        rows = {
            "to a worker": s1 - s0,
            "record (container inspect)": i0 - s1,
            "before the run (digests, settle)": (i1 - i0) - total,
            "placement": steps.get("place", 0),
            "the probe's exec": steps.get("run", 0),
            "of which not its run": steps.get("run", 0) - ran,
            "of which before its run began": t(rep["started"]) - exec0 if rep else 0,
            "of which after its run ended": exec0 + steps.get("run", 0) - t(rep["finished"]) if rep else 0,
            "removal (plant)": steps.get("plant", 0),
            "verification, cross-check": total - steps.get("place", 0) - steps.get("run", 0) - steps.get("plant", 0),
            "written": s2 - i1,
        }
        got.append((e["latency_ms"], ran, rows))
    return got

pool = {k: [] for k in [*bares, *watches]}
bare = {"cli": "bare docker exec CTR true, from each start event",
        "api": "bare exec of true through the Engine API",
        "stdin": "bare exec of cat through the Engine API, a key-sized stdin",
        "stdinhead": "bare exec of head -c 439 (ends without waiting for stdin's end), a key-sized stdin",
        "stdinnoerr": "bare exec of cat with a key-sized stdin, stderr not attached"}
for r in range(1, rounds + 1):
    line = []
    for k in bares:
        v = json.load(open(tmp / f"{k}-{r}.json"))["latency_ms"]
        pool[k] += v
        line.append(f"bare {k} exec {q(v, 50):.0f} / {q(v, 95):.0f} ({len(v)})")
    for w in watches:
        got = read_watch(w, r)
        pool[w] += got
        lat, own = [g[0] for g in got], [g[1] for g in got]
        line.append(f"{w} {q(lat, 50):.0f} / {q(lat, 95):.0f} ({len(lat)} of {n} verified), "
                    f"its probe's run {q(own, 50):.0f} / {q(own, 95):.0f}")
    print(f"round {r}: median / p95 ms: " + ", ".join(line))
b, a = pool["cli"], pool["api"]
print(f"pooled over {rounds} rounds, {jobs} at a time (median / p95 ms):")
for k in bares:
    print(f"  {bare[k]}: {q(pool[k], 50):.0f} / {q(pool[k], 95):.0f} ({len(pool[k])})")
for w in watches:
    got = pool[w]
    lat, o = [g[0] for g in got], [g[1] for g in got]
    cpu = sum(int(open(tmp / f"cpu-{w}-{r}").read()) for r in range(1, rounds + 1))
    print(f"  {w}{' (AB_HOST)' if w == 'watchb' else ''}, start to verified report: "
          f"{q(lat, 50):.0f} / {q(lat, 95):.0f} ({len(lat)} of {n * rounds} verified)")
    print(f"    the probe's own run (run.duration_ms): {q(o, 50):.0f} / {q(o, 95):.0f}")
    print(f"    {w} - bare CLI exec: median {q(lat, 50) - q(b, 50):.0f} (probe's run {q(o, 50):.0f}), "
          f"p95 {q(lat, 95) - q(b, 95):.0f} (probe's run {q(o, 95):.0f}); "
          f"{w} - API exec: median {q(lat, 50) - q(a, 50):.0f}, p95 {q(lat, 95) - q(a, 95):.0f}")
    keys = list(got[0][2]) if got else []
    print("    where the time goes (median / p95 ms): " + "; ".join(
        f"{k} {statistics.median(g[2][k] for g in got):.0f} / {q([g[2][k] for g in got], 95):.0f}"
        for k in keys))
    tail = sorted(got, key=lambda g: g[0])[-max(1, len(got) // 20):]
    print(f"    the slowest {len(tail)} ({min(g[0] for g in tail)} ms and more), mean ms: " + "; ".join(
        f"{k} {statistics.mean(g[2][k] for g in tail):.0f}" for k in keys))
    print(f"    the watch's own CPU: {cpu} ms ({cpu // max(1, len(lat))} ms a container)")
raw = os.environ.get("RAW")
if raw:
    with open(raw, "a") as f:
        f.write(json.dumps({
            "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "rounds": rounds, "n": n, "jobs": jobs,
            **{k: pool[k] for k in bares},
            **{w: [[g[0], g[1]] for g in pool[w]] for w in watches},
        }) + "\n")
PY
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
