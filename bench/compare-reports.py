#!/usr/bin/env python3
"""Compare two directories of selfprobe JSON reports (issue 11).

    compare-reports.py [--noise DIR] [--names-from-b] [--diffs N] [--expect FILE]
                       [--strict-order] [--findings-by-index] DIR_A DIR_B

The directories are report dumps (SELFPROBE_REPORT_DUMP, written by
tests/it/common/dump.rs as <test>.<n>.json; bench/compare-behaviour.sh makes
them). Files are paired by name. Each pair is compared after normalising
ONLY what issue 11 allows to differ between two runs of one behaviour:
times, ids and the paths of temporary files. Codes, severities, statuses,
titles, messages, evidence, counts and the order of findings, probes and
every other list are compared as they are, except as listed here.

TIMES
  T1 The value of a key `started`, `finished`, `planted_at`, `startTimeUtc`,
     `endTimeUtc` (the run's clock), `duration_us`, `duration_ms`,
     `elapsed`, `elapsed_us`, `elapsed_ms`, `walk_us`, `latency_ms`, or any
     key ending in `_per_s` (entries per second of a walk) -> "<time>".
     Configured limits (`timeout_ms`, `ttl_s`, ...) are NOT normalised.
  T2 Times the test derived from its own clock (a token planted to expire
     in an hour): two values that differ are still equal when every RFC
     3339 stamp in them (anywhere in a string) or the Unix time under a key
     `exp`, `iat`, `nbf`, `expires_at` or `warnafter` lies as far from its
     own run's start (run.started; a canary plant's planted_at; a SARIF
     log's invocation start) in A as in B, within TIME_SLACK (120 s), and
     everything else in the string is equal. The same for what is left of
     such a time: a `ttl_s` or `expired_s_ago` within TIME_SLACK, and a duration written the
     way src/probe/secrets/tokens.rs writes it ("9d 23h", "1h 59m",
     "2m 5s") within TIME_SLACK plus the unit of its last figure ("10d 0h"
     and "9d 23h" are a second apart).
  T3 A measured figure in a message ("did not finish within 1996 ms"): two
     strings equal but for numbers written "<N> ms" are equal when each
     pair is within 50 ms or 5 %. ("no answer within 1000 ms" against
     "2000 ms" still differs.)
  (T2 and T3 are tolerances applied when two values differ, not rewrites:
  a value equal in A and B is equal whatever it holds.)

IDS
  I1 run.id (or a canary plant's / SARIF log's run id) -> "<run-id>" wherever
     it occurs; other run ids (values of `run_id`, `canary_run_id`: an
     earlier run's canary) -> "<run-id#k>" wherever they occur; the 16 hex
     digits of a `.selfprobe-canary-<id>` name -> "<canary-id>".
  I2 The hash of the binary under test (tool.sha256; a SARIF log's
     invocation properties.binarySha256), wherever it occurs: two builds of
     different source differ by construction -> "<binary-sha256>". The same
     for the digest of the image the harness builds around that binary
     (Containerfile.test): an `image_id` (or image_id.value) "sha256:<hex>"
     and the hex of a `localhost/selfprobe-test@sha256:<hex>` reference,
     and a bare 64-hex image id given as the image's reference
     (inventory.image.references[].value: the image the Dev Containers CLI
     builds around the workspace holding the binary), wherever they occur
     -> "<image#k>".
  I3 Key material the tests make per run (tests/it/common/keys.rs) or the
     run makes (an ephemeral key): the values of `keyid` and `public_key`,
     and a canary's `signature.sig` -> "<key#k>".
  I4 Engine-made ids: a container id (inventory.image.container_id.value,
     inventory.mounts.engine.container_id) wherever it occurs, and its first
     12 digits standing alone (Docker's hostname); a 64-hex path
     component after overlay-containers/, containers/, overlay/, overlay2/,
     sandbox/, sandboxes/, vfs-containers/, vfs-layers/ or vfs/dir/;
     podman's 26-character layer links `l/XXXX` -> "<engine-id#k>".
  I5 Kernel-made ids: namespace inodes (the N of `ns:[N]` anywhere,
     inventory.namespaces.inodes.*, evidence `inode` / `initial_inode`)
     -> "<ns#k>"; mount ids (`id` and `parent` of inventory.mounts.mounts
     entries, any `mount_id`) -> "<mnt#k>"; the minor number of an
     anonymous device (an entry whose `major` is 0) -> "<anon-dev#k>";
     a port in Linux's ephemeral range (32768-60999) after a host name or
     address (`127.0.0.1:41407`, `api.corp.test:33061`: the port the kernel
     gave a test server) -> "<port#k>".
  I5b The machine's own cgroup id: the 32 hex digits after /process_api/
     in a cgroup path (this sandbox machine's session, seen through
     rootless podman's cgroup v1 mounts) -> "<cgroup-id#k>".
  I5c A nonce the test made for the run (a random --nonce, containers_parity):
     the value of a key `nonce` -> "<nonce#k>".
  I6 Git commits a test made a moment ago: the value of `head_commit` ->
     "<commit#k>"; a `worktree_id` equal to the checkout directory's name
     -> "<checkout>".
  I7 Finding ids, ONLY where they differ because the subject holds
     something normalised here: when a finding's id is sha256(code NUL
     subject)[:12] (src/finding.rs) and normalising changed its subject,
     the id becomes "<id:" + that hash over the normalised subject + ">",
     and every string equal to the old id (the scorecard's findings and
     decisive lists) follows. An id that does not follow that rule is left
     as it is, so a change in how ids are made shows.

TEMPORARY PATHS
  P1 This dump's checkout and cargo target directory (the dump's
     `.checkout` and `.target` files; the base tree is a temporary
     worktree) -> "<checkout>", "<target>".
  P2 Under /tmp, /var/tmp, /dev/shm or the target's tmp/ (CARGO_TARGET_TMPDIR),
     every path component made unique by a number: a name ending in one or
     more `-<digits>` groups (pid, counter, nanoseconds; an extension after
     them is kept) -> "<stem>-<tmp#k>"; a mktemp name `tmp.XXXXXXXXXX` ->
     "tmp.<tmp#k>". The same for a word `selfprobe-test-<tag>-<digits>...`
     anywhere (podman's unique(): container names).
  P3 A value cut to a length with "…": a temporary name of another length
     moves the cut, so two such values are equal when one (without "…") is
     a prefix of the other.

MOUNT-TABLE ORDER (the one exception on order; --strict-order turns it off)
  O1 The engine makes the order of same-depth mounts anew for every
     container (podman: /etc/hosts, /etc/hostname, /etc/resolv.conf,
     /run/.containerenv, the tmpfs at /tmp, /run, /sys, and -v volumes
     alike), so lists the report keeps in mount-table order are put in
     order by a key before anything is numbered: inventory.mounts.mounts
     (mount_point, root, fstype, source, options), sockets.walks and
     artifacts.walks (mount_point), secrets.search.roots (path, origin),
     writable.host_paths and teardown.persistent (path).
  O2 For the same reason which of the engine's files the boundary cites
     first: a boundary `seen` "<engine file> from <dir>/userdata/<file>" (or
     docker/containers/<id>/<file>) -> "<first engine file> from <dir>/<its
     file>".

PROBE RECORDS
  R1 The report's `probes` list is compared by probe name, not by index
     (/probes/<name>/...): a probe added to the table (issue 11's `users`)
     shifts every later index, and would make every record differ. Their
     order is still compared: the names both sides hold must come in the
     same order (a difference is reported at /probe_order).
  R2 A SARIF run's tool.driver.rules list is compared by rule id
     (/runs/N/tool/driver/rules/<id>/...; a code added to the catalog shifts
     every later index), its order at .../driver/rule_order (over the ids
     both hold), and each result's ruleIndex as "<rule:ID>", the rule it
     points to.
  F1 The report's `findings` list is compared by finding, not by index
     (/findings/<code>@<key>/...): a finding added or gone (a new check,
     a probe.incomplete) shifts every later index, and would make every
     later finding differ. <key> is sha256(code NUL subject)[:12] over the
     normalised subject (the id src/finding.rs makes, where nothing in the
     subject is normalised); a second finding with the same code and
     subject is <code>@<key>#2. A finding in one report only is
     "/findings/<code>@<key>: only in A (finding CODE 'subject')". Their
     order is still compared: the keys both sides hold must come in the
     same order (/finding_order). --findings-by-index compares the list as
     it is, index by index (how issues 11 and 24 were compared).

"#k" numbers the distinct original values of a kind in the order they first
occur in the document, so which values equal which is still compared: two
temporary dirs stay two, a namespace shared with the host stays shared.

--expect FILE: the differences a change makes on purpose, one per line,
`PATH-PATTERN  # why` (a JSON path, `*` for one list index or key, and
within a component for any characters but `/`: `/findings/priv.capability@*`
is every priv.capability finding under F1), optionally after a file glob
that limits the rule to the report files it matches (`captures::*.1.json
/scorecard/controls/*/level`; several globs separated by commas, or
`@NAME` for a group defined on a line of its own as `@NAME = GLOB,GLOB`);
blank lines and lines starting with # are skipped. A file that differs only at
expected paths is `expected`, not `differs`, and the rules it matched are
named. Each rule that no file needed is listed at the end: an expectation
that did not happen is worth a look too.

Output: a line per file (`same`, `expected`, `differs`, `noisy`, `only in A`,
`only in B`), the first --diffs (5) path-level differences under `differs`
and `noisy`, then a summary line with counts. A file that is not JSON (an
empty stdout) is compared byte for byte and marked "(not JSON)".

--noise DIR (repeatable): another capture of A's tree. A file that differs
between A and DIR is noisy at the paths where they differ (list indices as
*); a file in only one of them, or whose findings differ (their number, a
code, summary.total, a probe's status: a deadline cut, the machine's own
state), is noisy as a whole. In A vs B a file is `noisy`, not `differs`,
when it is noisy as a whole, when it differs only at its noisy paths, or
when it differs only at exact paths (indices kept) where another file is
noisy (e.g. /inventory/secrets/processes/scanned, which counts the
processes of others, short-lived ones included). The note says which.
--names-from-b: compare only the tests (<test> of <test>.<n>.json) that B
holds, for a rerun of a few suites.

Exit status: 0 when every file is `same`, `expected` or `noisy`, 1 when one differs or
is in only one directory, 2 on a usage error.
"""

