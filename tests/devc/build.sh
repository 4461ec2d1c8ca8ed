#!/usr/bin/env bash
# The devcontainer-style root tarballs of tests/it/containers_agents.rs:
# Debian bookworm by debootstrap (minbase, with sudo), user vscode (uid and
# gid 1000, a home, a login shell, no password), once as it is and once with
# `vscode ALL=(root) NOPASSWD:ALL` in /etc/sudoers.d/vscode; and a third,
# made from the plain one, laid out as Claude Code's reference devcontainer
# (anthropics/claude-code .devcontainer/Dockerfile at commit
# 5cfc0a1905ce0c0a9bd81d8a90fe6b62ff614357): user node (uid and gid 1000,
# node:20's), /workspace, /commandhistory and /home/node/.claude owned by
# node, /usr/local/bin/init-firewall.sh root's with mode 0755 (a stand-in:
# the script's text is not copied, and nothing runs it), and
# `node ALL=(root) NOPASSWD: /usr/local/bin/init-firewall.sh` in
# /etc/sudoers.d/node-firewall, mode 0440, as that Dockerfile writes it.
#
#   tests/devc/build.sh     prints the plain tarball's path, the sudo one's
#                           and the Claude Code one's; builds them first
#                           when they are missing
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
CLAUDE_RECIPE=v1
claude=$CACHE/devc-bookworm-claude-$RECIPE-$CLAUDE_RECIPE.tar

made() {
    if [ -f "$plain" ] && [ -f "$sudo" ] && [ -f "$claude" ]; then
        printf '%s\n%s\n%s\n' "$plain" "$sudo" "$claude"
        exit 0
    fi
}

pack() {
    tar -C "$root" -cf "$1.$$" .
    mv "$1.$$" "$1"
}

# The plain root (at $root) as Claude Code's devcontainer lays it out.
as_claude() {
    rm -f "$root/etc/sudoers.d/vscode"
    sed -i 's/^vscode:/node:/; s#/home/vscode#/home/node#' "$root/etc/passwd" "$root/etc/group" "$root/etc/shadow"
    mv "$root/home/vscode" "$root/home/node"
    mkdir -p "$root/home/node/.claude" "$root/workspace" "$root/commandhistory"
    touch "$root/commandhistory/.bash_history"
    chown -R 1000:1000 "$root/home/node" "$root/workspace" "$root/commandhistory"
    printf '#!/bin/bash\n# stand-in for anthropics/claude-code .devcontainer/init-firewall.sh\nexit 0\n' \
        >"$root/usr/local/bin/init-firewall.sh"
    chown 0:0 "$root/usr/local/bin/init-firewall.sh"
    chmod 0755 "$root/usr/local/bin/init-firewall.sh"
    echo "node ALL=(root) NOPASSWD: /usr/local/bin/init-firewall.sh" >"$root/etc/sudoers.d/node-firewall"
    chmod 0440 "$root/etc/sudoers.d/node-firewall"
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
if [ -f "$plain" ] && [ -f "$sudo" ]; then
    # Only the Claude Code layout is missing: made from the plain root.
    tar -C "$root" -xf "$plain"
    as_claude
    pack "$claude"
    made
fi
echo "devcontainer image: debootstrap bookworm into $root" >&2
debootstrap --variant=minbase --include=sudo bookworm "$root" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >&2
echo 'vscode:x:1000:1000::/home/vscode:/bin/bash' >>"$root/etc/passwd"
echo 'vscode:x:1000:' >>"$root/etc/group"
echo 'vscode:*:19000:0:99999:7:::' >>"$root/etc/shadow"
mkdir -p "$root/home/vscode"
chown -R 1000:1000 "$root/home/vscode"
rm -f "$root"/var/cache/apt/archives/*.deb

pack "$plain"
echo 'vscode ALL=(root) NOPASSWD:ALL' >"$root/etc/sudoers.d/vscode"
chmod 0440 "$root/etc/sudoers.d/vscode"
pack "$sudo"
as_claude
pack "$claude"
made
