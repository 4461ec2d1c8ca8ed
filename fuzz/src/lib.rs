//! The bodies of the fuzz targets. They live in one library so that
//! tests/it/fuzz_regressions.rs (which includes this file as a module) runs the
//! very same parsers and invariants over the seeds and every crash ever found,
//! in CI, where nothing is fuzzed.
//!
//! Each body takes the bytes a hostile container, process or engine could
//! hand selfprobe, and asserts more than "no panic": whatever the parser
//! keeps must be bounded by its input, and text that reaches a report must
//! stay short and free of control characters.

use std::borrow::Cow;
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, Instant, UNIX_EPOCH};

use base64ct::{Base64UrlUnpadded, Encoding};
use selfprobe::facts::boundary::{self, Boundary, Inputs, Kind};
use selfprobe::facts::mounts;
use selfprobe::finding::Code;
use selfprobe::finding::Finding;
use selfprobe::policy::Policy;
use selfprobe::probe::network::resolve;
use selfprobe::probe::privilege::{self, PrivFacts, PrivilegedSignals};
use selfprobe::probe::secrets::{self, env, rules, tokens, SecretFacts};
use selfprobe::probe::{repro, sockets};
use selfprobe::util::http1::{self, Canned, HeadError};

/// A target's body: the fuzzer's bytes in, a panic on any broken invariant.
pub type Body = fn(&[u8]);

/// Every target by name: fuzz/run.sh runs the fuzz_targets/ binaries of the
/// same names, and the regression test finds their inputs by these names.
pub const TARGETS: &[(&str, Body)] = &[
    ("mountinfo", mountinfo),
    ("proc_status", proc_status),
    ("uid_map", uid_map),
    ("cgroup", cgroup),
    ("os_release", os_release),
    ("jwt", jwt),
    ("policy_toml", policy_toml),
    ("env_rules", env_rules),
    ("http_head", http_head),
    ("engine_http", engine_http),
    ("dns_answer", dns_answer),
    ("inspect_output", inspect_output),
    ("crosscheck", crosscheck),
    ("dsse_verify", dsse_verify),
    ("summary_inputs", summary_inputs),
    ("diff_inputs", diff_inputs),
    ("engine_record", engine_record),
    ("teardown_inputs", teardown_inputs),
    ("registry_auth", registry_auth),
    ("referrers", referrers),
    ("public_key", public_key),
    ("watch_inputs", watch_inputs),
    ("exec_stream", exec_stream),
];

/// The probes read /proc and files as text; lossy decoding keeps every
/// string the fuzzer makes reachable instead of discarding non-UTF-8 input.
fn text(data: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(data)
}

fn non_blank_lines(t: &str) -> usize {
    t.lines().filter(|l| !l.trim().is_empty()).count()
}