import argparse
import fnmatch
import hashlib
import json
import os
import re
import sys

TIME_KEYS = {"started", "finished", "planted_at", "startTimeUtc", "endTimeUtc"}
DURATION_KEYS = {"duration_us", "duration_ms", "elapsed", "elapsed_us",
                 "elapsed_ms", "walk_us", "latency_ms"}
# A harness-unique name: a stem, then -digits groups, then an extension.
UNIQUE = re.compile(r"^(?P<stem>.+?)(?P<gen>(?:-\d+)+)(?P<ext>\.[A-Za-z0-9]+)?$")
MKTEMP = re.compile(r"^tmp\.[A-Za-z0-9]{10}$")
TEMP_PATH = re.compile(r"(?P<root>(?<![\w.-])(?:/tmp|/var/tmp|/dev/shm)|<target>(?:/[^/\s]+)?/tmp)(?P<rest>(?:/[^/\s\"',;:()\[\]]+)+)")
HARNESS_WORD = re.compile(r"selfprobe-test-[A-Za-z0-9_.-]*?(?:-\d+)+(?![\d])")
CANARY = re.compile(r"(\.selfprobe-canary-)([0-9a-f]{16})")
RUN_ID_KEYS = {"run_id", "canary_run_id"}
NS = re.compile(r"\b(cgroup|ipc|mnt|net|pid|pid_for_children|time|time_for_children|user|uts):\[(\d+)\]")
ENGINE_PATH_ID = re.compile(
    r"(?<=/)(overlay-containers|containers|overlay|overlay2|sandbox|sandboxes|vfs-containers|"
    r"vfs-layers|vfs/dir)/([0-9a-f]{64})(?![0-9a-f])")
