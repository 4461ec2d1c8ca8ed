#!/usr/bin/env bash
# Issue 11's "the refactor changes no behaviour": the JSON reports of every
# test run, captured in two trees and compared.
#
#   bench/compare-behaviour.sh [options] <base-commit> [<new-commit>] [-- <cargo test args>]
#
# Each commit (the new one defaults to HEAD) is checked out in a temporary
# worktree, one after the other, at the same path name (so what a test reads
# of its own checkout, the git dir and worktree name, is alike); the report
# dump hook (the commits whose subject starts with "report dump: " in
# <base>..HEAD of this checkout, or --hook) is cherry-picked and committed
# there unless the tree has it already. In each, `CI=true
# SELFPROBE_REPORT_DUMP=DIR cargo test <args>` writes every report to DIR
# (tests/it/common/dump.rs); bench/compare-reports.py compares the dirs.
#
# Some tests give different reports with no change at all (races between
# processes, the machine's own state, deadlines under load): the base is
# captured --base-runs times (default 2), what differs between the base
# captures is listed as noisy, and the comparison of base and new calls a
# file `noisy`, not `differs`, when it differs only where the base captures
# did.
#
# Options:
#   --self-check      no new tree: compare the base captures with each other
#   --here            the new tree is this checkout as it is, uncommitted
#                     edits included (reports of runs that read their own
#                     checkout's git state then differ: a branch, not a
#                     detached HEAD; the edits)
#   --base-runs N     base captures (default 2; 3 finds more noise)
#   --base-dump DIR   reuse an earlier base capture instead of running one
#                     (repeatable; the first is compared, the others are
#                     noise baselines)
#   --hook REV        a hook commit to cherry-pick (repeatable)
#   --expect FILE     the differences the change makes on purpose, for
#                     compare-reports.py --expect (base against new only)
#   --out DIR         where the dumps and logs go (default: a new /tmp dir;
#                     kept at the end)
#   --target-dir DIR  cargo's target dir for the temporary worktrees
#                     (default: this checkout's target/, so dependencies are
#                     not built again; the crate itself is rebuilt per tree)
# With cargo test args (e.g. `-- --test it -- containers:: engines::`; the
# second `--` is cargo's, before the test filters) only the tests the new
# capture holds are compared.
#
# Exit: 0 when every report is the same (or noisy), 1 when one differs or is
# missing, 2 on a usage or setup error.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel)
compare="$here/compare-reports.py"

self_check=0 in_place=0 base_runs=2 out="" target="$repo/target"
hooks=() base_dumps=() cargo_args=() pos=() expect=()
while (($#)); do
    case $1 in
        --self-check) self_check=1 ;;
        --here) in_place=1 ;;
        --base-runs) base_runs=$2; shift ;;
        --base-dump) base_dumps+=("$(cd "$2" && pwd)"); shift ;;
        --hook) hooks+=("$2"); shift ;;
        --expect) expect=(--expect "$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"); shift ;;
        --out) out=$2; shift ;;
        --target-dir) target=$2; shift ;;
        --) shift; cargo_args=("$@"); break ;;
        -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) echo "compare-behaviour: unknown option $1" >&2; exit 2 ;;
        *) pos+=("$1") ;;
    esac
    shift
