#!/usr/bin/env bash
# Benchmark (issue 13): a full selfprobe run in the realistic image
# (tests/realistic/build.sh: Debian with python3, nodejs, npm, git,
# build-essential, CPython's test suite and a home holding a pyenv tree of
# package test keys) against the same run in the minimal FROM scratch
# image (Containerfile.test). Not a timed test: it prints figures for
# bench/RESULTS.md.
#   bench/realistic.sh [RUNS]     RUNS per image (default 11)
# Both containers get the clean flags (--read-only --cap-drop=all --user
# 1000:1000 --network none) and an empty workspace. Per image, over RUNS
# `podman exec` calls after one warm-up run:
#   - wall time of selfprobe inside the container, and peak RSS of it and
#     the children it ran (bench/maxrss.rs, wait4), median / min / max;
#   - the report's own run time, and the slowest tool: the longest
#     inventory.repro.tools[].duration_ms and how its version was had.
# Needs root, podman, runc, busybox-static, debootstrap, python3, rustc.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs=${1:-11}
export CONTAINERS_CONF="$PWD/tests/containers.conf"
for c in podman python3 rustc debootstrap; do
    command -v "$c" >/dev/null || { echo "bench: $c is missing (apt-get install -y $c)" >&2; exit 2; }
done
realistic=$(bash tests/realistic/build.sh)
cargo build --release --quiet
bin=target/x86_64-unknown-linux-gnu/release/selfprobe
work=$(mktemp -d)
names=()
cleanup() { for n in "${names[@]}"; do podman rm -f -t 0 "$n" >/dev/null 2>&1 || true; done; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/ctx" "$work/ws" "$work/out"
chmod 0755 "$work/ws"
cp "$bin" "$work/ctx/selfprobe"
cp /bin/busybox "$work/ctx/busybox"
rustc -O -C target-feature=+crt-static --target x86_64-unknown-linux-gnu \
    bench/maxrss.rs -o "$work/ctx/maxrss"
minimal_base=$(podman build -q -f Containerfile.test "$work/ctx")
printf 'FROM %s\nCOPY maxrss /usr/local/bin/maxrss\n' "$minimal_base" >"$work/Minimal"
printf 'FROM %s\nCOPY selfprobe /usr/local/bin/selfprobe\nCOPY maxrss /usr/local/bin/maxrss\n' "$realistic" >"$work/Realistic"
minimal=$(podman build -q -f "$work/Minimal" "$work/ctx")
real=$(podman build -q -f "$work/Realistic" "$work/ctx")

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for pair in "minimal:$minimal" "realistic:$real"; do
    label=${pair%%:*}; img=${pair#*:}
    name="selfprobe-bench-real-$label-$$"; names+=("$name")
    podman run -d --name "$name" --read-only --cap-drop=all --user 1000:1000 --network none \
        -v "$work/ws:/workspace:ro" "$img" /bin/sleep 3600 >/dev/null
    probe=(podman exec "$name" /usr/local/bin/maxrss /usr/local/bin/selfprobe --format json --workspace /workspace)
    "${probe[@]}" >/dev/null 2>&1 || true
    for i in $(seq "$runs"); do
        "${probe[@]}" >"$work/out/$label.$i.json" 2>"$work/out/$label.$i.err" || true
    done
    podman rm -f -t 0 "$name" >/dev/null
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$work/out" "$runs" <<'PY'
import json, re, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
med = {}
for label in ("minimal", "realistic"):
    wall, rss, own, slow = [], [], [], []
    for i in range(1, runs + 1):
        err = open(f"{out}/{label}.{i}.err").read()
        m = re.search(r"BENCH wall_us=(\d+) maxrss_kib=(\d+)", err)
        r = json.load(open(f"{out}/{label}.{i}.json"))
        wall.append(int(m.group(1)) / 1000); rss.append(int(m.group(2)) / 1024)
        own.append(r["run"]["duration_us"] / 1000)
        tools = r["inventory"].get("repro", {}).get("tools", [])
        t = max(tools, key=lambda t: t["duration_ms"], default=None)
        slow.append((t["duration_ms"], t["tool"], t["status"]) if t else (0, "-", "-"))
        if i == runs:
            ran = [t["tool"] for t in tools if t["status"] not in ("from-file", "not-run")]
            read = [t["tool"] for t in tools if t["status"] == "from-file"]
    med[label] = statistics.median(wall)
    s = max(slow)
    print(f"{label:9} median {statistics.median(wall):7.1f} ms (min {min(wall):.1f}, max {max(wall):.1f}), "
          f"own {statistics.median(own):.1f} ms, peak RSS {max(rss):.1f} MiB, "
          f"slowest tool {s[1]} {s[0]} ms ({s[2]}); run: {ran or 'none'}; read from files: {read or 'none'}")
print(f"realistic / minimal: {med['realistic'] / med['minimal']:.2f}x (target: within 2x)")
PY