# Which of the engine's own files the boundary cites first: the first in the
# mount table, whose order the engine makes anew for every container.
ENGINE_FILE_SEEN = re.compile(
    r"^(?:/etc/hosts|/etc/hostname|/etc/resolv\.conf|/run/\.containerenv) from "
    r"(?P<dir>.*/(?:userdata|docker/containers/[^/]+)/)(?:hosts|hostname|resolv\.conf|\.containerenv)$")
# Lists of the inventory in mount-table order, and the key each is put in
# order by (before anything is numbered).
MOUNT_ORDER_LISTS = {
    ("mounts", "mounts"): ("mount_point", "root", "fstype", "source", "options"),
    ("sockets", "walks"): ("mount_point",),
    ("artifacts", "walks"): ("mount_point",),
    ("secrets", "search", "roots"): ("path", "origin"),
    ("writable", "host_paths"): ("path",),
    ("teardown", "persistent"): ("path",),
}
MACHINE_CGROUP = re.compile(r"(?<=/process_api/)([0-9a-f]{32})(?![0-9a-f])")
LAYER_LINK = re.compile(r"(?<![A-Za-z0-9])l/([A-Z0-9]{26})(?![A-Za-z0-9])")
HEX64 = re.compile(r"^[0-9a-f]{64}$")
NS_NUMBER_KEYS = {"inode", "initial_inode"}
# A port the kernel handed a test server (Linux's ip_local_port_range).
PORT = re.compile(r"(?P<host>[A-Za-z0-9][A-Za-z0-9.-]*|\[[0-9a-f:.]+\]):(?P<port>\d{5})(?!\w)")
EPHEMERAL = range(32768, 61000)
IMAGE_ID = re.compile(r"^sha256:[0-9a-f]{64}$")
TEST_IMAGE_REF = re.compile(r"localhost/selfprobe-test(?:-docker)?(?::[\w.-]+)?@sha256:([0-9a-f]{64})")
# RFC 3339 stamps and the keys holding Unix times, compared relative to
# the run's own start (see same_time).
EPOCH_KEYS = {"exp", "iat", "nbf", "expires_at", "warnafter"}
TIME_SLACK = 120
# Seconds from now to a time the test planted (ttl_s) or since it (expired_s_ago).
LEFT_KEYS = {"ttl_s", "expired_s_ago"}
MS_SLACK, MS_SLACK_PART = 50, 0.05


def finding_id(code, subject):
    return hashlib.sha256(code.encode() + b"\0" + subject.encode()).hexdigest()[:12]