/// Text taken from the probed system into a report: bounded and free of
/// anything a terminal would act on.
pub fn assert_printable(what: &str, s: &str, max_chars: usize) {
    assert!(
        s.chars().count() <= max_chars,
        "{what}: {} chars, more than {max_chars}",
        s.chars().count()
    );
    assert!(
        !s.chars().any(char::is_control),
        "{what}: {s:?} keeps a control character"
    );
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// /proc/self/mountinfo.
pub fn mountinfo(data: &[u8]) {
    let t = text(data);
    let (found, errors) = mounts::parse_mountinfo(&t);
    assert_eq!(
        found.len() + errors.len(),
        non_blank_lines(&t),
        "every non-blank line is either a mount or an error"
    );
    for m in &found {
        // Field 4 is whatever the filesystem shows (nsfs: net:[…]), but
        // never empty; the mount point is always absolute.
        assert!(!m.root.as_os_str().is_empty());
        assert_eq!(m.mount_point.as_os_str().as_bytes().first(), Some(&b'/'));
        let _ = m.read_only();
        let _ = mounts::engine::shape(m);
    }
    for e in &errors {
        assert!(
            e.line >= 1 && e.line <= t.lines().count(),
            "line {} out of range",
            e.line
        );
    }
    for word in t.split([' ', '\n']) {
        let u = mounts::unescape(word);
        assert!(u.len() <= word.len(), "unescaping never grows a field");
        if !word.contains('\\') {
            assert_eq!(u, word.as_bytes(), "nothing to unescape, nothing changed");
        }
    }
    let roots: Vec<String> = found
        .iter()
        .map(|m| m.root.to_string_lossy().into_owned())
        .collect();
    if let Some((id, _)) = repro::mount_container_id(&roots) {
        assert!(is_hex64(&id), "container id {id:?}");
    }
    boundary_of(Inputs {
        mountinfo: Some(t.to_string()),
        ..Inputs::default()
    });
}

/// The boundary decided from hostile text: never a panic, and every piece
/// of evidence short and printable.
fn boundary_of(i: Inputs) {
    let b = boundary::decide(&i);
    for e in &b.evidence {
        assert_printable("boundary evidence", &e.seen, 161);
    }
    let _ = boundary::evaluate(&b);
}

/// /proc/self/status for the privilege facts, /proc/PID/status for the
/// owner of another process's environment.
pub fn proc_status(data: &[u8]) {
    let t = text(data);
    let fields = privilege::parse_status(&t);
    assert!(fields.len() <= t.lines().count());
    for (k, v) in &fields {
        assert_eq!(k.trim(), *k);
        assert_eq!(v.trim(), *v);
    }
    let _ = env::status_uid(&t);
    let Ok(mut f) = privilege::from_status(&t) else {
        return;
    };
    assert!(f.uid.len() >= 2, "facts without a real and effective uid");
    // cap_last_cap comes from another file the container controls.
    for last in [None, Some(40), Some(63), Some(64), Some(u32::MAX)] {
        f.cap_last_cap = last;
        let kinds = [
            Kind::Container,
            Kind::Sandbox,
            Kind::VmContainer,
            Kind::Host,
        ];
        let b = Boundary {
            kind: kinds[(last.unwrap_or(0) % 4) as usize],
            rootless: Some(last.is_some_and(|l| l % 2 == 1)),
            ..Boundary::default()
        };
        let findings =
            privilege::evaluate(&f, &Policy::default(), &PrivilegedSignals::default(), &b);
        // At most one finding per capability bit, plus the handful of
        // whole-process ones (privileged, seccomp, LSM, no_new_privs, userns).
        assert!(findings.len() <= 64 + 8, "{} findings", findings.len());
        let inv = f.inventory();
        for set in [
            "effective",
            "permitted",
            "inheritable",
            "bounding",
            "ambient",
        ] {
            let names = inv["capabilities"][set].as_array().map_or(0, Vec::len);
            assert!(names <= 64, "{set}: {names} capability names");
        }
    }
}

/// /proc/self/uid_map (and gid_map).
pub fn uid_map(data: &[u8]) {
    let t = text(data);
    match privilege::parse_id_map(&t) {
        Ok(map) => {
            assert_eq!(map.len(), non_blank_lines(&t), "one range per line");
            let f = PrivFacts {
                uid_map: map,
                ..PrivFacts::default()
            };
            let _ = f.root_maps_to_host_root();
            let _ = f.inventory();
        }
        Err(e) => assert!(e.to_string().starts_with("uid_map line"), "{e}"),
    }
    boundary_of(Inputs {
        uid_map: Some(t.to_string()),
        ..Inputs::default()
    });
}

/// /proc/self/cgroup, v1 (many hierarchies) or v2 (0::/path).
pub fn cgroup(data: &[u8]) {
    let t = text(data);
    if let Some((id, engine)) = repro::cgroup_container_id(&t) {
        assert!(is_hex64(&id), "container id {id:?}");
        assert!(t.contains(id.as_str()), "an id that is not in the file");
        assert!(
            ["docker", "podman", "cri-o", "containerd", "kubernetes", ""].contains(&engine),
            "engine {engine:?}"
        );
    }
    boundary_of(Inputs {
        cgroup: Some(t.to_string()),
        ns: [("pid".to_string(), 4026532252u64)].into_iter().collect(),
        ..Inputs::default()
    });
}

/// /etc/os-release and /run/.containerenv.
pub fn os_release(data: &[u8]) {
    let t = text(data);
    let all = repro::env_file(&t);
    assert!(all.len() <= t.lines().count(), "more keys than lines");
    let kept = repro::os_release(&t);
    assert!(kept.len() <= 7);
    for (k, v) in &kept {
        assert!(all.contains_key(k), "{k} kept but not in the file");
        assert_printable(k, v, 200);
    }
}

/// Mode byte 0: the rest is header JSON, NUL, payload JSON, encoded here,
/// because random bytes almost never make base64url of JSON. Anything else:
/// the bytes are the token file (or kube config) as read.
fn jwt_text(data: &[u8]) -> String {
    match data.split_first() {
        Some((0, rest)) => {
            let (h, p) = match rest.iter().position(|b| *b == 0) {
                Some(i) => (&rest[..i], &rest[i + 1..]),
                None => (rest, &b"{}"[..]),
            };
            format!(
                "{}.{}.c2ln",
                Base64UrlUnpadded::encode_string(h),
                Base64UrlUnpadded::encode_string(p)
            )
        }
        _ => text(data).into_owned(),
    }
}

fn assert_token_bounded(t: &tokens::Token) {
    for (what, v) in [
        ("alg", &t.alg),
        ("iss", &t.iss),
        ("sub", &t.sub),
        ("namespace", &t.namespace),
    ] {
        if let Some(v) = v {
            assert_printable(what, v, 96);
        }
    }
    assert!(t.aud.len() <= 5, "{} audiences", t.aud.len());
    for a in &t.aud {
        assert_printable("aud", a, 96);
    }
}

/// Service-account tokens, token files named by variables, kube configs.
pub fn jwt(data: &[u8]) {
    let t = jwt_text(data);
    if let Some(b) = selfprobe::util::codec::b64_decode_loose(&t) {
        assert!(b.len() <= t.len() * 3 / 4 + 1);
    }
    let direct = tokens::decode_jwt(&t, "fuzz", "fuzz");
    let file = tokens::from_file_text(&t, "fuzz", "fuzz", false);
    if let Some(d) = &direct {
        assert_eq!(d.format, "jwt");
        assert_token_bounded(d);
        assert_eq!(
            file.as_ref().map(|f| &*f.format),
            Some("jwt"),
            "a JWT file read as something else"
        );
    }
    let kube = tokens::from_kube_config(&t, "kubeconfig");
    assert!(kube.len() <= 16);
    let kube_text = format!(
        "users:\n- name: fuzz\n  user:\n    token: {}\n",
        t.lines().next().unwrap_or("")
    );
    let wrapped = tokens::from_kube_config(&kube_text, "kubeconfig");
    assert!(wrapped.len() <= 1);
    let all: Vec<tokens::Token> = direct.into_iter().chain(file).chain(kube).collect();
    for tok in &all {
        assert_token_bounded(tok);
    }
    // The claims' numbers reach TTL arithmetic and date formatting.
    let n = all.len();
    let facts = SecretFacts {
        tokens: all,
        ..SecretFacts::default()
    };
    let policy = Policy {
        max_token_ttl: Some(Duration::from_secs(8 * 3600)),
        ..Policy::default()
    };
    for now in [0, 1_800_000_000, i64::MAX as u64] {
        let findings = secrets::evaluate(&facts, &policy, UNIX_EPOCH + Duration::from_secs(now));
        assert!(
            findings.len() <= n,
            "{} findings for {n} tokens",
            findings.len()
        );
    }
}

/// The policy file (--policy), written by hand or by whoever controls the
/// repository the workspace checks out.
pub fn policy_toml(data: &[u8]) {
    let t = text(data);
    let max_line = t.matches('\n').count() + 1;
    match Policy::parse("fuzz.toml", &t) {
        Err(e) => {
            assert_eq!(e.file, "fuzz.toml");
            assert!(!e.message.is_empty());
            if e.line > 0 {
                assert!(e.line <= max_line, "line {} of {max_line}", e.line);
                assert!(
                    e.column >= 1 && e.column <= t.len() + 1,
                    "column {}",
                    e.column
                );
            }
            let _ = e.to_string();
        }
        Ok(p) => {
            for ex in &p.exceptions {
                assert!(
                    ex.line >= 1 && ex.line <= max_line,
                    "exception line {}",
                    ex.line
                );
            }
            for d in p.network.allow.iter().chain(&p.network.deny) {
                assert!(
                    d.line >= 1 && d.line <= max_line,
                    "destination line {}",
                    d.line
                );
                let _ = d.target.to_string();
            }
            let mut fs = vec![
                Finding::new(Code::EngineSocketReachable, "/var/run/docker.sock", "fuzz"),
                Finding::new(Code::ReproNoLockfile, "/workspaces/app", "fuzz"),
            ];
            let raised = p.apply(&mut fs, (2026, 12, 1));
            assert!(raised.len() <= p.exceptions.len());
            let _ = p.mount_allowed("/workspaces/app/sub");
        }
    }
}

/// /proc/PID/environ of this and every readable process, classified by the
/// rules of probes/env-secrets.toml; its lines as shell-history lines too.
pub fn env_rules(data: &[u8]) {
    let vars = env::parse_environ(data);
    let pieces = data.split(|b| *b == 0).filter(|kv| !kv.is_empty()).count();
    assert!(
        vars.len() <= pieces,
        "{} variables from {pieces} pieces",
        vars.len()
    );
    let hits = env::scan(&vars);
    assert!(hits.len() <= vars.len());
    assert!(
        hits.windows(2).all(|w| w[0].name < w[1].name),
        "hits are sorted and unique"
    );
    for h in &hits {
        assert_printable("hit name", &h.name, 128);
        assert!(
            vars.iter().any(|(k, _)| secrets::short(k, 128) == h.name),
            "a hit named {:?} for no variable",
            h.name
        );
    }
    let r = rules::env_secrets();
    let t = text(data);
    for line in t.split(['\0', '\n']) {
        let _ = r.line_hit(line);
        for (n, v) in rules::assignments(line) {
            assert!(rules::is_identifier(n), "{n:?}");
            assert!(line.contains(n) && line.contains(v));
        }
    }
}

/// Far enough that no deadline ends a run: the bytes end it.
fn far() -> Instant {
    Instant::now() + Duration::from_secs(3600)
}

/// Byte by byte: a slice comparison per window is a memcmp call, which
/// libFuzzer traces, each one.
fn has_blank_line(b: &[u8]) -> bool {
    b.windows(4)
        .any(|w| w.iter().zip(b"\r\n\r\n").all(|(a, c)| a == c))
}

/// Any HTTP/1 answer, to the network probe (a destination, a proxy, over
/// TCP or TLS) or to the engine-socket probe: the codec's head parser, and
/// its whole reading of an answer, whole and a byte at a time.
pub fn http_head(data: &[u8]) {
    match http1::parse_head(data) {
        Ok(Some((r, used))) => {
            assert!(used <= http1::MAX_HEAD && used <= data.len(), "{used}");
            assert!(data[..used].ends_with(b"\r\n\r\n"));
            assert!(
                !has_blank_line(&data[..used - 1]),
                "the first blank line ends the head"
            );
            assert!((100..=999).contains(&r.status), "status {}", r.status);
            assert_printable("reason", &r.reason, 80);
            assert!(r.reason.is_ascii() && r.reason.trim() == r.reason);
            assert!(r.headers.len() <= http1::MAX_HEADERS);
            for (k, v) in &r.headers {
                assert_eq!(k.trim(), k);
                assert!(!k.bytes().any(|b| b.is_ascii_uppercase()), "{k:?}");
                assert_eq!(v.trim(), v);
            }
            assert!(r.body.is_empty());
            // The head's bytes alone decide it, and one byte fewer is not one.
            assert_eq!(http1::parse_head(&data[..used]), Ok(Some((r, used))));
            assert_eq!(http1::parse_head(&data[..used - 1]), Ok(None));
        }
        Ok(None) => assert!(data.len() < http1::MAX_HEAD && !has_blank_line(data)),
        Err(HeadError::TooLarge) => assert!(data.len() >= http1::MAX_HEAD),
        Err(HeadError::Truncated) => panic!("a cut head is the reader's to say"),
        Err(e) => assert!(has_blank_line(data), "{e} without a whole head"),
    }
    // Read whole for each method and bound; for one of them also in pieces
    // of 1 to 16 bytes (the input's last byte says how many), so that every
    // boundary of the head, a chunk line or a CRLF falls between two reads.
    let piece = 1 + usize::from(data.last().copied().unwrap_or(0) % 16);
    for (method, max, split) in [
        ("GET", 0, false),
        ("GET", 7, false),
        ("GET", 1 << 16, true),
        ("HEAD", 1 << 16, false),
    ] {
        let read = |piece| http1::receive(&mut Canned::new(data, piece), method, max, far());
        let whole = read(usize::MAX);
        match &whole {
            Ok(r) => {
                assert!(r.body.len() <= max.min(data.len()));
                assert!(method != "HEAD" || r.body.is_empty());
                assert!(!(100..200).contains(&r.status) || r.status == 101);
                assert!(matches!(http1::parse_head(data), Ok(Some(_))));
            }
            // Bytes in memory: every failure is the answer's, none the socket's.
            Err(e) => assert!(http1::head_error(e).is_some(), "{e}"),
        }
        if !split {
            continue;
        }
        match (whole, read(piece)) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "the same answer however it is read"),
            (Err(a), Err(b)) => assert_eq!(
                (a.kind(), http1::head_error(&a)),
                (b.kind(), http1::head_error(&b))
            ),
            (a, b) => panic!("read whole: {a:?}; in pieces of {piece}: {b:?}"),
        }
    }
}

