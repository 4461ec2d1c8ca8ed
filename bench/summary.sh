#!/usr/bin/env bash
# Benchmark (issue 22): `selfprobe-host summary` of 1,000 signed envelopes with
# verification (signature, nonce, binary), and `selfprobe-host diff` of two
# reports of the 1M-entry workspace. Goal: the 1,000 in under 1 s.
#   bench/summary.sh [RUNS]          RUNS per case (default 10)
#   BENCH_WS=DIR: where the 1M workspace is made and kept (default
#                 /var/tmp/selfprobe-bench-ws, shared with bench/workspaces.sh)
#   FLEET=N: how many workspaces (default 1000)
# The envelopes: one real signed run in the clean container of
# bench/workspaces.sh (FROM scratch, --read-only, --cap-drop=all, --user
# 1000:1000, --network none), its envelope and report copied into FLEET
# workspaces of an inspection directory (docs/inspection-directory.md: NAME.json,
# NAME.intoto.json, nonces, signing.pub). Each copy is read, parsed and
# verified on its own, so the work is that of FLEET distinct ones.
# Wall time and peak RSS of the selfprobe process alone, by bench/maxrss.rs
# (wait4); the page cache is warm (one run before the measured ones).
# Needs root, podman, runc, busybox-static, openssl, python3 and rustc.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs=${1:-10}
fleet=${FLEET:-1000}
wsroot=${BENCH_WS:-/var/tmp/selfprobe-bench-ws}
export CONTAINERS_CONF="$PWD/tests/containers.conf"
for c in podman openssl python3 rustc; do
    command -v "$c" >/dev/null || { echo "bench: $c is missing (apt-get install -y $c)" >&2; exit 2; }
done
[ -x /bin/busybox ] || { echo "bench: /bin/busybox is missing (apt-get install -y busybox-static)" >&2; exit 2; }

cargo build --release --quiet
bin=$PWD/target/x86_64-unknown-linux-gnu/release/selfprobe
host=$PWD/target/x86_64-unknown-linux-gnu/release/selfprobe-host
work=$(mktemp -d)
tag="localhost/selfprobe-bench-summary:$$"
cleanup() { podman rmi -f "$tag" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT

mkdir -p "$work/ctx" "$work/key" "$work/out" "$work/fleet"
rustc -O -C target-feature=+crt-static --target x86_64-unknown-linux-gnu \
    bench/maxrss.rs -o "$work/maxrss"
cp "$bin" "$work/ctx/selfprobe"
cp /bin/busybox "$work/ctx/busybox"
podman build -q -f Containerfile.test -t "$tag" "$work/ctx" >/dev/null
openssl genpkey -algorithm ed25519 -out "$work/key/k.pem" 2>/dev/null
chmod 0755 "$work/key" && chmod 0644 "$work/key/k.pem" && chmod 0777 "$work/out"
"$bin" pubkey --sign-key "$work/key/k.pem" >"$work/fleet/signing.pub"
sha=$(sha256sum "$bin" | cut -d' ' -f1)

# One signed run of the clean container, workspace: a small checkout.
mkdir -p "$work/ws" && printf '{"name":"w"}\n' >"$work/ws/package.json" && printf '{}\n' >"$work/ws/package-lock.json"
nonce=$(openssl rand -hex 16)
podman run --rm --read-only --cap-drop=all --user 1000:1000 --network none \
    -v "$work/ws:/workspace:ro" -v "$work/key:/key:ro" -v "$work/out:/out" "$tag" \
    /usr/local/bin/selfprobe --format json --workspace /workspace \
    --attest /out/e.intoto.json --sign-key /key/k.pem --nonce "$nonce" >"$work/out/r.json" || true
: >"$work/fleet/nonces"
for ((i = 0; i < fleet; i++)); do
    n=$(printf 'ws%04d' "$i")
    cp "$work/out/e.intoto.json" "$work/fleet/$n.intoto.json"
    cp "$work/out/r.json" "$work/fleet/$n.json"
    echo "$n $nonce" >>"$work/fleet/nonces"
done
env_bytes=$(stat -c %s "$work/out/e.intoto.json")
rep_bytes=$(stat -c %s "$work/out/r.json")

measure() { # NAME RUNS CMD... : prints "NAME ms... | kib..." lines for summarize
    local name=$1 n=$2
    shift 2
    "$work/maxrss" "$@" >/dev/null 2>&1 || true # warm
    for ((r = 0; r < n; r++)); do
        "$work/maxrss" "$@" 2>&1 >/dev/null | grep '^BENCH' | sed "s/^/$name /" || true
    done
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
{
    for fmt in text json sarif junit html; do
        measure "summary-$fleet-$fmt" "$runs" "$host" summary --pubkey "$work/fleet/signing.pub" \
            --nonces "$work/fleet/nonces" --binary-sha256 "$sha" --format "$fmt" "$work/fleet"
    done
    # Envelopes alone (no report file beside each to compare with).
    mkdir -p "$work/envs" && cp "$work/fleet"/*.intoto.json "$work/envs/"
    measure "summary-$fleet-envelopes-only" "$runs" "$host" summary --pubkey "$work/fleet/signing.pub" \
        --nonces "$work/fleet/nonces" --binary-sha256 "$sha" "$work/envs"
} >"$work/summary.txt"

# diff: two runs of the clean container on the 1M-entry workspace.
ws="$wsroot/w1000000"
if [ ! -e "$wsroot/w1000000.done" ]; then
    echo "bench: making a workspace of 1000000 files in $ws" >&2
    rm -rf "$ws"
    bench/mkworkspace.sh "$ws" 1000000
    touch "$wsroot/w1000000.done"
fi
for side in a b; do
    podman run --rm --read-only --cap-drop=all --user 1000:1000 --network none \
        -v "$ws:/workspace:ro" "$tag" /usr/local/bin/selfprobe --format json \
        --workspace /workspace >"$work/$side.json" || true
done
big_bytes=$(stat -c %s "$work/a.json")
{
    measure diff-1M-text "$runs" "$host" diff "$work/a.json" "$work/b.json"
    measure diff-1M-json "$runs" "$host" diff --format json "$work/a.json" "$work/b.json"
} >>"$work/summary.txt"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$work/summary.txt" <<'EOF'
import re, statistics, sys
cases = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\S+) BENCH wall_us=(\d+) maxrss_kib=(\d+) user_us=(\d+) sys_us=(\d+)", line)
    if m:
        cases.setdefault(m[1], []).append((int(m[2]) / 1000, int(m[3]) / 1024, (int(m[4]) + int(m[5])) / 1000))
print("| case | runs | median ms | min | max | CPU ms (user+sys, median) | peak RSS MiB |")
print("|---|---|---|---|---|---|---|")
for name, v in cases.items():
    ms = [x for x, _, _ in v]
    cpu = [c for _, _, c in v]
    print(f"| {name} | {len(v)} | {statistics.median(ms):.1f} | {min(ms):.1f} | {max(ms):.1f} | {statistics.median(cpu):.1f} | {max(r for _, r, _ in v):.1f} |")
EOF
printf 'envelope: %d bytes, report: %d bytes (x %d workspaces); 1M-workspace report: %d bytes\n' \
    "$env_bytes" "$rep_bytes" "$fleet" "$big_bytes"
printf 'load average (1/5/15 min): before %s, after %s; %s CPUs\n' "$load_before" "$load_after" "$(nproc)"