class Normaliser:
    def __init__(self, doc, checkout, target, mount_order=True, findings_by_key=True):
        self.mount_order = mount_order
        self.findings_by_key = findings_by_key
        self.tokens = {}
        self.anon_major = False
        self.checkout_name = os.path.basename(checkout.rstrip("/")) if checkout else None
        self.replace = []  # (literal, token), longest first
        for path, tok in ((target, "<target>"), (checkout, "<checkout>")):
            if path:
                self.replace.append((path.rstrip("/"), tok))
        self.replace.sort(key=lambda p: -len(p[0]))
        self.run_id = None
        self.start = None
        if isinstance(doc, dict):
            t = (doc.get("run") or {}).get("started") if isinstance(doc.get("run"), dict) else None
            t = t or doc.get("planted_at")
            self.start = epoch(t) if isinstance(t, str) else None
        run = doc.get("run") if isinstance(doc, dict) else None
        if isinstance(run, dict) and isinstance(run.get("id"), str) and run["id"]:
            self.run_id = run["id"]
        elif isinstance(doc, dict) and isinstance(doc.get("run_id"), str) and doc["run_id"]:
            self.run_id = doc["run_id"]  # a canary plant's answer
        sarif = doc.get("runs") if isinstance(doc, dict) else None
        if isinstance(sarif, list) and sarif and isinstance(sarif[0], dict):
            # A SARIF log: the run id ends automationDetails.id, the start
            # is the invocation's.
            aid = (sarif[0].get("automationDetails") or {}).get("id")
            if isinstance(aid, str) and "/" in aid:
                self.run_id = aid.rsplit("/", 1)[1] or None
            inv = sarif[0].get("invocations") or [{}]
            t = inv[0].get("startTimeUtc") if isinstance(inv[0], dict) else None
            self.start = epoch(t) if isinstance(t, str) else self.start
        self.other_run_ids = set()

        def run_ids(v, key=None):
            if isinstance(v, dict):
                for k, x in v.items():
                    run_ids(x, k)
            elif isinstance(v, list):
                for x in v:
                    run_ids(x, key)
            elif key in RUN_ID_KEYS and isinstance(v, str) and v and v != self.run_id:
                self.other_run_ids.add(v)
        run_ids(doc)
        # The image the harness builds holds the binary under test
        # (Containerfile.test): its digest changes with the binary.
        self.image_digests = set()
        self.binary_hashes = set()

        def digests(v, key=None, parent=None):
            if isinstance(v, dict):
                for k, x in v.items():
                    digests(x, k, key)
            elif isinstance(v, list):
                for x in v:
                    digests(x, key, parent)
            elif isinstance(v, str):
                if (key == "image_id" or (parent == "image_id" and key == "value")) \
                        and IMAGE_ID.match(v):
                    self.image_digests.add(v[len("sha256:"):])
                if key == "value" and parent == "references" and HEX64.match(v):
                    # An image id as the reference: the image an engine
                    # built around the binary (the Dev Containers CLI's).
                    self.image_digests.add(v)
                for m in TEST_IMAGE_REF.finditer(v):
                    self.image_digests.add(m[1])
                if key in ("sha256", "binarySha256") and parent in ("tool", "properties") \
                        and HEX64.match(v):
                    self.binary_hashes.add(v)
        digests(doc)
        self.container_ids = set()
        if isinstance(doc, dict):
            inv = doc.get("inventory") or {}
            for v in (((inv.get("image") or {}).get("container_id") or {}).get("value"),
                      ((inv.get("mounts") or {}).get("engine") or {}).get("container_id")):
                if isinstance(v, str) and HEX64.match(v):
                    self.container_ids.add(v)

    def token(self, cat, value):
        seen = self.tokens.setdefault(cat, {})
        if value not in seen:
            seen[value] = len(seen) + 1
        return f"<{cat}#{seen[value]}>"

    def temp_name(self, name):
        if MKTEMP.match(name):
            return "tmp." + self.token("tmp", name)
        m = UNIQUE.match(name)
        if m:
            return m["stem"] + "-" + self.token("tmp", m["stem"] + m["gen"]) + (m["ext"] or "")
        return name

    def string(self, s):
        for lit, tok in self.replace:
            s = s.replace(lit, tok)
        if self.run_id:
            s = s.replace(self.run_id, "<run-id>")
        s = CANARY.sub(lambda m: m[1] + "<canary-id>", s)
        for rid in self.other_run_ids:
            if rid in s:
                s = s.replace(rid, self.token("run-id", rid))
        for h in self.binary_hashes:
            if h in s:
                s = s.replace(h, "<binary-sha256>")
        for d in self.image_digests:
            if d in s:
                s = s.replace(d, self.token("image", d))
        for cid in self.container_ids:
            if cid in s:
                s = s.replace(cid, self.token("engine-id", cid))
            if cid[:12] in s:
                # The short id: the container's hostname under Docker.
                s = re.sub(r"(?<![0-9a-f])" + cid[:12] + r"(?![0-9a-f])",
                           self.token("engine-id", cid) + "[:12]", s)
        s = ENGINE_PATH_ID.sub(lambda m: m[1] + "/" + self.token("engine-id", m[2]), s)
        s = LAYER_LINK.sub(lambda m: "l/" + self.token("engine-id", m[1]), s)
        s = MACHINE_CGROUP.sub(lambda m: self.token("cgroup-id", m[1]), s)
        s = NS.sub(lambda m: f"{m[1]}:[{self.token('ns', m[2])}]", s)
        s = PORT.sub(lambda m: m["host"] + ":" + (self.token("port", m["port"])
                     if int(m["port"]) in EPHEMERAL else m["port"]), s)
        s = HARNESS_WORD.sub(lambda m: self.temp_name(m[0]), s)
        s = TEMP_PATH.sub(lambda m: m["root"] + "".join(
            "/" + self.temp_name(c) for c in m["rest"].split("/")[1:]), s)
        return s

    def value(self, v, key=None, parent_path=""):
        if key in TIME_KEYS or key in DURATION_KEYS or (key or "").endswith("_per_s"):
            return "<time>" if v is not None else None
        if key in RUN_ID_KEYS and isinstance(v, str) and v:
            return "<run-id>" if v == self.run_id else self.token("run-id", v)
        if key == "sig" and parent_path.endswith("/signature/sig") and isinstance(v, str):
            return self.token("key", v)
        if key == "seen" and self.mount_order and isinstance(v, str) and ENGINE_FILE_SEEN.match(v):
            m = ENGINE_FILE_SEEN.match(v)
            return "<first engine file> from " + self.string(m["dir"]) + "<its file>"
        if key in ("id", "parent", "mount_id") and isinstance(v, int) and (
                key == "mount_id" or parent_path.startswith("/inventory/mounts/mounts/")):
            return self.token("mnt", str(v))
        if key == "minor" and isinstance(v, int) and self.anon_major:
            return self.token("anon-dev", str(v))
        if key in ("keyid", "public_key") and isinstance(v, str) and v:
            return self.token("key", v)
        if key == "nonce" and isinstance(v, str) and v:
            return self.token("nonce", v)
        if key == "head_commit" and isinstance(v, str) and v:
            return self.token("commit", v)
        if key == "worktree_id" and v == self.checkout_name:
            return "<checkout>"
        if isinstance(v, dict) and v.get("major") == 0:
            self.anon_major = True
            try:
                return {k: self.value(x, k, f"{parent_path}/{k}") for k, x in v.items()}
            finally:
                self.anon_major = False
        if isinstance(v, dict):
            return {k: self.value(x, k, f"{parent_path}/{k}") for k, x in v.items()}
        if isinstance(v, list):
            return [self.value(x, key, f"{parent_path}/*") for x in v]
        if isinstance(v, str):
            return self.string(v)
        if isinstance(v, int) and not isinstance(v, bool):
            if key in NS_NUMBER_KEYS or parent_path.startswith("/inventory/namespaces/inodes/"):
                return self.token("ns", str(v))
        return v

    def document(self, doc):
        inv = doc.get("inventory") if isinstance(doc, dict) else None
        if isinstance(inv, dict) and self.mount_order:
            doc = json.loads(json.dumps(doc))
            inv = doc["inventory"]
            for where, keys in MOUNT_ORDER_LISTS.items():
                at = inv
                for w in where:
                    at = at.get(w) if isinstance(at, dict) else None
                if isinstance(at, list) and all(isinstance(m, dict) for m in at):
                    at.sort(key=lambda m: json.dumps([m.get(k) for k in keys], sort_keys=True))
        out = self.value(doc)
        if not isinstance(out, dict):
            return out
        out = probes_by_name(out)
        # Finding ids: recomputed over the normalised subject where the
        # subject changed and the id follows src/finding.rs's rule.
        ids = {}
        orig = doc.get("findings") if isinstance(doc, dict) else None
        new = out.get("findings")
        if isinstance(orig, list) and isinstance(new, list) and len(orig) == len(new):
            for o, n in zip(orig, new):
                if not (isinstance(o, dict) and isinstance(n, dict)):
                    continue
                code, subj, fid = o.get("code"), o.get("subject"), o.get("id")
                if not all(isinstance(x, str) for x in (code, subj, fid)):
                    continue
                if n.get("subject") != subj and finding_id(code, subj) == fid:
                    ids[fid] = "<id:" + finding_id(code, n["subject"]) + ">"
        if ids:
            out = replace_exact(out, ids)
        if self.findings_by_key:
            out = findings_by_key(out)
        out = sarif_rules_by_id(out)
        return out