/// An engine socket's answers to GET /_ping and GET /version, as the
/// engine-socket probe asks and reads them.
pub fn engine_http(data: &[u8]) {
    let mut peer = Canned::new(data, usize::MAX);
    let a = match sockets::ask(&mut peer, "/_ping", far()) {
        Ok(a) => a,
        Err(e) => {
            // Canned bytes never time out or fail to be written: whatever
            // goes wrong is the bytes not being HTTP.
            assert!(matches!(e, sockets::AskError::NotHttp(_)), "{e:?}");
            assert!(e.to_string().starts_with("not an HTTP answer: "), "{e}");
            return;
        }
    };
    assert!(peer.sent().starts_with(b"GET /_ping HTTP/1.0\r\n"));
    assert!(a.body.len() <= data.len());
    for (k, v) in &a.headers {
        assert_eq!(k.trim(), k);
        assert_eq!(v.trim(), v);
    }
    let mut ans = sockets::EngineAnswer::default();
    if sockets::read_ping(&a, &mut ans) {
        assert_eq!(a.status, 200);
    }
    assert_eq!(ans.ping_status, Some(a.status));
    sockets::read_version(&a, &mut ans);
    for (what, v) in [
        ("server", &ans.server),
        ("api_version", &ans.api_version),
        ("version", &ans.version),
        ("os", &ans.os),
    ] {
        if let Some(v) = v {
            assert_printable(what, v, 120);
        }
    }
    assert!(ans.components.len() <= 8);
    for c in &ans.components {
        assert_printable("component", c, 120);
    }
}

