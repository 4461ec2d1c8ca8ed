#!/usr/bin/env bash
# Benchmark (issue 21): `selfprobe-host inspect` over N running Docker containers
# on this machine, against the engine's own exec cost.
#   bench/inspect.sh [N] [PARALLEL...]
# N (default 20) containers of the FROM-scratch busybox test image run
# --cap-drop=all --network none with a workspace bind (the acceptance
# tests' case (a)). Prints, with the load average before and after:
#   - a bare `docker exec CTR true`: per call sequentially, and the wall
#     time of one over every container 4 at a time (xargs -P4);
#   - the probe's own run time, read from the reports (run.duration_ms);
#   - `selfprobe-host inspect` of all N at each PARALLEL (default 1 and 4):
#     total wall, wall per container, and each step's median per container
#     (placement = cp + exec --version, run = the probing exec);
#   - the stripped release binary's size.
# Needs root, docker with dockerd answering, busybox-static, python3.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
n=${1:-20}
shift || true
par=("$@")
[ ${#par[@]} -gt 0 ] || par=(1 4)
cargo build --release --quiet
bin=$PWD/target/x86_64-unknown-linux-gnu/release/selfprobe
host=$PWD/target/x86_64-unknown-linux-gnu/release/selfprobe-host
tmp=$(mktemp -d /tmp/selfprobe-bench-inspect.XXXXXX)
tag="selfprobe-bench-inspect-$$"
names=()
cleanup() {
    for c in "${names[@]}"; do docker rm -f "$c" >/dev/null 2>&1 || true; done
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

for i in $(seq 1 "$n"); do
    c="$tag-$i"
    names+=("$c")
    docker run -d --name "$c" --cap-drop=all --network none -v "$tmp/ws:/workspace" \
        "localhost/$tag:latest" /bin/sleep 3600 >/dev/null
done
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, $n containers"

now() { date +%s%N; }
# One line per inspect: ARGS are the JSON, its directory, a label, the wall ms and N.
summarize() {
    python3 - "$@" <<'PY'
import json, statistics, sys
from pathlib import Path
insp, out, p, wall, n = json.load(open(sys.argv[1])), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
cs = insp["containers"]
ok = sum(1 for c in cs if c["verified"] and not c["disagreements"])
def med(k):
    v = [c["steps_ms"].get(k) for c in cs if c["steps_ms"].get(k) is not None]
    return f"{statistics.median(v):.0f}" if v else "-"
own = [json.load(open(out / c["report"]))["run"]["duration_ms"] for c in cs if c["report"]]
print(f"inspect --parallel {p}: {wall} ms for {n} ({wall / n:.0f} ms per container), "
      f"{ok}/{n} verified with no disagreement; per container median: placement {med('place')} ms, "
      f"run {med('run')} ms, total {med('total')} ms; the probe's own run {statistics.median(own):.0f} ms")
PY
}

t0=$(now)
for c in "${names[@]}"; do docker exec "$c" true; done
t1=$(now)
printf '%s\n' "${names[@]}" | xargs -P4 -I{} docker exec {} true
t2=$(now)
echo "bare docker exec CTR true: $(( (t1 - t0) / 1000000 / n )) ms per call sequentially; all $n, 4 at a time: $(( (t2 - t1) / 1000000 )) ms"

for p in "${par[@]}"; do
    out="$tmp/out-$p"
    s=$(now)
    "$host" inspect --engine docker --parallel "$p" --out-dir "$out" --format json "${names[@]}" > "$tmp/insp-$p.json" || true
    e=$(now)
    summarize "$tmp/insp-$p.json" "$out" "$p" "$(( (e - s) / 1000000 ))" "$n"
done
# The same containers with the probe bind-mounted read-only, as the
# instruction says: nothing to copy or remove, one exec per container.
mounted=()
for i in $(seq 1 "$n"); do
    c="$tag-m$i"
    names+=("$c")
    mounted+=("$c")
    docker run -d --name "$c" --cap-drop=all --network none -v "$tmp/ws:/workspace" \
        -v "$bin:/usr/local/bin/selfprobe:ro" "localhost/$tag:latest" /bin/sleep 3600 >/dev/null
done
for p in 1 4; do
    out="$tmp/outm-$p"
    s=$(now)
    "$host" inspect --engine docker --parallel "$p" --out-dir "$out" --format json "${mounted[@]}" > "$tmp/inspm-$p.json" || true
    e=$(now)
    summarize "$tmp/inspm-$p.json" "$out" "$p (probe bind-mounted)" "$(( (e - s) / 1000000 ))" "$n"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "stripped release binary: $(stat -c %s "$bin") bytes"