def probes_by_name(doc):
    """R1: the probes list as {name: record} plus /probe_order."""
    probes = doc.get("probes")
    if not (isinstance(probes, list) and probes
            and all(isinstance(p, dict) and isinstance(p.get("name"), str) for p in probes)):
        return doc
    names = [p["name"] for p in probes]
    if len(set(names)) != len(names):
        return doc
    out = {}
    for k, v in doc.items():
        if k == "probes":
            out["probes"] = {p["name"]: {x: y for x, y in p.items() if x != "name"}
                             for p in probes}
            out["probe_order"] = names
        else:
            out[k] = v
    return out


def findings_by_key(doc):
    """F1: the findings list as {code@key: finding} plus /finding_order."""
    findings = doc.get("findings")
    if not (isinstance(findings, list)
            and all(isinstance(f, dict) and isinstance(f.get("code"), str)
                    and isinstance(f.get("subject"), str) for f in findings)):
        return doc
    keyed, order, seen = {}, [], {}
    for f in findings:
        k = f["code"] + "@" + finding_id(f["code"], f["subject"])
        seen[k] = seen.get(k, 0) + 1
        if seen[k] > 1:
            k += f"#{seen[k]}"
        keyed[k] = f
        order.append(k)
    out = {}
    for k, v in doc.items():
        if k == "findings":
            # In key order: their own order is /finding_order's.
            out["findings"] = {x: keyed[x] for x in sorted(keyed)}
            out["finding_order"] = order
        else:
            out[k] = v
    return out