/// A DNS server's answer to selfprobe's own resolver (resolve.rs): the
/// header, questions and A/AAAA records of a message the workspace's
/// resolv.conf server may have crafted.
pub fn dns_answer(data: &[u8]) {
    let Some(a) = resolve::decode_answer(data) else {
        return;
    };
    assert!(data.len() >= 12, "an answer needs a whole header");
    assert_eq!(a.id, u16::from_be_bytes([data[0], data[1]]));
    assert!(data[2] & 0x80 != 0, "only responses are decoded");
    assert!(a.rcode <= 15);
    let an = usize::from(u16::from_be_bytes([data[6], data[7]]));
    assert!(a.addrs.len() <= an, "no more addresses than answer records");
    // Each address is at least its own 4 or 16 bytes of the message.
    let min: usize = a
        .addrs
        .iter()
        .map(|ip| if ip.is_ipv4() { 4 } else { 16 })
        .sum();
    assert!(min <= data.len());
}

// The host side (DESIGN.md §13: what comes back is untrusted input). Each
// body below runs the real reader of something a container, a report's
// author or a registry hands `inspect`, `teardown`, `summary`, `diff` or
// `attest`, and asserts what the output relies on: bounded, and nothing a
// terminal, a browser or a CI viewer would act on.

/// Output for a terminal, JUnit, HTML or SARIF: no control, bidi,
/// zero-width or tag character (util/sanitize.rs's set) other than the
/// renderer's own line breaks.
pub fn assert_inert(what: &str, s: &str) {
    if let Some(c) = s
        .chars()
        .find(|c| *c != '\n' && selfprobe::util::sanitize::is_hazard(*c))
    {
        let at = s.find(c).unwrap_or(0);
        let from = s[..at].char_indices().rev().nth(40).map_or(0, |(i, _)| i);
        panic!(
            "{what}: U+{:04X} reaches the output: …{:?}",
            c as u32,
            &s[from..(at + c.len_utf8())]
        );
    }
}

