#!/bin/sh
# Builds the probe's image for deploy/kubernetes: FROM scratch with the
# static probe at /selfprobe (what `selfprobe install` copies into the
# workload's emptyDir) and the host tool at /selfprobe-host (for the
# attest-push container beside the workload; never copied into it), tagged
# localhost/selfprobe:latest, with podman (preferred) or Docker.
#
#   deploy/kubernetes/image.sh [podman|docker]
#
# SELFPROBE_BIN: the binary (default: target/x86_64-unknown-linux-gnu/release/selfprobe,
# from `cargo build --release`). SELFPROBE_IMAGE: another tag. Push it to
# your registry (podman push localhost/selfprobe:latest REGISTRY/selfprobe)
# and name that in pod.yaml's initContainer.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${SELFPROBE_BIN:-$here/../../target/x86_64-unknown-linux-gnu/release/selfprobe}
# SELFPROBE_HOST_BIN: the host tool (default: selfprobe-host beside the probe).
host_bin=${SELFPROBE_HOST_BIN:-$(dirname "$bin")/selfprobe-host}
tag=${SELFPROBE_IMAGE:-localhost/selfprobe:latest}
engine=${1:-}
if [ -z "$engine" ]; then
    if command -v podman >/dev/null 2>&1; then engine=podman
    elif command -v docker >/dev/null 2>&1; then engine=docker
    else
        echo "deploy/kubernetes/image.sh: neither podman nor docker found" >&2
        exit 1
    fi
fi
case "$engine" in
    podman | docker) ;;
    *) echo "usage: deploy/kubernetes/image.sh [podman|docker]" >&2; exit 2 ;;
esac
if [ ! -x "$bin" ]; then
    echo "deploy/kubernetes/image.sh: no selfprobe binary at $bin: run cargo build --release, or set SELFPROBE_BIN" >&2
    exit 1
fi
if [ ! -x "$host_bin" ]; then
    echo "deploy/kubernetes/image.sh: no selfprobe-host binary at $host_bin: run cargo build --release, or set SELFPROBE_HOST_BIN" >&2
    exit 1
fi
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
cp "$bin" "$ctx/selfprobe"
cp "$host_bin" "$ctx/selfprobe-host"
chmod 0755 "$ctx/selfprobe" "$ctx/selfprobe-host"
cat >"$ctx/Containerfile" <<'CF'
FROM scratch
COPY selfprobe selfprobe-host /
USER 65532:65532
ENTRYPOINT ["/selfprobe"]
CF
"$engine" build -q -t "$tag" -f "$ctx/Containerfile" "$ctx" >/dev/null
echo "$tag"
