#!/bin/sh
# The selfprobe Dev Container Feature's installer. The Dev Containers CLI
# runs it as root while it builds the image, with the Feature's options in
# the environment (FAILON, POLICY, OUTPUT, ATTEST). Options reach a Feature
# only here, at build time, so they are baked into the postCreateCommand
# script it writes (/usr/local/share/selfprobe-feature/post-create), which
# the Feature's devcontainer-feature.json runs once the container exists.
# POSIX sh: the image may have no bash (a busybox image has only ash).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
bin=/usr/local/bin/selfprobe
hook_dir=/usr/local/share/selfprobe-feature
hook=$hook_dir/post-create

fail_on=${FAILON:-high}
case "$fail_on" in
    critical | high | medium | low | info | none) ;;
    *)
        echo "selfprobe Feature: option failOn is '$fail_on': expected critical, high, medium, low, info or none" >&2
        exit 1
        ;;
esac

if [ ! -f "$here/selfprobe" ]; then
    echo "selfprobe Feature: no selfprobe binary beside install.sh ($here): make the Feature folder with feature/assemble.sh OUTDIR" >&2
    exit 1
fi

# A value in single quotes, with any single quote inside it closed, escaped
# and reopened: the script below then holds it as data, never as code.
quote() {
    printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}

mkdir -p /usr/local/bin "$hook_dir"
cp "$here/selfprobe" "$bin.new"
chmod 0755 "$bin.new"
mv "$bin.new" "$bin"

{
    echo '#!/bin/sh'
    echo '# Written by the selfprobe Feature (install.sh) with its options; run'
    echo '# as the postCreateCommand, in the workspace folder.'
    echo "fail_on=$(quote "$fail_on")"
    echo "policy=$(quote "${POLICY:-}")"
    echo "output=$(quote "${OUTPUT:-}")"
    echo "attest=$(quote "${ATTEST:-}")"
    cat <<'HOOK'
set -u
# The report's and the envelope's directories, made when missing.
for f in "$output" "$attest"; do
    [ -n "$f" ] && mkdir -p "$(dirname "$f")"
done
set -- --workspace "$PWD" --fail-on "$fail_on"
[ -n "$policy" ] && set -- "$@" --policy "$policy"
[ -n "$attest" ] && set -- "$@" --attest "$attest"
if [ -n "$output" ]; then
    /usr/local/bin/selfprobe "$@" --format json -o "$output"
    rc=$?
    if [ "$rc" -ne 0 ]; then
        # The creation log shows the findings: the same check again, as
        # text (its exit code is the first run's to give).
        /usr/local/bin/selfprobe --workspace "$PWD" --fail-on "$fail_on" ${policy:+--policy "$policy"}
    fi
else
    /usr/local/bin/selfprobe "$@"
    rc=$?
fi
case "$rc" in
    0) echo "selfprobe Feature: the workspace check passed (fail-on $fail_on)${output:+; report: $output}${attest:+; envelope: $attest}" ;;
    1) echo "selfprobe Feature: the workspace check failed: findings at or above $fail_on (exit 1)${output:+; report: $output}; the container was created, but it is not the boundary it should be" >&2 ;;
    2) echo "selfprobe Feature: the workspace check could not start: a usage or policy error (exit 2), see above" >&2 ;;
    *) echo "selfprobe Feature: the workspace check failed to run (exit $rc), see above" >&2 ;;
esac
exit "$rc"
HOOK
} >"$hook.new"
chmod 0755 "$hook.new"
mv "$hook.new" "$hook"
echo "selfprobe Feature: installed $bin ($("$bin" --version)); postCreateCommand $hook (failOn $fail_on)"