/// The parts of one input, split at NUL bytes (at most `n`; the last takes
/// the rest).
fn parts(data: &[u8], n: usize) -> Vec<&[u8]> {
    data.splitn(n, |b| *b == 0).collect()
}

/// The key the seeds of dsse_verify, summary_inputs and diff_inputs are
/// signed with (its private half is not kept: the seeds are made once).
pub const SEED_KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILxEy8iDAwMzo/hAk4ZedRtlcMVRe7IBjsRPy8wg1UD+";

fn seed_key() -> selfprobe::keys::VerifyingKey {
    selfprobe::keys::parse_public_key(SEED_KEY).expect("the seed key parses")
}

/// A probe's stdout as `inspect` reads it (outside/inspect.rs read_run):
/// the report, then the envelope, byte for byte, or why not. The first
/// byte picks the exit code and whether a stream overflowed.
pub fn inspect_output(data: &[u8]) {
    use selfprobe::util::command::{Captured, ToolStatus};
    let (mode, out) = data.split_first().unwrap_or((&0, &[]));
    let c = Captured {
        status: if mode & 3 == 0 {
            ToolStatus::Ok
        } else {
            ToolStatus::Failed
        },
        exit_code: Some(i32::from(mode & 3)),
        stdout: out.to_vec(),
        stderr: if mode & 4 != 0 {
            out.to_vec()
        } else {
            Vec::new()
        },
        overflow: (mode & 8 != 0).then_some("stdout"),
        duration: Duration::ZERO,
        reason: None,
    };
    match selfprobe_host::outside::inspect::read_run(&c) {
        Ok((report, envelope, v)) => {
            assert!(mode & 8 == 0, "an overflow is never a report");
            let both = [report.as_slice(), envelope.as_slice()].concat();
            assert!(
                out.starts_with(&both),
                "the two parts are the output's start"
            );
            assert!(
                out[both.len()..].iter().all(u8::is_ascii_whitespace),
                "nothing but blanks after the envelope"
            );
            assert_eq!(v["schema"], selfprobe::model::SCHEMA);
            let again: serde_json::Value =
                serde_json::from_slice(&report).expect("the report part is the JSON read");
            assert_eq!(again, v);
        }
        Err(e) => assert_printable("read_run's reason", &e, 600),
    }
}

