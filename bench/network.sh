#!/usr/bin/env bash
# Benchmark: the network phase with N deny destinations that all time out at 1 s
# (an iptables DROP rule in a network namespace of our own: nothing leaves it).
#   bench/network.sh [RUNS] [DESTINATIONS]
# Prints, per run, the network phase's wall time read from the report
# (inventory.network.duration_ms), then the median. Needs root, unshare,
# iptables and python3.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs=${1:-5}
n=${2:-100}
((n >= 1 && n <= 1000)) || { echo "bench: 1..1000 destinations" >&2; exit 2; }
cargo build --release --quiet
bin=$PWD/target/x86_64-unknown-linux-gnu/release/selfprobe
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/root/etc"
{
    echo '[network]'
    echo 'timeout = "1s"'
    echo 'deny = ['
    for ((p = 20000; p < 20000 + n; p++)); do echo "  \"tcp://127.0.0.1:$p\","; done
    echo ']'
} >"$work/p.toml"
last=$((20000 + n - 1))
for ((i = 1; i <= runs; i++)); do
    unshare -n sh -c "ip link set lo up &&
        iptables -A INPUT -p tcp --dport 20000:$last -j DROP &&
        exec '$bin' --root '$work/root' --policy '$work/p.toml' --format json --net-loopback-only" \
        >"$work/r$i.json" || true
done
python3 - "$work" "$runs" "$n" <<'PY'
import json, statistics, sys
work, runs, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
phases = []
for i in range(1, runs + 1):
    r = json.load(open(f"{work}/r{i}.json"))
    net = r["inventory"]["network"]
    outcomes = {d["outcome"] for d in net["destinations"]}
    phases.append(net["duration_ms"])
    print(f"run {i}: {len(net['destinations'])} destinations, outcomes {sorted(outcomes)}, phase {net['duration_ms']:.1f} ms")
print(f"network phase, {n} deny destinations timing out at 1 s: median {statistics.median(phases):.1f} ms, max {max(phases):.1f} ms over {runs} runs")
PY
