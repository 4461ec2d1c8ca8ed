#!/bin/sh
# Captures the engines' own records of containers made for the purpose, as
# `docker inspect` and `podman inspect` print them, for the record reader's
# unit tests (src/outside/record.rs). Run as root on a machine with the
# engines of .ci/engines; see SOURCE. Every container, volume and socket
# made here is named selfprobe-capture-* and removed at the end.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
export CONTAINERS_CONF="$here/../../containers.conf"
dimg=${DIMG:-localhost/selfprobe-test-docker:latest}
pimg=${PIMG:-localhost/selfprobe-test:latest}
tmp=$(mktemp -d /tmp/selfprobe-capture.XXXXXX)
mkdir "$tmp/ws"
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$tmp/podman.sock"
cleanup() {
  for c in clean b volumes gvisor privileged; do docker rm -f -v "selfprobe-capture-$c" >/dev/null 2>&1 || true; done
  for c in clean-ro b volumes; do podman rm -f -v -t 0 "selfprobe-capture-$c" >/dev/null 2>&1 || true; done
  docker volume rm -f selfprobe-capture-named >/dev/null 2>&1 || true
  podman volume rm -f selfprobe-capture-named >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
norm() { python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin), indent=1, sort_keys=True))'; }

docker run -d --name selfprobe-capture-clean --cap-drop=all --network none -v "$tmp/ws:/workspace" "$dimg" /bin/sleep 60 >/dev/null
docker run -d --name selfprobe-capture-b --cap-add SYS_ADMIN --pid host --network none -v /var/run/docker.sock:/var/run/docker.sock "$dimg" /bin/sleep 60 >/dev/null
docker run -d --name selfprobe-capture-volumes --network none -v /data -v selfprobe-capture-named:/cache \
  --memory 64m --pids-limit 100 --restart on-failure:3 --read-only --tmpfs /tmp --tmpfs /run:exec \
  --security-opt no-new-privileges --user 1000:1000 --ipc host --uts host --device /dev/fuse \
  --label devcontainer.local_folder="$tmp/ws" "$dimg" /bin/sleep 60 >/dev/null
docker run -d --name selfprobe-capture-gvisor --runtime runsc --cap-drop=all --network none -v "$tmp/ws:/workspace:ro" "$dimg" /bin/sleep 60 >/dev/null
# --privileged cannot start here (this machine lacks CAP_SYS_RESOURCE): its record is enough.
docker create --name selfprobe-capture-privileged --privileged --network host --security-opt seccomp=unconfined "$dimg" /bin/sleep 60 >/dev/null
for c in clean b volumes gvisor privileged; do docker inspect "selfprobe-capture-$c" | norm > "$here/docker-$c.json"; done
docker info --format '{{json .}}' | norm > "$here/docker-info.json"
docker image inspect "$dimg" | norm > "$here/docker-image.json"
docker volume inspect selfprobe-capture-named | norm > "$here/docker-volume.json"

podman run -d --name selfprobe-capture-clean-ro --read-only --cap-drop=all --network none -v "$tmp/ws:/workspace" "$pimg" /bin/sleep 60 >/dev/null
podman run -d --name selfprobe-capture-b --cap-add SYS_ADMIN --pid host --network none -v "$tmp/podman.sock:/run/podman/podman.sock" "$pimg" /bin/sleep 60 >/dev/null
podman run -d --name selfprobe-capture-volumes --network none -v /data -v selfprobe-capture-named:/cache \
  --memory 64m --pids-limit 100 --restart on-failure:3 --read-only --tmpfs /scratch \
  --security-opt no-new-privileges --user 1000:1000 --ipc host --uts host --device /dev/fuse "$pimg" /bin/sleep 60 >/dev/null
for c in clean-ro b volumes; do podman inspect "selfprobe-capture-$c" | norm > "$here/podman-$c.json"; done
podman info --format json | norm > "$here/podman-info.json"
podman image inspect "$pimg" | norm > "$here/podman-image.json"
podman volume inspect selfprobe-capture-named | norm > "$here/podman-volume.json"

# Rootless podman, as the user .ci/engines makes, with a storage of its own.
u=$(id -u selfprobe-rootless)
rl=$(mktemp -d /tmp/selfprobe-capture-rl.XXXXXX); chmod 755 "$rl"
mkdir "$rl/storage" "$rl/run" "$rl/ws" "$rl/tree"; chown "$u:$u" "$rl/storage" "$rl/run" "$rl/ws"
cp "$CONTAINERS_CONF" "$rl/containers.conf"; chmod 644 "$rl/containers.conf"
printf '[storage]\ndriver = "overlay"\ngraphroot = "%s/storage"\nrunroot = "%s/run"\n' "$rl" "$rl" > "$rl/storage.conf"
mkdir -p "$rl/tree/bin" "$rl/tree/tmp" "$rl/tree/etc" "$rl/tree/workspace"
cp /bin/busybox "$rl/tree/bin/"; ln -s busybox "$rl/tree/bin/sleep"
tar -C "$rl/tree" -cf "$rl/img.tar" .; chmod 644 "$rl/img.tar" "$rl/storage.conf"
rlp() { runuser -u selfprobe-rootless -- env -i XDG_RUNTIME_DIR="/run/user/$u" HOME=/home/selfprobe-rootless \
  PATH=/usr/sbin:/usr/bin:/sbin:/bin CONTAINERS_CONF="$rl/containers.conf" CONTAINERS_STORAGE_CONF="$rl/storage.conf" podman "$@"; }
rimg=$(rlp import -q "$rl/img.tar")
rlp run -d --name selfprobe-capture-rl --read-only --cap-drop=all --user 1000:1000 --network none -v "$rl/ws:/workspace" "$rimg" /bin/sleep 60 >/dev/null
rlp inspect selfprobe-capture-rl | norm > "$here/podman-rootless-clean-ro.json"
rlp info --format json | norm > "$here/podman-rootless-info.json"
rlp rm -f -t 0 selfprobe-capture-rl >/dev/null
rlp rmi -f "$rimg" >/dev/null 2>&1 || true
rm -rf "$rl"
echo "captured into $here"