/// The cross-check (outside/crosscheck.rs): an engine's record (first
/// part) against a report (second part), for Docker and podman: never a
/// panic, and every disagreement and finding carries a catalogued code.
pub fn crosscheck(data: &[u8]) {
    use selfprobe_host::outside::{crosscheck, engine::Engine, record};
    let p = parts(data, 3);
    let Ok(records) = record::parse_records(p[0]) else {
        return;
    };
    // The third part: paths and what they resolve to in the container, a
    // pair per line (what outside/resolve.rs would have found).
    let resolved: std::collections::BTreeMap<String, String> = p
        .get(2)
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let report: serde_json::Value = match p.get(1).map(|b| serde_json::from_slice(b)) {
        Some(Ok(v)) => v,
        _ => serde_json::json!({}),
    };
    let all: Vec<String> = (0..=40).map(selfprobe::catalog::capability_name).collect();
    for rec in records.iter().take(4) {
        let engine = Engine::offline(rec.engine);
        let ctx = crosscheck::Context {
            rec,
            engine: &engine,
            all_caps: &all,
            asked: None,
            resolved: &resolved,
        };
        let o = crosscheck::compare(&ctx, &report);
        for d in &o.disagreements {
            assert!(d.code.starts_with("disagree."), "{}", d.code);
        }
        for f in &o.findings {
            assert!(
                selfprobe::finding::code_info(&f.code).is_some(),
                "{}",
                f.code
            );
        }
    }
}

/// DSSE verification (attest/verify.rs) of an envelope against the seed
/// key, with and without a nonce and a binary to match. Nothing is
/// attested unless every check passed, and every message is printable.
pub fn dsse_verify(data: &[u8]) {
    use selfprobe::attest::verify::{verify, Inputs};
    for (nonce, binary) in [(None, None), (Some("fuzz-nonce-1"), Some("0".repeat(64)))] {
        let v = verify(&Inputs {
            pubkey: seed_key(),
            nonce,
            binary_sha256: binary.as_deref(),
            envelope: Some(("fuzz.intoto.json", data)),
            sshsig: None,
        });
        if !v.valid() {
            assert!(!v.problems.is_empty());
        }
        for p in &v.problems {
            assert_inert("verify problem", &p.message);
        }
        let text = selfprobe::report::verify::render(&v);
        assert_inert("verify output", &text);
    }
}

/// A summary row (compare/summary.rs row_with) from a report, an envelope
/// and a teardown statement (three parts), read without a key and with
/// the seed key, and rendered in every format: bounded, and no hazard in
/// the text, JUnit, HTML or SARIF.
pub fn summary_inputs(data: &[u8]) {
    use selfprobe_host::compare::input::{Group, Role};
    use selfprobe_host::compare::{html, junit, render, sarif, summary};
    use std::path::{Path, PathBuf};
    let p = parts(data, 3);
    let names = ["w.json", "w.intoto.json", "w.teardown.intoto.json"];
    let roles = [Role::Report, Role::Envelope, Role::Teardown];
    let g = Group {
        name: "w\u{202e}".into(),
        dir: Some(PathBuf::from("/fuzz")),
        files: roles
            .iter()
            .zip(names)
            .take(p.len())
            .map(|(r, n)| (*r, Path::new("/fuzz").join(n)))
            .collect(),
        explicit: false,
    };
    let read = |path: &Path, _: bool| -> Result<Vec<u8>, String> {
        let i = names
            .iter()
            .position(|n| path.ends_with(n))
            .ok_or("no such file")?;
        Ok(p[i].to_vec())
    };
    for keys in [vec![], vec![("seed.pub".to_string(), seed_key())]] {
        let opts = summary::Options {
            keys,
            nonces: None,
            binary_sha256: None,
            host_sha256: None,
        };
        let w = summary::row_with(&g, &opts, None, &read);
        assert!(w.controls.iter().all(|c| c.score.is_none_or(|s| s <= 2)));
        let fleet = summary::Fleet {
            exit: w.exit,
            workspaces: vec![w],
            errors: vec!["\u{1b}[2J".into()],
            notes: vec![],
        };
        assert_inert("summary text", &render::text(&fleet));
        assert_inert("summary junit", &junit::render(&fleet));
        assert_inert("summary html", &html::render(&fleet));
        let sarif = sarif::render(&fleet);
        assert_inert("summary sarif", &sarif);
        let _: serde_json::Value = serde_json::from_str(&sarif).expect("SARIF is JSON");
        let _: serde_json::Value =
            serde_json::from_str(&render::json(&fleet)).expect("the summary's JSON is JSON");
    }
    let mut errors = Vec::new();
    let inspected =
        summary::parse_inspection(Path::new("/fuzz/inspection.json"), data, &mut errors);
    for (stem, i) in &inspected {
        assert!(!stem.is_empty() || i.report.is_some() || i.name.is_empty());
    }
}

