#!/usr/bin/env bash
# The build side of the test loop (issue 11), on a clean clone of a commit
# (default HEAD) in a temporary directory, so nothing is reused:
#
#   1. cargo build --release --bin selfprobe   the shipped binary
#   2. cargo test --no-run                     everything `cargo test` builds
#   3. edit-to-test: a line appended to one renderer (src/report/text.rs),
#      then `cargo test --test it -- cli::list_checks` to its first result
#      (the build and a runnable test), three times
#
#   bench/test-build.sh [COMMIT] [--keep]
#
# Prints each step's wall and CPU seconds. Needs only cargo and the crates
# cargo has fetched (the registry); nothing runs as root, nothing is
# contacted but the registry. --keep leaves the clone (its path is printed).
set -euo pipefail
repo=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
rev=HEAD keep=0
for a in "$@"; do
    case $a in
        --keep) keep=1 ;;
        -*) echo "test-build: unknown option $a" >&2; exit 2 ;;
        *) rev=$a ;;
    esac
done
commit=$(git -C "$repo" rev-parse --verify "$rev^{commit}")
dir=$(mktemp -d /tmp/selfprobe-test-build.XXXXXX)
((keep)) || trap 'rm -rf "$dir"' EXIT
git clone -q "$repo" "$dir/selfprobe"
git -C "$dir/selfprobe" checkout -q "$commit"
# The shared reference the README points at sits beside the checkout.
[ -e "$repo/../shared" ] && ln -s "$(cd "$repo/../shared" && pwd)" "$dir/shared"
cd "$dir/selfprobe"
echo "test-build: $(git log -1 --format='%h %s' | cut -c1-80)"
echo "test-build: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

step() {
    local what=$1
    shift
    /usr/bin/time -o "$dir/time" -f '%e %U %S' "$@" >"$dir/step.log" 2>&1 || {
        echo "test-build: $what failed:" >&2
        tail -n 30 "$dir/step.log" >&2
        exit 1
    }
    read -r wall user sys <"$dir/time"
    printf '%-34s %7.1f s wall %7.1f s CPU\n' "$what" "$wall" "$(echo "$user + $sys" | bc)"
}

step "release build (shipped)" cargo build --release --bin selfprobe
step "cargo test --no-run (clean)" cargo test --no-run
step "first test run (no edit)" cargo test --test it -- cli::list_checks
for i in 1 2 3; do
    echo "// test-build edit $i" >>src/report/text.rs
    step "edit text.rs -> test result ($i)" cargo test --test it -- cli::list_checks
done
((keep)) && echo "test-build: kept $dir"
