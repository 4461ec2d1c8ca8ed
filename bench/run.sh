#!/usr/bin/env bash
# Benchmark: a full selfprobe run (no network) inside the clean container of
# the acceptance tests, and the stripped binary's size.
#   bench/run.sh [RUNS]
# Prints three figures:
#   - selfprobe's own wall time per run, read from the report (run.duration_us),
#     median and spread over RUNS `podman exec` calls in one running container;
#   - hyperfine's timing of the whole `podman exec` (engine overhead included);
#   - the stripped release binary's size.
# Needs root, podman, runc, busybox-static and hyperfine (apt).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs=${1:-50}
export CONTAINERS_CONF="$PWD/tests/containers.conf"
for c in podman hyperfine; do
    command -v "$c" >/dev/null || { echo "bench: $c is missing (apt-get install -y $c)" >&2; exit 2; }
done

cargo build --release --quiet
bin=target/x86_64-unknown-linux-gnu/release/selfprobe
ctx=$(mktemp -d)
ws=$(mktemp -d)
name="selfprobe-bench-$$"
cleanup() { podman rm -f "$name" >/dev/null 2>&1 || true; rm -rf "$ctx" "$ws"; }
trap cleanup EXIT
cp "$bin" "$ctx/selfprobe"
cp /bin/busybox "$ctx/busybox"
podman build -q -f Containerfile.test -t localhost/selfprobe-bench:latest "$ctx" >/dev/null

# The clean case: read-only root, no capabilities, unprivileged, no network,
# only the workspace mounted.
podman run -d --name "$name" --read-only --cap-drop=all --user 1000:1000 --network none \
    -v "$ws:/workspace" localhost/selfprobe-bench:latest /bin/sleep 3600 >/dev/null

probe=(podman exec "$name" /usr/local/bin/selfprobe --format json --workspace /workspace)
"${probe[@]}" >/dev/null  # warm the page cache

durations=()
for _ in $(seq "$runs"); do
    # Exit 1 (findings) is a result here, not an error.
    out=$("${probe[@]}" || true)
    d=$(grep -m1 '"duration_us"' <<<"$out" | tr -dc '0-9')
    durations+=("$d")
done
printf '%s\n' "${durations[@]}" | sort -n | awk -v n="$runs" '
    { v[NR] = $1 }
    END {
        med = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
        printf "selfprobe in the clean container (%d runs): median %.2f ms, min %.2f ms, max %.2f ms, p90 %.2f ms\n",
            n, med / 1000, v[1] / 1000, v[n] / 1000, v[int(n * 0.9)] / 1000
    }'

hyperfine --warmup 3 --runs "$runs" -N --export-json "$ctx/hyperfine.json" \
    "podman exec $name /usr/local/bin/selfprobe --format json --workspace /workspace" \
    "podman exec $name /bin/true" | sed -n '/Benchmark/p;/Time/p;/Range/p'

size=$(stat -c %s "$bin")
printf 'stripped binary: %d bytes (%.2f MiB)\n' "$size" "$(echo "$size / 1048576" | bc -l)"