def sarif_rules_by_id(doc):
    """R2: a SARIF run's rules as {id: rule} plus rule_order, and each
    result's ruleIndex as the id it points to."""
    runs = doc.get("runs")
    if not isinstance(runs, list):
        return doc
    out_runs = []
    for run in runs:
        rules = ((run.get("tool") or {}).get("driver") or {}).get("rules") \
            if isinstance(run, dict) else None
        if not (isinstance(rules, list) and rules
                and all(isinstance(r, dict) and isinstance(r.get("id"), str) for r in rules)
                and len({r["id"] for r in rules}) == len(rules)):
            out_runs.append(run)
            continue
        ids = [r["id"] for r in rules]
        run = dict(run)
        driver = dict(run["tool"]["driver"])
        driver["rules"] = {r["id"]: r for r in sorted(rules, key=lambda r: r["id"])}
        driver["rule_order"] = ids
        run["tool"] = dict(run["tool"], driver=driver)
        if isinstance(run.get("results"), list):
            run["results"] = [
                dict(x, ruleIndex=f"<rule:{ids[x['ruleIndex']]}>")
                if isinstance(x, dict) and isinstance(x.get("ruleIndex"), int)
                and 0 <= x["ruleIndex"] < len(ids) else x
                for x in run["results"]]
        out_runs.append(run)
    return dict(doc, runs=out_runs)


def common_order(na, nb):
    """R1, F1: /probe_order and /finding_order compared over the names
    both sides hold."""
    for key in ("probe_order", "finding_order"):
        oa, ob = na.get(key), nb.get(key)
        if isinstance(oa, list) and isinstance(ob, list):
            both = set(oa) & set(ob)
            na = dict(na, **{key: [n for n in oa if n in both]})
            nb = dict(nb, **{key: [n for n in ob if n in both]})
    ra, rb = na.get("runs"), nb.get("runs")
    if isinstance(ra, list) and isinstance(rb, list) and len(ra) == len(rb):
        runs_a, runs_b = [], []
        for x, y in zip(ra, rb):
            try:
                oa, ob = x["tool"]["driver"]["rule_order"], y["tool"]["driver"]["rule_order"]
            except (KeyError, TypeError):
                runs_a.append(x)
                runs_b.append(y)
                continue
            both = set(oa) & set(ob)
            for run, o, acc in ((x, oa, runs_a), (y, ob, runs_b)):
                driver = dict(run["tool"]["driver"], rule_order=[i for i in o if i in both])
                acc.append(dict(run, tool=dict(run["tool"], driver=driver)))
        na, nb = dict(na, runs=runs_a), dict(nb, runs=runs_b)
    return na, nb


def replace_exact(v, ids):
    if isinstance(v, dict):
        return {k: replace_exact(x, ids) for k, x in v.items()}
    if isinstance(v, list):
        return [replace_exact(x, ids) for x in v]
    if isinstance(v, str):
        return ids.get(v, v)
    return v


def epoch(stamp):
    from datetime import datetime
    try:
        return datetime.strptime(stamp.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z"
                                 if "." in stamp else "%Y-%m-%dT%H:%M:%S%z").timestamp()
    except ValueError:
        return None


TIMEISH = re.compile(
    r"(?P<stamp>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)"
    r"|(?P<ms>(?<![\d.])\d+ ms\b)"
    r"|(?P<human>\b\d+d \d+h\b|\b\d+h \d+m\b|\b\d+m \d+s\b)")
HUMAN_UNIT = {"d": 86400, "h": 3600, "m": 60, "s": 1}


def human(text):
    """(seconds, the unit of its last figure) of "9d 23h", "1h 59m", "2m 5s"."""
    secs, unit = 0, 1
    for n, u in re.findall(r"(\d+)([dhms])", text):
        secs += int(n) * HUMAN_UNIT[u]
        unit = HUMAN_UNIT[u]
    return secs, unit


def timeish(s):
    """s cut into its literal text and its time-like parts."""
    text, parts, at = [], [], 0
    for m in TIMEISH.finditer(s):
        text.append(s[at:m.start()])
        parts.append((m.lastgroup, m[0]))
        at = m.end()
    text.append(s[at:])
    return text, parts


def same_time(a, b, key, ctx):
    """Whether a and b differ only by times (T2, T3, P3 of the docstring):
    the Unix time under an EPOCH_KEYS key, or each RFC 3339 stamp in a
    string, as far from its own run's start in A as in B, within TIME_SLACK;
    a LEFT_KEYS value, or a duration written as selfprobe writes them ("9d 23h",
    "1h 59m", "2m 5s"), within TIME_SLACK and the unit of its last figure;
    "<N> ms" within MS_SLACK or MS_SLACK_PART; the rest of the string equal."""
    sa, sb = ctx if ctx else (None, None)
    if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool):
        if key in EPOCH_KEYS and sa is not None and sb is not None:
            return abs((a - sa) - (b - sb)) <= TIME_SLACK
        if key in LEFT_KEYS:
            return abs(a - b) <= TIME_SLACK
        return False
    if not (isinstance(a, str) and isinstance(b, str)):
        return False
    # A value cut to a length ("…"): a temporary name of another length
    # moves the cut, so the shorter may stop earlier.
    if a.endswith("…") and b.endswith("…"):
        x, y = sorted((a[:-1], b[:-1]), key=len)
        if y.startswith(x):
            return True
    ta, pa = timeish(a)
    tb, pb = timeish(b)
    if ta != tb or [k for k, _ in pa] != [k for k, _ in pb] or not pa:
        return False
    for (kind, x), (_, y) in zip(pa, pb):
        if x == y:
            continue
        if kind == "stamp":
            ex, ey = epoch(x), epoch(y)
            if None in (ex, ey, sa, sb) or abs((ex - sa) - (ey - sb)) > TIME_SLACK:
                return False
        elif kind == "ms":
            x, y = int(x.split()[0]), int(y.split()[0])
            if abs(x - y) > max(MS_SLACK, MS_SLACK_PART * max(x, y)):
                return False
        else:
            (x, ux), (y, uy) = human(x), human(y)
            if abs(x - y) > max(ux, uy) + TIME_SLACK:
                return False
    return True


