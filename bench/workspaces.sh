#!/usr/bin/env bash
# Benchmark: selfprobe (no network probes) in the clean container of the
# acceptance tests, for an empty workspace ("clean") and for workspaces of
# 1k, 10k, 100k and 1M files (shape: bench/mkworkspace.sh), plus the
# stripped binary's size.
#   bench/workspaces.sh [RUNS]            RUNS per case (default 10)
#   SIZES="0 1000000" bench/workspaces.sh 0 is the clean container
#   BENCH_WS=DIR: where the workspaces are made and kept between runs
#                 (default /var/tmp/selfprobe-bench-ws; 1M files ~ 4 GB
#                 of inodes, a few minutes to make the first time)
# Per case it records, over RUNS `podman exec` calls into one running
# container (after one warm-up run that fills the page cache):
#   - wall time of the selfprobe process itself, measured inside the
#     container by bench/maxrss.rs (wait4), median / min / max / stddev;
#   - peak RSS of the selfprobe process alone (ru_maxrss from wait4);
#   - the entries each walk scanned (from the report's inventory), entries/s
#     of the secrets walk, and the probes that reported probe.incomplete;
#   - hyperfine's timing of the whole `podman exec` (engine included), next
#     to `podman exec CTR /bin/true` for the engine's own share.
# Needs root, podman, runc, busybox-static, hyperfine, python3 and rustc.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs=${1:-10}
sizes=${SIZES:-0 1000 10000 100000 1000000}
wsroot=${BENCH_WS:-/var/tmp/selfprobe-bench-ws}
export CONTAINERS_CONF="$PWD/tests/containers.conf"
for c in podman hyperfine python3 rustc; do
    command -v "$c" >/dev/null || { echo "bench: $c is missing (apt-get install -y $c)" >&2; exit 2; }
done
[ -x /bin/busybox ] || { echo "bench: /bin/busybox is missing (apt-get install -y busybox-static)" >&2; exit 2; }

cargo build --release --quiet
bin=target/x86_64-unknown-linux-gnu/release/selfprobe
work=$(mktemp -d)
name="selfprobe-bench-ws-$$"
cleanup() { podman rm -f -t 0 "$name" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT

mkdir -p "$work/ctx" "$work/out"
cp "$bin" "$work/ctx/selfprobe"
cp /bin/busybox "$work/ctx/busybox"
rustc -O -C target-feature=+crt-static --target x86_64-unknown-linux-gnu \
    bench/maxrss.rs -o "$work/ctx/maxrss"
base=$(podman build -q -f Containerfile.test "$work/ctx")
printf 'FROM %s\nCOPY maxrss /usr/local/bin/maxrss\n' "$base" >"$work/Containerfile"
podman build -q -f "$work/Containerfile" -t localhost/selfprobe-bench-ws:latest "$work/ctx" >/dev/null

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for n in $sizes; do
    ws="$wsroot/w$n"
    if [ ! -e "$wsroot/w$n.done" ]; then
        echo "bench: making a workspace of $n files in $ws" >&2
        rm -rf "$ws"
        if [ "$n" -eq 0 ]; then mkdir -p "$ws"; else bench/mkworkspace.sh "$ws" "$n"; fi
        touch "$wsroot/w$n.done"
    fi
    # The clean case: read-only root, no capabilities, unprivileged, no
    # network, only the workspace mounted.
    podman run -d --name "$name" --read-only --cap-drop=all --user 1000:1000 --network none \
        -v "$ws:/workspace" localhost/selfprobe-bench-ws:latest /bin/sleep 3600 >/dev/null
    probe=(podman exec "$name" /usr/local/bin/maxrss /usr/local/bin/selfprobe --format json --workspace /workspace)
    "${probe[@]}" >/dev/null 2>&1 || true # warm the page cache
    for i in $(seq "$runs"); do
        # Exit 1 (findings) is a result here, not an error.
        "${probe[@]}" >"$work/out/$n-$i.json" 2>"$work/out/$n-$i.err" || true
    done
    hyperfine -N -i --warmup 1 --runs "$runs" --export-json "$work/out/$n-hyperfine.json" \
        "podman exec $name /usr/local/bin/selfprobe --format json --workspace /workspace" >/dev/null 2>&1
    if [ "$n" = "$(echo "$sizes" | awk '{print $1}')" ]; then
        hyperfine -N --warmup 1 --runs "$runs" --export-json "$work/out/true-hyperfine.json" \
            "podman exec $name /bin/true" >/dev/null 2>&1
    fi
    podman rm -f -t 0 "$name" >/dev/null
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 bench/summarize.py "$work/out" "$runs" $sizes
size=$(stat -c %s "$bin")
printf 'stripped binary: %d bytes (%.2f MiB)\n' "$size" "$(echo "$size / 1048576" | bc -l)"
printf 'load average (1/5/15 min): before %s, after %s; %s CPUs\n' "$load_before" "$load_after" "$(nproc)"
