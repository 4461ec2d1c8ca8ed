#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 60), one after another, and
# prints per target: runs, execs/s, coverage (cov/ft) and the result.
# Exits 1 if any target crashed (the crashing input's path is printed),
# 2 if a tool is missing, 3 if the targets do not build.
#
#   fuzz/run.sh [SECONDS [TARGET...]]
#   SANITIZER=none fuzz/run.sh 60     # when ASan is unavailable
#   JOBS=2 fuzz/run.sh 60             # two targets at a time
#   FUZZ_ARGS='-dict=x' fuzz/run.sh   # more libFuzzer flags (the last one of a name wins)
#
# Not part of `cargo test`: a crash found here becomes an input under
# tests/data/fuzz/<target>/, which tests/it/fuzz_regressions.rs replays.
set -u

secs=${1:-60}
case $secs in
'' | *[!0-9]*)
    echo "usage: fuzz/run.sh [SECONDS [TARGET...]]" >&2
    exit 2
    ;;
esac
sanitizer=${SANITIZER:-address}
jobs=${JOBS:-1}
here=$(cd "$(dirname "$0")" && pwd)
cd "$here" || exit 2

missing=()
command -v cargo >/dev/null 2>&1 || missing+=("cargo (https://rustup.rs)")
cargo fuzz --version >/dev/null 2>&1 || missing+=("cargo-fuzz: cargo install cargo-fuzz")
command -v timeout >/dev/null 2>&1 || missing+=("timeout (coreutils)")
if [ ${#missing[@]} -gt 0 ]; then
    echo "fuzz/run.sh: missing, not installed for you:" >&2
    printf '  %s\n' "${missing[@]}" >&2
    exit 2
fi

# cargo fuzz passes -Z flags (sanitizers, sancov); only a stable toolchain
# is installed here, and RUSTC_BOOTSTRAP lets it accept them. A nightly
# toolchain would not need it, and is not harmed by it.
export RUSTC_BOOTSTRAP=1
# cargo fuzz sets RUSTFLAGS, which replaces the repository's
# target.x86_64-unknown-linux-gnu.rustflags (+crt-static): a static binary
# cannot carry the sanitizer runtime, and the fuzz binaries need not be static.
unset CARGO_ENCODED_RUSTFLAGS

targets=(mountinfo proc_status uid_map cgroup os_release jwt policy_toml env_rules http_head engine_http dns_answer
    inspect_output crosscheck dsse_verify summary_inputs diff_inputs engine_record teardown_inputs
    registry_auth referrers public_key)
if [ $# -gt 1 ]; then
    shift
    targets=("$@")
fi
# shellcheck disable=SC2206 # word splitting of the flags is the point
extra=(${FUZZ_ARGS:-})

mkdir -p logs
# A previous run's figures must not stand in for a target that did not run.
rm -f logs/*.log logs/*.rc
echo "building the targets (sanitizer $sanitizer, debug assertions on)"
triple=$(rustc -vV | sed -n 's/^host: //p')
if ! cargo fuzz build -s "$sanitizer" --target "$triple" >logs/build.log 2>&1; then
    tail -n 30 logs/build.log >&2
    echo "fuzz/run.sh: the targets do not build (full log: fuzz/logs/build.log)" >&2
    exit 3
fi
run_one() {
    local t=$1
    # New inputs go to corpus-grown/ (ignored by git); the committed seeds
    # in corpus/ are read, never written.
    mkdir -p "corpus-grown/$t" "artifacts/$t"
    # The binary itself rather than `cargo fuzz run`, which rebuilds first:
    # the time bound is then the fuzzing's alone. timeout: a hang in the
    # harness (or libFuzzer ignoring -max_total_time) must not stall the run.
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_odr_violation=0} \
        timeout --kill-after=10 $((secs + 60)) \
        "target/$triple/release/$t" -artifact_prefix="$here/artifacts/$t/" \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "${extra[@]}" \
        "corpus-grown/$t" "corpus/$t" >"logs/$t.log" 2>&1
    echo $? >"logs/$t.rc"
}

running=0
for t in "${targets[@]}"; do
    run_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait -n
        running=$((running - 1))
    fi
done
wait

status=0
printf '%-12s %6s %12s %9s %7s %7s  %s\n' target seconds runs execs/s cov ft result
for t in "${targets[@]}"; do
    log="logs/$t.log"
    rc=$(cat "logs/$t.rc" 2>/dev/null || echo '?')
    ran=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n 1)
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    last=$(grep -E '^#[0-9]+' "$log" | grep ' cov: ' | tail -n 1)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
    if [ "$rc" = 0 ]; then
        result=ok
    elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        result="killed by timeout after $((secs + 60)) s (log: fuzz/$log)"
        status=1
    elif [ -n "$crash" ]; then
        case $crash in
        /*) ;;
        *) crash=fuzz/${crash#./} ;;
        esac
        result="CRASH: $crash (log: fuzz/$log)"
        status=1
    else
        result="failed, exit $rc (log: fuzz/$log)"
        status=1
    fi
    printf '%-12s %6s %12s %9s %7s %7s  %s\n' "$t" "${ran:-?}" "${runs:-?}" "${eps:-?}" \
        "${cov:-?}" "${ft:-?}" "$result"
done
exit $status