/// `diff`'s reading of two inputs (compare/mod.rs diff_side_of: a report
/// or an envelope each, parts one and two), their facts and the diff's
/// text, which must carry no hazard.
pub fn diff_inputs(data: &[u8]) {
    use selfprobe_host::compare::{diff, diff_side_of, facts};
    let p = parts(data, 2);
    let b = p.get(1).copied().unwrap_or(p[0]);
    for key in [None, Some(seed_key())] {
        let mut warnings = Vec::new();
        let a = diff_side_of("A", "a.json", p[0], key.as_ref(), &mut warnings);
        let bb = diff_side_of("B", "b.json", b, key.as_ref(), &mut warnings);
        let (Ok((ra, sa)), Ok((rb, sb))) = (a, bb) else {
            continue;
        };
        let d = diff::compare(&facts::extract(&ra), &facts::extract(&rb), &[], sa, sb);
        assert_inert("diff text", &diff::text(&d));
        let _: serde_json::Value = serde_json::from_str(&diff::json(&d)).expect("diff JSON");
    }
}

/// `docker inspect` / `podman inspect` output (outside/record.rs).
pub fn engine_record(data: &[u8]) {
    use selfprobe_host::outside::record;
    let Ok(records) = record::parse_records(data) else {
        return;
    };
    let all: Vec<String> = (0..=40).map(selfprobe::catalog::capability_name).collect();
    let defaults: Vec<String> = record::DOCKER_DEFAULT_CAPS
        .iter()
        .map(|c| c.to_string())
        .collect();
    for r in &records {
        let b = r.bounding_set(&all, &defaults);
        assert!(b.len() <= all.len());
        if let Some(e) = r.effective_set(&all, &defaults, r.uid()) {
            assert!(e.len() <= all.len());
        }
        let _ = r.volumes().count();
        let _ = r.user_name();
    }
}

/// What teardown reads from an inspection directory: a canary found in a
/// volume (part one), DIR/nonces (part two) and inspection.json (part
/// three); and summary's `--nonces` reader over part two.
pub fn teardown_inputs(data: &[u8]) {
    use selfprobe_host::outside::teardown;
    let p = parts(data, 3);
    let sig = teardown::canary_signature(p[0], "fuzz-nonce-1", "SHA256:fuzz");
    assert!(["valid", "invalid", "unsigned"].contains(&sig), "{sig}");
    let t = text(p.get(1).copied().unwrap_or_default());
    let nonces = teardown::parse_nonces(&t);
    assert!(nonces.len() <= t.lines().count());
    for (k, v) in &nonces {
        assert!(!k.is_empty() && !k.contains(char::is_whitespace), "{k:?}");
        assert_eq!(v.trim(), v);
    }
    if let Ok(n) = selfprobe_host::compare::input::parse_nonces("nonces", &t) {
        assert!(n.len() <= t.lines().count());
    }
    if let Some(insp) = p.get(2) {
        if let Ok((_, _, _, cs)) =
            teardown::parse_inspection(std::path::Path::new("/fuzz/inspection.json"), insp, &nonces)
        {
            for c in &cs {
                assert!(!c.id.is_empty());
            }
        }
    }
}

/// A registry's answers: a 401's challenge, a token service's answer, an
/// error body (registry/auth.rs, registry/client.rs).
pub fn registry_auth(data: &[u8]) {
    use selfprobe_host::registry::{auth, client};
    let t = text(data);
    if let Some(c) = auth::parse_challenge(&t) {
        assert!(!c.scheme.is_empty());
        assert!(c.params.len() <= 16);
        assert!(c.scheme.bytes().all(|b| !b.is_ascii_uppercase()));
    }
    if let Some(tok) = auth::token_of(data) {
        assert!(!tok.is_empty() && tok.bytes().all(|b| b.is_ascii_graphic()));
    }
    let said = client::registry_errors(data);
    assert!(said.chars().count() <= 3 * 162 + 2);
    assert!(!said.chars().any(char::is_control), "{said:?}");
    let q = auth::query_escape(&t);
    assert!(q.bytes().all(|b| b.is_ascii_graphic()));
}

