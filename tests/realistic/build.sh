#!/usr/bin/env bash
# The realistic image of tests/it/containers_realistic.rs and bench/realistic.sh:
# Debian bookworm with python3, nodejs, npm, git, build-essential and
# libpython3.11-testsuite (CPython's own test suite, which ships private
# keys), and a developer's home holding a pyenv-style tree with those test
# keys and a moto-like site-packages ca.key: package data that is not a
# credential of the workspace.
#
#   tests/realistic/build.sh            prints the image's tag; builds it first
#                                        when podman does not have it yet
# Made with debootstrap (Debian's mirror, a package registry), apt in the
# chroot, then `podman import`. Takes a few minutes once; later calls find the
# tag and return at once. Bump VERSION when the recipe changes.
# Needs root, debootstrap and podman.
set -euo pipefail
VERSION=1
TAG="localhost/selfprobe-realistic:bookworm-v$VERSION"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/containers.conf}"

if podman image exists "$TAG"; then
    echo "$TAG"
    exit 0
fi
for c in debootstrap podman; do
    command -v "$c" >/dev/null || { echo "realistic image: $c is missing (apt-get install -y $c)" >&2; exit 2; }
done
# One builder at a time: two test binaries (or a test and the benchmark)
# asking at once wait for the first build instead of running two.
exec 9>/tmp/selfprobe-realistic-build.lock
flock 9
if podman image exists "$TAG"; then
    echo "$TAG"
    exit 0
fi

root=$(mktemp -d /var/tmp/selfprobe-realistic.XXXXXX)
cleanup() {
    for m in proc sys dev/pts dev; do umount "$root/$m" 2>/dev/null || true; done
    rm -rf --one-file-system "$root"
}
trap cleanup EXIT
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
echo "realistic image: debootstrap bookworm into $root" >&2
debootstrap --variant=minbase bookworm "$root" "$mirror" >&2
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
export DEBIAN_FRONTEND=noninteractive
chroot "$root" apt-get update >&2
chroot "$root" apt-get install -y --no-install-recommends \
    python3 python3-pip nodejs npm git build-essential libpython3.11-testsuite ca-certificates >&2
chroot "$root" apt-get clean
rm -rf "$root"/var/lib/apt/lists/*
umount "$root/dev" "$root/proc"

# The developer: uid 1000 with a home of package trees. Their test keys are
# copied from the image's own CPython test suite, so they are real keys that
# really ship with a package.
chroot "$root" useradd -u 1000 -m -s /bin/bash dev
py=$root/home/dev/.pyenv/versions/3.11.2/lib/python3.11
mkdir -p "$py/test" "$py/site-packages/moto/moto_proxy" "$py/site-packages/moto-5.0.0.dist-info"
n=0
for f in "$root"/usr/lib/python3.11/test/*.pem; do
    if grep -q 'PRIVATE KEY' "$f"; then cp "$f" "$py/test/"; n=$((n + 1)); fi
done
[ "$n" -gt 0 ] || { echo "realistic image: no private keys in libpython3.11-testsuite" >&2; exit 1; }
touch "$py/test/__init__.py" "$py/test/regrtest.py"
cp "$root/usr/lib/python3.11/test/keycert.pem" "$py/site-packages/moto/moto_proxy/ca.key"
printf 'Metadata-Version: 2.1\nName: moto\nVersion: 5.0.0\n' > "$py/site-packages/moto-5.0.0.dist-info/METADATA"
touch "$py/site-packages/moto/__init__.py"
printf 'export PATH="$HOME/.pyenv/bin:$PATH"\n' >> "$root/home/dev/.bashrc"
chroot "$root" chown -R dev:dev /home/dev
mkdir -p "$root/workspace"
chmod 0755 "$root/workspace"

echo "realistic image: podman import as $TAG" >&2
tar -C "$root" --numeric-owner -c . | podman import \
    --change 'WORKDIR /workspace' --change 'CMD ["/bin/bash"]' - "$TAG" >&2
echo "$TAG"
