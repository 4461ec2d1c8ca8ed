#!/bin/sh
# Writes a ready Dev Container Feature folder to OUTDIR: the files of
# feature/selfprobe/ and the release binary as OUTDIR/selfprobe, which
# install.sh installs. Reference it from .devcontainer/devcontainer.json as
# a local Feature ("./selfprobe-feature": {} with OUTDIR
# .devcontainer/selfprobe-feature), or publish it with `devcontainer
# features publish`.
#
#   feature/assemble.sh OUTDIR
#
# The binary is $SELFPROBE_BIN, else target/x86_64-unknown-linux-gnu/release/selfprobe
# (`cargo build --release`).
set -eu
if [ $# -ne 1 ] || [ -z "$1" ]; then
    echo "usage: feature/assemble.sh OUTDIR" >&2
    exit 2
fi
out=$1
src=$(cd "$(dirname "$0")" && pwd)
bin=${SELFPROBE_BIN:-$src/../target/x86_64-unknown-linux-gnu/release/selfprobe}
if [ ! -x "$bin" ]; then
    echo "feature/assemble.sh: no selfprobe binary at $bin: run cargo build --release, or set SELFPROBE_BIN" >&2
    exit 1
fi
mkdir -p "$out"
cp "$src/selfprobe/devcontainer-feature.json" "$src/selfprobe/install.sh" "$src/selfprobe/README.md" "$out/"
cp "$bin" "$out/selfprobe.new"
chmod 0755 "$out/selfprobe.new" "$out/install.sh"
mv "$out/selfprobe.new" "$out/selfprobe"
echo "$out"