/// A referrers answer (an image index) as `attest fetch` lists it: each
/// digest kept is `algorithm:hex` (it goes into a request line), and the
/// request that would carry it passes the request-line check.
pub fn referrers(data: &[u8]) {
    use selfprobe_host::registry::{client, collect, reference};
    let mut out = Vec::new();
    match collect(data, &mut out) {
        Ok(()) => {
            for r in &out {
                assert_eq!(reference::check_digest(&r.digest), Ok(()));
                let target = format!("/v2/app/manifests/{}", r.digest);
                assert_eq!(client::check_request(&target, &[]), Ok(()));
            }
        }
        Err(e) => assert_inert("referrers error", &e.to_string()),
    }
}

/// A public key file (`--pubkey`: PEM SPKI, an OpenSSH line, `selfprobe
/// pubkey` output).
pub fn public_key(data: &[u8]) {
    let t = text(data);
    match selfprobe::keys::parse_public_key(&t) {
        Ok(k) => {
            let line = selfprobe::keys::public_openssh(&k);
            let back = selfprobe::keys::parse_public_key(&line)
                .map(|k2| selfprobe::keys::keyid(&k2))
                .ok();
            assert_eq!(
                back,
                Some(selfprobe::keys::keyid(&k)),
                "a key read back from its own line"
            );
        }
        Err(e) => assert_inert("key error", &e.to_string()),
    }
}

/// What the watch reads (crates/host/src/watch): an engine's event line
/// (Docker's or podman's, picked by the first byte), an RFC 3339 time from
/// it, and watch.json, which whoever can write the out-dir can change.
pub fn watch_inputs(data: &[u8]) {
    use selfprobe_host::outside::record::EngineKind;
    use selfprobe_host::watch::{events, inspection_dir_name, state};
    let (mode, rest) = data.split_first().unwrap_or((&0, &[]));
    let p = parts(rest, 2);
    let engine = if mode & 1 == 0 {
        EngineKind::Docker
    } else {
        EngineKind::Podman
    };
    if let Ok(Some(ev)) = events::parse_line(engine, p[0]) {
        // An id becomes part of a directory's name: 64 lower-case hex.
        assert!(events::is_engine_id(&ev.id) && ev.id == ev.id.to_ascii_lowercase());
        assert!(ev.name.len() <= p[0].len());
    }
    if let Some(ns) = events::parse_rfc3339_ns(&text(p[0])) {
        assert_eq!(events::parse_rfc3339_ns(&events::rfc3339_ns(ns)), Some(ns));
    }
    events::read_lines(p[0], |l| {
        assert!(l.len() <= events::MAX_LINE && !l.contains(&b'\n'));
        true
    });
    if let Some(bytes) = p.get(1) {
        if let Ok(st) = state::State::parse(std::path::Path::new("/fuzz/watch.json"), bytes) {
            for (id, e) in &st.containers {
                assert!(events::is_engine_id(id));
                if let Some(d) = &e.inspection {
                    let name = inspection_dir_name(d).expect("a name the watch makes");
                    assert!(!name.contains('/') && !name.contains(".."));
                }
            }
        }
    }
}

/// A container's output as Docker's Engine API streams an exec's back
/// (outside/engine_api.rs): the first two bytes are the caps (stdout,
/// stderr, in bytes), the third the size of the pieces the socket hands
/// over. Whatever the pieces, the result is the whole read's; no stream
/// passes its cap; output stops at the first stream past its cap.
pub fn exec_stream(data: &[u8]) {
    use selfprobe_host::outside::engine_api::demultiplex;
    let [out_cap, err_cap, piece, rest @ ..] = data else {
        return;
    };
    let caps = (usize::from(*out_cap) * 4, usize::from(*err_cap) * 4);
    let whole = demultiplex(&[rest], caps);
    let pieces: Vec<&[u8]> = rest.chunks(usize::from(*piece).max(1)).collect();
    let cut = demultiplex(&pieces, caps);
    assert_eq!(whole, cut, "pieces of {piece} bytes read otherwise");
    if let Ok((out, err, overflow)) = whole {
        assert!(out.len() <= caps.0 && err.len() <= caps.1);
        match overflow {
            Some("stdout") => assert_eq!(out.len(), caps.0),
            Some("stderr") => assert_eq!(err.len(), caps.1),
            Some(other) => panic!("overflow on {other}"),
            None => {}
        }
        assert!(out.len() + err.len() <= rest.len());
    }
}
