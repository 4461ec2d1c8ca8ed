#!/bin/sh
# `devcontainer features test` runs this in the "clean" scenario's container
# (scenarios.json: no extra mounts, no network), after the Feature's
# postCreateCommand passed. POSIX sh: the image may have no bash.
set -eu
test -x /usr/local/bin/selfprobe
test -x /usr/local/share/selfprobe-feature/post-create
# The report at the output option's path: a JSON report that passed.
grep -q '"schema": "https://selfprobe.dev/schema/report/v1"' /tmp/selfprobe.json
grep -q '"gating": 0,' /tmp/selfprobe.json
# The envelope at the attest option's path.
grep -q '"payloadType": "application/vnd.in-toto+json"' /tmp/selfprobe.intoto.json
echo "selfprobe Feature, clean scenario: report and envelope in place"