done
((${#pos[@]} >= 1 && ${#pos[@]} <= 2)) || { echo "usage: $0 [options] <base-commit> [<new-commit>] [-- <cargo test args>]" >&2; exit 2; }
base=$(git -C "$repo" rev-parse --verify "${pos[0]}^{commit}")
new=$(git -C "$repo" rev-parse --verify "${pos[1]:-HEAD}^{commit}")
if ((self_check)) && ((${#base_dumps[@]} < 2 && base_runs < 2)); then
    echo "compare-behaviour: --self-check needs two base captures" >&2; exit 2
fi
if ((${#hooks[@]} == 0)); then
    mapfile -t hooks < <(git -C "$repo" log --reverse --format=%H --grep='^report dump: ' "$base..HEAD")
fi
if ((${#hooks[@]} == 0)); then
    echo "compare-behaviour: no 'report dump: ' commit in $base..HEAD; name it with --hook" >&2; exit 2
fi

out=${out:-$(mktemp -d /tmp/spcmp.XXXXXX)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
# The temporary worktrees are checkouts like any other: a uid the tests
# drop to must be able to walk to them, as to the checkout they stand for.
chmod 755 "$out"
tree_dir="$out/tree/selfprobe"
drop_tree() {
    git -C "$repo" worktree remove --force "$tree_dir" >/dev/null 2>&1 || true
    git -C "$repo" worktree prune
}
trap drop_tree EXIT
started=$SECONDS

# make_tree COMMIT LABEL: the worktree at $tree_dir, with the hook.
make_tree() {
    drop_tree
    mkdir -p "$out/tree"
    git -C "$repo" worktree add -q --detach "$tree_dir" "$1"
    if ! grep -qs SELFPROBE_REPORT_DUMP "$tree_dir/tests/it/common/dump.rs"; then
        # Committed, so the tree is as clean as a checkout of a commit with
        # the hook would be (tests read their checkout's git status).
        if ! git -C "$tree_dir" -c user.name=compare-behaviour -c user.email=compare-behaviour@localhost \
            cherry-pick "${hooks[@]}" >"$out/$2-hook.log" 2>&1; then
            echo "compare-behaviour: the hook (${hooks[*]}) does not apply to $1:" >&2
            cat "$out/$2-hook.log" >&2
            exit 2
        fi
    fi
    # The Python verifiers some tests run (.ci/run makes the venv; ignored
    # by git, so not in a new worktree).
    if [ -d "$repo/.ci/venv" ]; then ln -s "$repo/.ci/venv" "$tree_dir/.ci/venv"; fi
}

# capture LABEL DIR [TARGET]: the tests with the dump on.
capture() {
    local label=$1 dir=$2 t0=$SECONDS rc=0 n
    rm -rf "${out:?}/$label"
    mkdir -p "$out/$label"
    echo "$dir" >"$out/$label/.checkout"
    echo "${3:-$dir/target}" >"$out/$label/.target"
    echo "== $label: CI=true cargo test ${cargo_args[*]} in $dir ($(git -C "$dir" log -1 --format='%h %s' | cut -c1-60))" >&2
    (
        cd "$dir"
        if [ -n "${3:-}" ]; then export CARGO_TARGET_DIR=$3; fi
        CI=true SELFPROBE_REPORT_DUMP="$out/$label" cargo test "${cargo_args[@]}"
    ) >"$out/$label.log" 2>&1 || rc=$?
    n=$(find "$out/$label" -name '*.json' | wc -l)
    echo "   exit $rc, $n reports, $((SECONDS - t0)) s (log: $out/$label.log)" >&2
    grep -E '^test .* FAILED$' "$out/$label.log" | sed 's/^/   /' >&2 || true
    if ((n == 0)); then
        echo "compare-behaviour: $label wrote no report; the end of its log:" >&2
        tail -n 20 "$out/$label.log" >&2
        exit 2
    fi
}

if ((${#base_dumps[@]})); then
    bases=("${base_dumps[@]}")
else
    make_tree "$base" base
    bases=()
    for i in $(seq "$base_runs"); do
        capture "base$i" "$tree_dir" "$target"
        bases+=("$out/base$i")
    done
fi

subset=()
if ((${#cargo_args[@]})); then subset=(--names-from-b); fi
noise=()
for b in "${bases[@]:1}"; do noise+=(--noise "$b"); done

if ((self_check)); then
    echo "== self-check: ${bases[0]} against ${bases[1]}"
    rc=0
    python3 "$compare" "${bases[0]}" "${bases[1]}" || rc=$?
else
    if ((in_place)); then
        grep -qs SELFPROBE_REPORT_DUMP "$repo/tests/it/common/dump.rs" \
            || { echo "compare-behaviour: $repo has no report dump hook; cherry-pick ${hooks[*]}" >&2; exit 2; }
        edits=$(git -C "$repo" status --porcelain --untracked-files=no | awk '{print $2}' | tr '\n' ' ')
        [ -n "$edits" ] && echo "   (new: $repo with uncommitted edits: $edits)" >&2
        capture new "$repo"
    else
        make_tree "$new" new
        capture new "$tree_dir" "$target"
    fi
    if ((${#bases[@]} >= 2)); then
        echo "== noisy: what differs between the base captures"
        for b in "${bases[@]:1}"; do
            python3 "$compare" "${subset[@]}" "${bases[0]}" "$b" | grep -vE '^(same|    )' || true
        done
    fi
    echo "== base ($(git -C "$repo" log -1 --format='%h' "$base")) against new ($( ((in_place)) && echo "$repo as it is" || git -C "$repo" log -1 --format='%h' "$new"))"
    rc=0
    python3 "$compare" "${subset[@]}" "${noise[@]}" "${expect[@]}" "${bases[0]}" "$out/new" || rc=$?
fi
echo "== $((SECONDS - started)) s; dumps and logs in $out"
exit "$rc"
