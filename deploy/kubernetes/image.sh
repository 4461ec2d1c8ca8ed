#!/bin/sh
# Builds the probe's image for deploy/kubernetes: FROM scratch with the
# static binary at /selfprobe and nothing else, tagged
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
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
cp "$bin" "$ctx/selfprobe"
chmod 0755 "$ctx/selfprobe"
cat >"$ctx/Containerfile" <<'CF'
FROM scratch
COPY selfprobe /selfprobe
USER 65532:65532
ENTRYPOINT ["/selfprobe"]
CF
"$engine" build -q -t "$tag" -f "$ctx/Containerfile" "$ctx" >/dev/null
echo "$tag"
