"""Reads the DSSE artifacts attached to an image back as a third party,
with oras-py (the ORAS project's Python SDK, PyPI `oras`): the image's
referrers (the referrers API, else the referrers tag `sha256-<hex>` of the
distribution spec 1.1), each artifact manifest's raw bytes, and each
envelope blob of type application/vnd.dsse.envelope.v1+json.

    oras_read.py HOST:PORT REPOSITORY DIGEST OUTDIR

Credentials, when the registry needs them: ORAS_USER and ORAS_PASSWORD in
the environment. TLS: set REQUESTS_CA_BUNDLE to the registry's CA and
ORAS_TLS=1. Writes OUTDIR/<hex>.manifest and OUTDIR/<hex>.blob (hex of the
digests) and prints a JSON summary: {"via": ..., "artifacts": [...]}.
"""
import hashlib
import json
import os
import sys

import oras.client

DSSE = "application/vnd.dsse.envelope.v1+json"
INDEX = "application/vnd.oci.image.index.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"


def main():
    host, repo, digest, out = sys.argv[1:5]
    tls = os.environ.get("ORAS_TLS") == "1"
    user = os.environ.get("ORAS_USER")
    # The CA (REQUESTS_CA_BUNDLE) verifies TLS; Basic credentials are set
    # on the client itself, so nothing is written to a config file.
    c = oras.client.OrasClient(
        hostname=host,
        insecure=not tls,
        tls_verify=os.environ.get("REQUESTS_CA_BUNDLE", True) if tls else False,
        auth_backend="basic" if user else "token",
    )
    if user:
        c.auth.set_basic_auth(user, os.environ["ORAS_PASSWORD"])
    base = f"{'https' if tls else 'http'}://{host}/v2/{repo}"

    def get(path, accept=None):
        headers = {"Accept": accept} if accept else {}
        return c.do_request(f"{base}/{path}", "GET", headers=headers)

    r = get(f"referrers/{digest}", INDEX)
    via = "referrers API"
    if r.status_code == 404:
        via = "referrers tag"
        r = get(f"manifests/sha256-{digest.split(':', 1)[1]}", INDEX)
    r.raise_for_status()
    index = json.loads(r.content)
    arts = []
    for d in index.get("manifests", []):
        if d.get("artifactType") != DSSE:
            continue
        m = get(f"manifests/{d['digest']}", MANIFEST)
        m.raise_for_status()
        assert "sha256:" + hashlib.sha256(m.content).hexdigest() == d["digest"], d
        hexd = d["digest"].split(":", 1)[1]
        with open(os.path.join(out, hexd + ".manifest"), "wb") as f:
            f.write(m.content)
        man = json.loads(m.content)
        for layer in man["layers"]:
            if layer["mediaType"] != DSSE:
                continue
            b = c.get_blob(f"{host}/{repo}", layer["digest"])
            b.raise_for_status()
            bhex = layer["digest"].split(":", 1)[1]
            assert hashlib.sha256(b.content).hexdigest() == bhex, layer
            with open(os.path.join(out, bhex + ".blob"), "wb") as f:
                f.write(b.content)
            arts.append(
                {
                    "manifest": d["digest"],
                    "blob": layer["digest"],
                    "subject": man.get("subject", {}).get("digest"),
                    "predicate": layer.get("annotations", {}).get("in-toto.io/predicate-type"),
                }
            )
    print(json.dumps({"via": via, "artifacts": arts}))


main()
