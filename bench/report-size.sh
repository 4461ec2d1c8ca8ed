#!/usr/bin/env bash
# Benchmark (issue 28, point 10): the peak memory of `selfprobe-host summary`
# and `selfprobe-host diff` against the size of the report they read, up to the
# 16 MiB a report may be (docs/fleet.md, "Limits") and one past it.
#   bench/report-size.sh [SIZES_MIB...]     default: 1 4 8 16 17
# A real signed run of an empty tree is padded to each size with copies of
# its own findings (the shape of a large report: many small objects, the
# costliest for a JSON tree), given a fresh run id, and signed again as a
# DSSE envelope with the run's key (python3's cryptography, Ed25519 over
# DSSE's PAE). Measured, by bench/maxrss.rs (wait4, the command alone):
#   summary --pubkey K DIR   (the envelope verified, the report beside it
#                             compared with the attested one)
#   summary DIR.json         (the bare report)
#   diff A.json B.json       (two reports of that size)
# Needs python3 with cryptography, openssl and rustc.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1 4 8 16 17)
for c in openssl python3 rustc; do
    command -v "$c" >/dev/null || { echo "bench: $c is missing (apt-get install -y $c)" >&2; exit 2; }
done
python3 -c 'import cryptography' 2>/dev/null || { echo "bench: python3 cryptography is missing (apt-get install -y python3-cryptography)" >&2; exit 2; }
cargo build --release --quiet
bin=$PWD/target/x86_64-unknown-linux-gnu/release/selfprobe
host=$PWD/target/x86_64-unknown-linux-gnu/release/selfprobe-host
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rustc -O -C target-feature=+crt-static --target x86_64-unknown-linux-gnu \
    bench/maxrss.rs -o "$work/maxrss"
openssl genpkey -algorithm ed25519 -out "$work/k.pem" 2>/dev/null
"$bin" pubkey --sign-key "$work/k.pem" >"$work/k.pub"
mkdir -p "$work/tree"
"$bin" run --root "$work/tree" --format json -o "$work/seed.json" --attest "$work/seed.intoto.json" \
    --sign-key "$work/k.pem" --fail-on none >/dev/null

measure() { # LABEL ARGS...: the peak RSS in KiB of the command
    local out
    out=$("$work/maxrss" "$@" 2>&1 >/dev/null | grep '^BENCH' || true)
    sed -n 's/.*maxrss_kib=\([0-9]*\).*exit=\([0-9-]*\).*/\1 \2/p' <<<"$out"
}

printf '| report MiB | envelope MiB | summary verified: peak RSS MiB (x report) | summary bare report | diff of two | exits |\n'
printf '|---|---|---|---|---|---|\n'
for mib in "${sizes[@]}"; do
    d="$work/s$mib"
    mkdir -p "$d/dir"
    python3 - "$work" "$d" "$mib" <<'EOF'
import base64, json, sys
from cryptography.hazmat.primitives import serialization
work, d, mib = sys.argv[1], sys.argv[2], int(sys.argv[3])
report = json.load(open(f"{work}/seed.json"))
env = json.load(open(f"{work}/seed.intoto.json"))
statement = json.loads(base64.b64decode(env["payload"]))
findings = report["findings"] or [{"code": "x", "message": "m"}]
want = (mib << 20) - (64 << 10)
def with_n(n):
    r = dict(report)
    r["findings"] = [dict(findings[i % len(findings)], id=f"f-{i}") for i in range(n)]
    return r
base = len(json.dumps(with_n(0), indent=2))
per = (len(json.dumps(with_n(200), indent=2)) - base) / 200
n = max(0, int((want - base) / per) - 1)
out = with_n(n)["findings"]
report["findings"] = out
report["run"]["id"] = f"pad{mib}"
text = json.dumps(report, indent=2) + "\n"
while len(text.encode()) > want and report["findings"]:
    del report["findings"][-max(1, len(report["findings"]) // 200):]
    text = json.dumps(report, indent=2) + "\n"
open(f"{d}/dir/w.json", "w").write(text)
open(f"{d}/b.json", "w").write(text)
statement["predicate"] = report
payload = json.dumps(statement, separators=(",", ":")).encode()
ptype = env["payloadType"].encode()
pae = b"DSSEv1 %d %s %d %s" % (len(ptype), ptype, len(payload), payload)
key = serialization.load_pem_private_key(open(f"{work}/k.pem", "rb").read(), None)
sig = key.sign(pae)
env["payload"] = base64.b64encode(payload).decode()
env["signatures"][0]["sig"] = base64.b64encode(sig).decode()
open(f"{d}/dir/w.intoto.json", "w").write(json.dumps(env))
EOF
    rsize=$(stat -c %s "$d/dir/w.json")
    esize=$(stat -c %s "$d/dir/w.intoto.json")
    read -r sv sve < <(measure "$host" summary --pubkey "$work/k.pub" "$d/dir")
    read -r sb sbe < <(measure "$host" summary "$d/dir/w.json")
    read -r df dfe < <(measure "$host" diff "$d/dir/w.json" "$d/b.json")
    awk -v r="$rsize" -v e="$esize" -v sv="$sv" -v sb="$sb" -v df="$df" -v x="$sve/$sbe/$dfe" 'BEGIN {
        R = r / 1048576
        printf "| %.1f | %.1f | %.0f (%.1fx) | %.0f (%.1fx) | %.0f (%.1fx) | %s |\n",
            R, e / 1048576, sv / 1024, sv / 1024 / R, sb / 1024, sb / 1024 / R, df / 1024, df / 1024 / R, x }'
done
