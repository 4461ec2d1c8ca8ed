#!/usr/bin/env bash
# Creates a workspace of N files shaped like a real monorepo checkout, so the
# benchmark measures the walks on what they meet, not on one flat directory
# (every walk would prune or truncate that the same way):
#   packages/pNNNN/src/mNN/fNN.ts   90%  source: 100 files per leaf directory,
#                                        20 leaf directories per package,
#                                        leaves at depth 4 under the workspace
#   packages/pNNNN/package.json          one per package
#   node_modules/libNNNN/dist/*.js   7%  dependencies (pruned by the walks)
#   .git/objects/XX/<38 hex>         3%  git objects in 256 fan-out dirs (pruned)
#   package.json, package-lock.json, Containerfile, README.md, logs/build.log
# Empty files: the walks read names and types, not contents.
#   bench/mkworkspace.sh DIR N
set -euo pipefail
dir=$1
n=$2
mkdir -p "$dir"
cd "$dir"
src=$((n * 90 / 100))
deps=$((n * 7 / 100))
git=$((n - src - deps))

# One `touch` per directory of up to 100 names keeps this to a few seconds
# for a million files.
fill() { # DIR PREFIX SUFFIX COUNT
    local d=$1 p=$2 s=$3 c=$4 names=() i
    mkdir -p "$d"
    for ((i = 0; i < c; i++)); do names+=("$d/$p$i$s"); done
    touch "${names[@]}"
}

printf '{"name":"bench","private":true}\n' >package.json
printf '{"lockfileVersion":3}\n' >package-lock.json
printf 'FROM scratch\n' >Containerfile
printf '# bench\n' >README.md
mkdir -p logs && : >logs/build.log

left=$src
pkg=0
while ((left > 0)); do
    pd=$(printf 'packages/p%04d' "$pkg")
    mkdir -p "$pd/src"
    printf '{"name":"p%d"}\n' "$pkg" >"$pd/package.json"
    for ((m = 0; m < 20 && left > 0; m++)); do
        c=$((left < 100 ? left : 100))
        fill "$pd/src/m$m" f .ts "$c"
        left=$((left - c))
    done
    pkg=$((pkg + 1))
done

left=$deps
lib=0
while ((left > 0)); do
    c=$((left < 100 ? left : 100))
    fill "$(printf 'node_modules/lib%04d/dist' "$lib")" f .js "$c"
    left=$((left - c))
    lib=$((lib + 1))
done

left=$git
fan=0
while ((left > 0)); do
    c=$((left < 100 ? left : 100))
    fill "$(printf '.git/objects/%02x' $((fan % 256)))" "$(printf '%08x' "$fan")" 0000000000000000000000000000000 "$c"
    left=$((left - c))
    fan=$((fan + 1))
done