def diff(a, b, path="", out=None, limit=5, ctx=None):
    if out is None:
        out = []
    if len(out) >= limit:
        return out
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            if k not in b:
                out.append(f"{path}/{k}: only in A ({short(a[k])})")
            else:
                diff(a[k], b[k], f"{path}/{k}", out, limit, ctx)
            if len(out) >= limit:
                return out
        for k in b:
            if k not in a:
                out.append(f"{path}/{k}: only in B ({short(b[k])})")
                if len(out) >= limit:
                    return out
        if list(a) != list(b) and set(a) == set(b):
            out.append(f"{path}: key order {list(a)} vs {list(b)}")
    elif isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, f"{path}/{i}", out, limit, ctx)
            if len(out) >= limit:
                return out
        if len(a) != len(b):
            longer, side = (a, "A") if len(a) > len(b) else (b, "B")
            extra = longer[min(len(a), len(b)):]
            out.append(f"{path}: {len(a)} vs {len(b)} items; extra in {side}: "
                       + "; ".join(short(x) for x in extra[:3]))
    elif (a != b or type(a) is not type(b)) and not same_time(
            a, b, path.rsplit("/", 1)[-1], ctx):
        out.append(f"{path}: {short(a)} -> {short(b)}")
    return out


def short(v, n=100):
    if isinstance(v, dict) and "code" in v and "subject" in v:
        s = f"finding {v['code']} {v['subject']!r}"
    else:
        s = json.dumps(v, ensure_ascii=False)
    return s if len(s) <= n else s[: n - 3] + "..."


def read_meta(d, name):
    try:
        with open(os.path.join(d, name)) as f:
            return f.read().strip() or None
    except OSError:
        return None


def listing(d):
    return {n for n in os.listdir(d)
            if not n.startswith(".") and os.path.isfile(os.path.join(d, n))}


STRICT_ORDER = False
FINDINGS_BY_INDEX = False


def load(d, name):
    with open(os.path.join(d, name), "rb") as f:
        raw = f.read()
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return raw, None, False
    n = Normaliser(doc, read_meta(d, ".checkout"), read_meta(d, ".target"),
                   mount_order=not STRICT_ORDER, findings_by_key=not FINDINGS_BY_INDEX)
    return raw, (n.document(doc), n.start), True


def compare_pair(da, db, name, limit):
    """(same?, difference lines "path: what")"""
    ra, na, ja = load(da, name)
    rb, nb, jb = load(db, name)
    if not (ja and jb):
        what = ("A" if not ja else "") + ("B" if not jb else "")
        note = f"(not JSON: {' and '.join(what)}; A {len(ra)} bytes, B {len(rb)} bytes)"
        return ra == rb, [note]
    (na, sa), (nb, sb) = na, nb
    if isinstance(na, dict) and isinstance(nb, dict):
        na, nb = common_order(na, nb)
    if na == nb:
        return True, []
    d = diff(na, nb, limit=limit, ctx=(sa, sb))
    return (not d), d


def pattern(line):
    """The JSON path of a difference line, list indices as *."""
    return re.sub(r"/\d+(?=/|$)", "/*", line.split(": ", 1)[0])


def test_of(name):
    m = re.match(r"^(.*)\.\d+\.json$", name)
    return m[1] if m else name


ALL = 10**9
WHOLE = {"/findings", "/findings/*/code", "/summary/total"}
# (F1: a finding in one capture only, or their order.)
WHOLE_RX = re.compile(r"^(?:/probes/[^/]+/status|/findings/[^/]+|/finding_order)$")


