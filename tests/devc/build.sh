#!/usr/bin/env bash
# The devcontainer-style root tarballs of tests/it/containers_agents.rs:
# Debian bookworm by debootstrap (minbase, with sudo), user vscode (uid and
# gid 1000, a home, a login shell, no password), once as it is and once with
# `vscode ALL=(root) NOPASSWD:ALL` in /etc/sudoers.d/vscode.
#
#   tests/devc/build.sh     prints the plain tarball's path, then the sudo
#                           one's; builds them first when they are missing
#
# A script (not test code) so that .ci/run can build them in the background
# while the crate compiles, and the tests then find them made. Cached under
# /var/tmp/selfprobe-test-cache by RECIPE: bump it when the recipe changes.
# Each tarball is written beside its name and renamed, so a concurrent or
# interrupted build never leaves half of one. debootstrap talks only to
# Debian's mirror (a package registry). Needs root and debootstrap.
set -euo pipefail
RECIPE=v1
CACHE=/var/tmp/selfprobe-test-cache
plain=$CACHE/devc-bookworm-plain-$RECIPE.tar
sudo=$CACHE/devc-bookworm-sudo-$RECIPE.tar

made() {
    if [ -f "$plain" ] && [ -f "$sudo" ]; then
        printf '%s\n%s\n' "$plain" "$sudo"
        exit 0
    fi
}
made
command -v debootstrap >/dev/null || {
    echo "debootstrap is missing (apt-get install -y debootstrap; .ci/run does it)" >&2
    exit 2
}
mkdir -p "$CACHE"
# One builder at a time: .ci/run's background build and a test asking at
# once wait for the first instead of running two.
exec 9>"$CACHE/devc-build.lock"
flock 9
made

root=$(mktemp -d "$CACHE/rootfs.XXXXXX")
# mktemp makes it 0700, and it becomes the image's /, which uid 1000 enters.
chmod 0755 "$root"
trap 'rm -rf --one-file-system "$root"' EXIT
echo "devcontainer image: debootstrap bookworm into $root" >&2
debootstrap --variant=minbase --include=sudo bookworm "$root" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >&2
echo 'vscode:x:1000:1000::/home/vscode:/bin/bash' >>"$root/etc/passwd"
echo 'vscode:x:1000:' >>"$root/etc/group"
echo 'vscode:*:19000:0:99999:7:::' >>"$root/etc/shadow"
mkdir -p "$root/home/vscode"
chown -R 1000:1000 "$root/home/vscode"
rm -f "$root"/var/cache/apt/archives/*.deb

pack() {
    tar -C "$root" -cf "$1.$$" .
    mv "$1.$$" "$1"
}
pack "$plain"
echo 'vscode ALL=(root) NOPASSWD:ALL' >"$root/etc/sudoers.d/vscode"
chmod 0440 "$root/etc/sudoers.d/vscode"
pack "$sudo"
printf '%s\n%s\n' "$plain" "$sudo"