def read_expect(path):
    """[(file globs or None, compiled pattern, source line)] of an --expect
    file."""
    rules, groups = [], {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            m = re.match(r"^@([\w-]+)\s*=\s*(\S+)$", text)
            if m:
                groups[m[1]] = [g for x in m[2].split(",") for g in groups.get(x[1:], [x])
                                if x]
                continue
            parts = text.split()
            if len(parts) > 2 or not parts[-1].startswith("/"):
                raise ValueError(f"{path}:{n}: {text!r}: expected [FILE-GLOB] /JSON/PATH")
            globs = None
            if len(parts) == 2:
                globs = []
                for g in parts[0].split(","):
                    if g.startswith("@"):
                        if g[1:] not in groups:
                            raise ValueError(f"{path}:{n}: {g}: no such group")
                        globs.extend(groups[g[1:]])
                    else:
                        globs.append(g)
            rx = "^" + "/".join("[^/]+" if part == "*" else re.escape(part).replace(r"\*", "[^/]*")
                                for part in parts[-1].split("/")) + "$"
            rules.append((globs, re.compile(rx), line.strip()))
    return rules


def matching(rules, line, name):
    """The rule a difference line of file `name` matches (its path, indices
    kept), or None."""
    path = line.split(": ", 1)[0]
    for glob, rx, src in rules:
        if (glob is None or any(fnmatch.fnmatchcase(name, g) for g in glob)) and rx.match(path):
            return src
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--noise", metavar="DIR", action="append", default=[],
                    help="another capture of A's tree (repeatable)")
    ap.add_argument("--names-from-b", action="store_true",
                    help="compare only the tests B holds")
    ap.add_argument("--diffs", type=int, default=5, help="differences shown per file")
    ap.add_argument("--expect", metavar="FILE",
                    help="the differences made on purpose, a path pattern per line")
    ap.add_argument("--strict-order", action="store_true",
                    help="compare the mount-table lists in their own order (no O1)")
    ap.add_argument("--findings-by-index", action="store_true",
                    help="compare the findings list index by index (no F1)")
    args = ap.parse_args()
    global STRICT_ORDER, FINDINGS_BY_INDEX
    STRICT_ORDER = args.strict_order
    FINDINGS_BY_INDEX = args.findings_by_index
    for d in (args.a, args.b, *args.noise):
        if d is not None and not os.path.isdir(d):
            print(f"compare-reports: {d}: not a directory", file=sys.stderr)
            return 2
    try:
        rules = read_expect(args.expect) if args.expect else []
    except (OSError, ValueError) as e:
        print(f"compare-reports: --expect: {e}", file=sys.stderr)
        return 2
    used = set()
    la, lb = listing(args.a), listing(args.b)
    for d, names in ((args.a, la), (args.b, lb)):
        if not names:
            print(f"compare-reports: {d}: no reports", file=sys.stderr)
            return 2
    if args.names_from_b:
        tests = {test_of(n) for n in lb}
        la = {n for n in la if test_of(n) in tests}
    # noise[name]: the path patterns (list indices as *) at which A and a
    # second capture of its tree differ (None: the file is in only one);
    # anywhere: the exact paths that differ in any file.
    noise, anywhere = {}, set()
    for nd in args.noise:
        ln = listing(nd)
        if args.names_from_b:
            ln = {n for n in ln if test_of(n) in {test_of(x) for x in lb}}
        for name in la ^ ln:
            noise[name] = None
        for name in sorted(la & ln):
            same, detail = compare_pair(args.a, nd, name, ALL)
            if not same and noise.get(name, set()) is not None:
                pats = {pattern(x) for x in detail}
                anywhere.update(x.split(": ", 1)[0] for x in detail)
                # The captures disagree on which findings there are (a
                # deadline cut, the machine's own state): then any value
                # may move, and the whole file is noisy.
                noise[name] = None if (pats & WHOLE or any(WHOLE_RX.match(p) for p in pats)) else noise.get(name, set()) | pats
    counts = {k: 0 for k in ("same", "expected", "differs", "noisy", "only in A", "only in B")}
    not_json = 0
    for name in sorted(la | lb):
        note = None
        if name in la and name in lb:
            same, detail = compare_pair(args.a, args.b, name, ALL)
            if detail and detail[0].startswith("(not JSON"):
                not_json += 1
            if same:
                status = "same"
                note, detail = (detail[0] if detail else None), []
            elif name in noise and (noise[name] is None
                                    or all(pattern(x) in noise[name] for x in detail)):
                status = "noisy"
            elif not detail[0].startswith("(not JSON") and all(
                    x.split(": ", 1)[0] in anywhere for x in detail):
                status = "noisy"
                note = "(differs only at paths where other files are noisy)"
            elif rules and not detail[0].startswith("(not JSON") and all(
                    matching(rules, x, name) or (name in noise and noise[name] is not None
                                           and pattern(x) in noise[name])
                    for x in detail):
                status = "expected"
                hit = sorted({matching(rules, x, name) for x in detail} - {None})
                used.update(hit)
                note = "(" + "; ".join(hit) + ")"
                detail = [x for x in detail if not matching(rules, x, name)]
            else:
                status = "differs"
                if name in noise:
                    # The differences the base captures do not share first.
                    detail.sort(key=lambda x: pattern(x) in noise[name])
                    note = "(a noisy file, but it differs where the base captures agree)"
        else:
            status = "only in A" if name in la else "only in B"
            detail = []
            if name in noise:
                note = f"({status} in the base captures too)"
                status = "noisy"
        counts[status] += 1
        print(f"{status:<10} {name}" + (f"  {note}" if note else ""))
        for d in detail[: args.diffs]:
            print(f"    {d}")
        if len(detail) > args.diffs:
            print(f"    ... and {len(detail) - args.diffs} more")
    for _, _, src in rules:
        if src not in used:
            print(f"unused     {src}")
    print("summary: " + ", ".join(f"{v} {k}" for k, v in counts.items())
          + f" ({not_json} of the pairs not JSON)")
    bad = counts["differs"] + counts["only in A"] + counts["only in B"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
