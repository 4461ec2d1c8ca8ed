//! Fixture-tree tests of the secrets probe: a tree with canary credentials
//! of every kind, fake SSH and GnuPG agents on real sockets, a
//! service-account token with the projected-volume symlinks, a history with
//! a token, and hostile entries (a FIFO named id_rsa, symlink loops, a
//! symlink out of scope, a 1 GiB sparse credentials file). Every output
//! format (JSON, text, SARIF, JUnit) and stderr is searched for every canary.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::symlink;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::common::canary::{b64, now, random, ALNUM, UPPER};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_selfprobe");
const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
static N: AtomicUsize = AtomicUsize::new(0);

struct Tree {
    dir: PathBuf,
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

impl Tree {
    fn new(tag: &str) -> Tree {
        // Short: unix socket paths must fit in 108 bytes.
        let dir = PathBuf::from(format!(
            "/tmp/sps-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Tree { dir }
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    fn file(&self, rel: &str, content: impl AsRef<[u8]>) {
        let p = self.p(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
    }

    fn dir(&self, rel: &str) {
        fs::create_dir_all(self.p(rel)).unwrap();
    }

    fn run(&self, args: &[&str]) -> Out {
        let o = Command::new(BIN)
            .arg("--root")
            .arg(&self.dir)
            .args(args)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .output()
            .unwrap();
        Out::from(o)
    }
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
    json: Value,
}

impl Out {
    fn from(o: Output) -> Out {
        if crate::common::dump::looks_like_report(&o.stdout) {
            crate::common::dump::report(&o.stdout);
        }
        let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
        Out {
            code: o.status.code().unwrap_or(-1),
            json: serde_json::from_str(&stdout).unwrap_or(Value::Null),
            stdout,
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }

    fn findings(&self) -> &[Value] {
        self.json["findings"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_else(|| panic!("no JSON report: {}\n{}", self.stdout, self.stderr))
    }

    fn list(&self) -> String {
        self.findings()
            .iter()
            .map(|f| format!("  {} {} {}\n", f["code"], f["severity"], f["subject"]))
            .collect()
    }

    fn get(&self, code: &str, subject: &str) -> &Value {
        self.findings()
            .iter()
            .find(|f| f["code"] == code && f["subject"] == subject)
            .unwrap_or_else(|| panic!("missing {code} {subject}; got\n{}", self.list()))
    }

    fn has(&self, code: &str, subject: &str) -> bool {
        self.findings()
            .iter()
            .any(|f| f["code"] == code && f["subject"] == subject)
    }

    fn codes(&self, prefix: &str) -> Vec<String> {
        self.findings()
            .iter()
            .filter(|f| f["code"].as_str().unwrap_or("").starts_with(prefix))
            .map(|f| format!("{} {}", f["code"], f["subject"]))
            .collect()
    }
}

/// A JWT with the given claims and a random signature (the canary part).
fn jwt(claims: &str) -> (String, String) {
    let sig = random(43, ALNUM);
    (
        format!(
            "{}.{}.{sig}",
            b64(br#"{"alg":"RS256","kid":"test"}"#, true),
            b64(claims.as_bytes(), true)
        ),
        sig,
    )
}

/// An unencrypted OpenSSH private key whose key material is random.
fn openssh_key() -> (String, String) {
    let mut b = b"openssh-key-v1\0".to_vec();
    for s in [&b"none"[..], b"none", b""] {
        b.extend((s.len() as u32).to_be_bytes());
        b.extend(s);
    }
    b.extend(1u32.to_be_bytes());
    let mut rnd = vec![0u8; 240];
    fs::File::open("/dev/urandom")
        .unwrap()
        .read_exact(&mut rnd)
        .unwrap();
    b.extend(&rnd);
    let body = b64(&b, false);
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(70)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    // The first line is the constant header of every such key; the rest is
    // the canary.
    let tail = lines[1..].join("");
    (
        format!(
            "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----\n",
            lines.join("\n")
        ),
        tail,
    )
}

/// Fails on any 8-byte window of any canary in any of the outputs.
fn assert_no_leak(outputs: &[(&str, &str)], canaries: &[(String, String)]) {
    for (name, c) in canaries {
        assert!(c.len() >= 8, "{name}: canary too short to check");
        for w in c.as_bytes().windows(8) {
            let w = std::str::from_utf8(w).unwrap();
            for (what, out) in outputs {
                assert!(
                    !out.contains(w),
                    "{what} holds bytes of the {name} canary ({w:?})"
                );
            }
        }
    }
}

fn ssh_identities_answer(keys: &[&str]) -> Vec<u8> {
    let string = |v: &[u8]| {
        let mut o = (v.len() as u32).to_be_bytes().to_vec();
        o.extend_from_slice(v);
        o
    };
    let mut body = vec![12u8];
    body.extend((keys.len() as u32).to_be_bytes());
    for k in keys {
        let mut blob = string(k.as_bytes());
        blob.extend(string(&[7u8; 32]));
        body.extend(string(&blob));
        body.extend(string(b"canary@fixture"));
    }
    let mut msg = (body.len() as u32).to_be_bytes().to_vec();
    msg.extend(body);
    msg
}

/// A fake SSH agent: answers each request-identities with `keys`.
fn fake_ssh_agent(path: PathBuf, keys: &'static [&'static str]) {
    let l = UnixListener::bind(&path).unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            let mut req = [0u8; 5];
            if s.read_exact(&mut req).is_ok() && req == [0, 0, 0, 1, 11] {
                let _ = s.write_all(&ssh_identities_answer(keys));
            }
        }
    });
}

/// A fake gpg-agent (Assuan): greets, answers KEYINFO --list with `n` keys.
fn fake_gpg_agent(path: PathBuf, n: usize) {
    let l = UnixListener::bind(&path).unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            let _ = s.write_all(b"OK Pleased to meet you, process 1\n");
            let mut buf = [0u8; 256];
            let k = s.read(&mut buf).unwrap_or(0);
            if buf[..k].starts_with(b"KEYINFO --list") {
                for i in 0..n {
                    let _ = writeln!(s, "S KEYINFO {:040X} D - - - P - - -", i);
                }
                let _ = s.write_all(b"OK\n");
            }
        }
    });
}

struct Leaky {
    tree: Tree,
    canaries: Vec<(String, String)>,
}

fn leaky() -> Leaky {
    let t = Tree::new("leaky");
    let mut can: Vec<(String, String)> = Vec::new();
    let mut canary = |name: &str, tail: String| {
        can.push((name.to_string(), tail.clone()));
        tail
    };
    let mi = fs::read_to_string(Path::new(DATA).join("plain.mountinfo")).unwrap()
        + "84 80 254:0 /home/alice /home/dev rw,relatime - ext4 /dev/vda rw\n\
           85 80 254:0 /srv/app /workspace rw,relatime - ext4 /dev/vda rw\n";
    t.file("proc/self/mountinfo", mi);
    t.file(
        "proc/self/status",
        fs::read_to_string(Path::new(DATA).join("plain.status")).unwrap(),
    );
    t.dir("dev");
    t.file(
        "etc/passwd",
        "root:x:0:0:root:/root:/bin/sh\ndaemon:x:1:1::/usr/sbin:/usr/sbin/nologin\ndev:x:1000:1000::/home/dev:/bin/bash\n",
    );

    let gh = canary("GITHUB_TOKEN", random(36, ALNUM));
    let akia = canary("AWS_ACCESS_KEY_ID", random(16, UPPER));
    let aws_secret = canary("AWS_SECRET_ACCESS_KEY", random(40, ALNUM));
    let svc = canary("MY_SERVICE_TOKEN", random(32, ALNUM));
    let dbpw = canary("DATABASE_URL", random(24, ALNUM));
    let slack = canary("SLACK", random(40, ALNUM));
    let sk = canary("OPENAI", random(48, ALNUM));
    let (expired, exp_sig) = jwt(&format!(
        r#"{{"iss":"https://issuer.example","sub":"ci-job","aud":"api","exp":{},"iat":{}}}"#,
        now() - 3600,
        now() - 7200
    ));
    canary("ID_TOKEN", exp_sig);
    let env = [
        ("PATH", "/usr/bin:/bin".to_string()),
        ("HOME", "/home/dev".to_string()),
        ("GITHUB_TOKEN", format!("ghp_{gh}")),
        ("AWS_ACCESS_KEY_ID", format!("AKIA{akia}")),
        ("AWS_SECRET_ACCESS_KEY", aws_secret),
        ("MY_SERVICE_TOKEN", svc),
        ("DATABASE_URL", format!("postgres://app:{dbpw}@db:5432/app")),
        ("SLACK_BOT", format!("xoxb-{slack}")),
        ("OPENAI_KEY", format!("sk-{sk}")),
        ("ID_TOKEN", expired),
        ("SSH_AUTH_SOCK", "/tmp/ssh-fx/agent.1".to_string()),
        (
            "VSCODE_GIT_IPC_HANDLE",
            "/tmp/vscode-git-fx.sock".to_string(),
        ),
        ("GITHUB_TOKEN_FILE", "/run/secrets/gh".to_string()),
    ];
    let environ: Vec<u8> = env
        .iter()
        .flat_map(|(k, v)| format!("{k}={v}\0").into_bytes())
        .collect();
    t.file("proc/self/environ", environ);
    // PID 1 shares GITHUB_TOKEN with us and has one of its own.
    let gl = canary("GITLAB_TOKEN", random(20, ALNUM));
    t.file(
        "proc/1/environ",
        format!("GITHUB_TOKEN=ghp_{gh}\0GITLAB_TOKEN=glpat-{gl}\0PATH=/bin\0"),
    );
    t.file("proc/1/comm", "sleep\n");
    t.file("proc/1/status", "Name:\tsleep\nUid:\t0\t0\t0\t0\n");

    // The host home.
    let (key, key_tail) = openssh_key();
    canary("ssh key", key_tail);
    t.file("home/dev/.ssh/id_ed25519", key);
    t.file(
        "home/dev/.ssh/id_ed25519.pub",
        "ssh-ed25519 AAAAC3Nz dev@host\n",
    );
    t.file("home/dev/.ssh/known_hosts", "github.com ssh-ed25519 AAAA\n");
    let aws2 = canary("aws credentials", random(40, ALNUM));
    t.file(
        "home/dev/.aws/credentials",
        format!("[default]\naws_access_key_id = AKIA{akia}\naws_secret_access_key = {aws2}\n"),
    );
    let (kube_jwt, kube_sig) = jwt(&format!(
        r#"{{"iss":"kubernetes/serviceaccount","sub":"system:serviceaccount:default:dev","exp":{}}}"#,
        now() + 90 * 86_400
    ));
    canary("kube token", kube_sig);
    t.file(
        "home/dev/.kube/config",
        format!("apiVersion: v1\ncurrent-context: prod\nusers:\n- name: dev\n  user:\n    token: {kube_jwt}\n"),
    );
    let dock = canary("docker auth", random(30, ALNUM));
    t.file(
        "home/dev/.docker/config.json",
        format!(
            r#"{{"auths":{{"ghcr.io":{{"auth":"{}"}}}}}}"#,
            b64(format!("dev:{dock}").as_bytes(), false)
        ),
    );
    let npm = canary("npm token", random(36, ALNUM));
    t.file(
        "home/dev/.npmrc",
        format!("//registry.npmjs.org/:_authToken=npm_{npm}\n"),
    );
    let gcred = canary("git credentials", random(36, ALNUM));
    t.file(
        "home/dev/.git-credentials",
        format!("https://dev:ghp_{gcred}@github.com\n"),
    );
    let hist = canary("history token", random(36, ALNUM));
    t.file(
        "home/dev/.bash_history",
        format!("ls\ncd /src\nexport GITHUB_TOKEN=ghp_{hist}\ncurl -H 'Authorization: Bearer x' http://127.0.0.1/\nmake\n"),
    );
    t.file(
        "home/dev/.gitconfig",
        "[user]\n\tname = dev\n[credential]\n\thelper = \"!f() { node /tmp/vscode-remote-containers-fx.js $*; }; f\"\n",
    );
    t.file("tmp/vscode-remote-containers-fx.js", "// relay\n");
    let _ipc = UnixListener::bind(t.p("tmp/vscode-git-fx.sock")).unwrap();

    // The service-account token, laid out as the kubelet does.
    let (sa, sa_sig) = jwt(&format!(
        r#"{{"iss":"https://kubernetes.default.svc.cluster.local","aud":["https://kubernetes.default.svc.cluster.local"],"sub":"system:serviceaccount:ci:builder","exp":{},"iat":{},"kubernetes.io":{{"namespace":"ci","warnafter":{}}}}}"#,
        now() + 365 * 86_400,
        now(),
        now() + 3607
    ));
    canary("service-account token", sa_sig);
    let sa_dir = "var/run/secrets/kubernetes.io/serviceaccount";
    t.file(&format!("{sa_dir}/..2026_01_01_00_00_00.1/token"), sa);
    symlink("..2026_01_01_00_00_00.1", t.p(&format!("{sa_dir}/..data"))).unwrap();
    symlink("..data/token", t.p(&format!("{sa_dir}/token"))).unwrap();

    // The workspace.
    let envk = canary(".env", random(32, ALNUM));
    t.file("workspace/.env", format!("DEBUG=1\nAPI_KEY={envk}\n"));
    t.file("workspace/.env.example", "API_KEY=your-key-here\n");
    let nm = canary("node_modules .env", random(32, ALNUM));
    t.file("workspace/node_modules/pkg/.env", format!("SECRET={nm}\n"));
    let pem = canary("pem", random(64, ALNUM));
    t.file(
        "workspace/deploy/id_rsa",
        format!("-----BEGIN RSA PRIVATE KEY-----\n{pem}\n-----END RSA PRIVATE KEY-----\n"),
    );
    // Hostile entries.
    t.dir("workspace/keys");
    nix::unistd::mkfifo(&t.p("workspace/keys/id_rsa"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    symlink(".", t.p("workspace/loop")).unwrap();
    symlink("b", t.p("workspace/a")).unwrap();
    symlink("a", t.p("workspace/b")).unwrap();
    symlink("../../../etc/passwd", t.p("home/dev/.aws/config")).unwrap();
    let f = fs::File::create(t.p("workspace/sparse/.aws/credentials")).or_else(|_| {
        fs::create_dir_all(t.p("workspace/sparse/.aws")).unwrap();
        fs::File::create(t.p("workspace/sparse/.aws/credentials"))
    });
    f.unwrap().set_len(1 << 30).unwrap();

    // The agents.
    t.dir("tmp/ssh-fx");
    fake_ssh_agent(t.p("tmp/ssh-fx/agent.1"), &["ssh-ed25519", "ssh-rsa"]);
    t.dir("home/dev/.gnupg");
    fake_gpg_agent(t.p("home/dev/.gnupg/S.gpg-agent"), 1);
    std::mem::forget(_ipc);

    Leaky {
        tree: t,
        canaries: can,
    }
}

#[test]
fn finds_every_kind_and_leaks_nothing() {
    let l = leaky();
    let t = &l.tree;
    let started = Instant::now();
    let r = t.run(&["--format", "json", "--workspace", "/workspace"]);
    let took = started.elapsed();
    assert_eq!(r.code, 1, "{}", r.stderr);

    // secret.env: names, rules, never values.
    for (name, rule) in [
        ("GITHUB_TOKEN", "value prefix ghp_"),
        ("AWS_ACCESS_KEY_ID", "value prefix AKIA"),
        ("AWS_SECRET_ACCESS_KEY", "name *SECRET_ACCESS_KEY"),
        ("MY_SERVICE_TOKEN", "name *TOKEN"),
        ("DATABASE_URL", "value url with user:password@"),
        ("SLACK_BOT", "value prefix xoxb-"),
        ("OPENAI_KEY", "value prefix sk-"),
        ("ID_TOKEN", "value prefix eyJ"),
    ] {
        let f = r.get("secret.env", name);
        assert_eq!(f["evidence"]["rule"], rule, "{name}");
        assert_eq!(f["severity"], "high");
    }
    for name in [
        "PATH",
        "HOME",
        "SSH_AUTH_SOCK",
        "VSCODE_GIT_IPC_HANDLE",
        "GITHUB_TOKEN_FILE",
    ] {
        assert!(!r.has("secret.env", name), "{name} is not a secret");
    }

    // secret.process-env: pid 1's own token only; the shared one is ours.
    let p = r.get("secret.process-env", "pid 1");
    let vars: Vec<&str> = p["evidence"]["variables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(vars, vec!["GITLAB_TOKEN"]);
    assert_eq!(p["evidence"]["comm"], "sleep");
    assert_eq!(
        r.json["inventory"]["secrets"]["processes"]["shared_with_self"],
        1
    );

    // secret.file, with evidence.
    let key = r.get("secret.file", "/home/dev/.ssh/id_ed25519");
    assert_eq!(key["evidence"]["format"], "openssh");
    assert_eq!(key["evidence"]["encrypted"], false);
    assert_eq!(key["evidence"]["readable"], true);
    assert_eq!(key["evidence"]["mount"], "/home/dev");
    assert_eq!(key["evidence"]["mount_class"], "host-bind");
    assert_eq!(key["severity"], "high");
    for (path, entries) in [
        ("/home/dev/.aws/credentials", vec!["default"]),
        ("/home/dev/.kube/config", vec!["prod"]),
        ("/home/dev/.docker/config.json", vec!["ghcr.io"]),
        ("/home/dev/.npmrc", vec!["//registry.npmjs.org/"]),
        ("/home/dev/.git-credentials", vec!["github.com"]),
        ("/workspace/.env", vec!["API_KEY"]),
    ] {
        let f = r.get("secret.file", path);
        assert_eq!(
            f["evidence"]["entries"],
            serde_json::json!(entries),
            "{path}"
        );
        assert!(f["evidence"]["mode"].as_str().unwrap().starts_with('0'));
    }
    assert_eq!(
        r.get("secret.file", "/workspace/deploy/id_rsa")["evidence"]["format"],
        "pem-rsa"
    );
    for absent in [
        "/workspace/node_modules/pkg/.env",
        "/workspace/.env.example",
        "/home/dev/.ssh/id_ed25519.pub",
        "/home/dev/.ssh/known_hosts",
        "/workspace/keys/id_rsa",
        "/workspace/sparse/.aws/credentials",
        "/home/dev/.aws/config",
    ] {
        assert!(
            !r.has("secret.file", absent),
            "{absent} must not be reported"
        );
    }

    // Agents: a real socket, really asked.
    let a = r.get("secret.agent-socket", "/tmp/ssh-fx/agent.1");
    assert_eq!(a["evidence"]["identities"], 2);
    assert_eq!(a["evidence"]["origin"], "env:SSH_AUTH_SOCK");
    assert_eq!(
        a["evidence"]["key_types"],
        serde_json::json!(["ssh-ed25519", "ssh-rsa"])
    );
    assert_eq!(a["severity"], "critical");
    let g = r.get("secret.agent-socket", "/home/dev/.gnupg/S.gpg-agent");
    assert_eq!(g["evidence"]["protocol"], "gpg");
    assert_eq!(g["evidence"]["identities"], 1);

    // Credential helpers.
    let h = r.get(
        "secret.credential-helper",
        "/home/dev/.gitconfig:credential.helper",
    );
    assert_eq!(h["evidence"]["kind"], "vscode-git-credential-forwarder");
    assert_eq!(h["severity"], "high");
    assert_eq!(
        r.get("secret.credential-helper", "env:VSCODE_GIT_IPC_HANDLE")["evidence"]["exists"],
        true
    );
    assert!(r.has(
        "secret.credential-helper",
        "/tmp/vscode-remote-containers-fx.js"
    ));

    // Tokens.
    let sa = r.get(
        "secret.token-long-lived",
        "/var/run/secrets/kubernetes.io/serviceaccount/token",
    );
    let ttl = sa["evidence"]["ttl_s"].as_i64().unwrap();
    assert!((364 * 86_400..=365 * 86_400).contains(&ttl), "ttl {ttl}");
    assert_eq!(sa["evidence"]["sub"], "system:serviceaccount:ci:builder");
    assert_eq!(sa["evidence"]["namespace"], "ci");
    assert_eq!(sa["evidence"]["max_token_ttl_source"], "default");
    assert!(
        sa["message"].as_str().unwrap().contains("364d")
            || sa["message"].as_str().unwrap().contains("365d")
    );
    assert!(r.has("secret.token-long-lived", "/home/dev/.kube/config user dev"));
    let e = r.get("secret.token-expired", "env:ID_TOKEN");
    assert_eq!(e["evidence"]["iss"], "https://issuer.example");
    assert_eq!(e["severity"], "low");

    // History: two secret-looking lines on a host mount.
    let hist = r.get("artifact.shell-history", "/home/dev/.bash_history");
    assert_eq!(hist["evidence"]["secret_lines"], 2);
    assert_eq!(hist["evidence"]["lines"], 5);
    assert_eq!(hist["evidence"]["retention"], "persistent");
    assert_eq!(hist["severity"], "high");

    // The hostile entries were seen and not opened or followed.
    let s = &r.json["inventory"]["secrets"]["search"];
    assert!(s["special_skipped"].as_u64().unwrap() >= 1, "{s}");
    assert!(s["special_examples"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p == "/workspace/keys/id_rsa"));
    assert!(s["symlinks_out_of_scope"].as_u64().unwrap() >= 1, "{s}");
    assert!(
        s["bytes_read"].as_u64().unwrap() < 4 << 20,
        "read only the heads: {s}"
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let probe = r.json["probes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "secrets")
        .unwrap();
    assert_eq!(probe["status"], "ok");

    // The scorecard: the secret boundary is broken; teardown counts the history.
    let sc = r.json["scorecard"]["controls"].as_array().unwrap();
    let sb = sc
        .iter()
        .find(|c| c["control"] == "secret-boundary")
        .unwrap();
    assert_eq!(sb["score"], 0);

    // Not one canary byte in any format or on stderr.
    let mut outs = vec![
        ("json".to_string(), r.stdout.clone()),
        ("json stderr".to_string(), r.stderr.clone()),
    ];
    for format in ["text", "sarif", "junit"] {
        let o = t.run(&["--format", format, "--workspace", "/workspace"]);
        assert_eq!(o.code, 1, "{format}: {}", o.stderr);
        assert!(o.stdout.contains("secret.agent-socket"), "{format}");
        outs.push((format.to_string(), o.stdout));
        outs.push((format!("{format} stderr"), o.stderr));
    }
    let outs: Vec<(&str, &str)> = outs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    assert_no_leak(&outs, &l.canaries);
}

#[test]
#[should_panic(expected = "holds bytes of the c canary")]
fn the_leak_check_can_fail() {
    let c = random(32, ALNUM);
    let out = format!("prefix ghp_ then {} and more", &c[10..18]);
    assert_no_leak(&[("json", &out)], &[("c".into(), c)]);
}

#[test]
fn policy_ttl_decides_long_lived() {
    let l = leaky();
    let pol = l.tree.p("policy.toml");
    fs::write(&pol, "[secrets]\nmax_token_ttl = \"400d\"\n").unwrap();
    let r = l.tree.run(&[
        "--format",
        "json",
        "--workspace",
        "/workspace",
        "--policy",
        pol.to_str().unwrap(),
    ]);
    assert!(!r.has(
        "secret.token-long-lived",
        "/var/run/secrets/kubernetes.io/serviceaccount/token"
    ));
    let toks = r.json["inventory"]["secrets"]["tokens"].as_array().unwrap();
    assert!(toks
        .iter()
        .any(|t| t["source"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"));
}

#[test]
fn clean_tree_reports_none_of_it() {
    let t = Tree::new("clean");
    t.file(
        "proc/self/mountinfo",
        fs::read_to_string(Path::new(DATA).join("clean.mountinfo")).unwrap(),
    );
    t.file(
        "proc/self/status",
        fs::read_to_string(Path::new(DATA).join("clean.status")).unwrap(),
    );
    t.file(
        "proc/self/environ",
        "PATH=/usr/bin\0HOME=/home/dev\0TERM=xterm\0container=podman\0",
    );
    t.file(
        "etc/passwd",
        "root:x:0:0:root:/root:/bin/sh\ndev:x:1000:1000::/home/dev:/bin/sh\n",
    );
    t.file("home/dev/.profile", "# nothing\n");
    t.file("workspace/src/main.rs", "fn main() {}\n");
    t.file("workspace/.env.example", "API_KEY=changeme\n");
    t.dir("tmp");
    let r = t.run(&["--format", "json", "--workspace", "/workspace"]);
    assert!(r.codes("secret.").is_empty(), "{:?}", r.codes("secret."));
    assert!(r.codes("artifact.").is_empty());
    let sc = r.json["scorecard"]["controls"].as_array().unwrap();
    let sb = sc
        .iter()
        .find(|c| c["control"] == "secret-boundary")
        .unwrap();
    assert_eq!(sb["score"], 2, "{sb}");
}

#[test]
fn symlinked_roots_stay_inside_the_tree_and_silent_sockets_are_bounded() {
    let t = Tree::new("links");
    let mi = fs::read_to_string(Path::new(DATA).join("plain.mountinfo")).unwrap()
        + "84 80 254:0 /run/user/1000/bus /run/bus rw,relatime - tmpfs tmpfs rw\n\
           85 80 254:0 /tmp/.X11-unix/X0 /tmp/display rw,relatime - tmpfs tmpfs rw\n";
    t.file("proc/self/mountinfo", mi);
    t.file("proc/self/environ", "PATH=/bin\0");
    let tok = random(32, ALNUM);
    t.file("real/app/.env", format!("API_TOKEN={tok}\n"));
    symlink("real/app", t.p("ws")).unwrap();
    // An absolute link that, followed naively, would leave the fixture tree.
    symlink("/etc", t.p("ws2")).unwrap();
    // Mounted sockets: one that never accepts, one that accepts and says nothing.
    t.dir("run");
    t.dir("tmp");
    let _never = UnixListener::bind(t.p("run/bus")).unwrap();
    let quiet = UnixListener::bind(t.p("tmp/display")).unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in quiet.incoming().flatten() {
            held.push(s);
        }
    });
    let r = t.run(&["--format", "json", "--workspace", "/ws"]);
    // Each unknown socket costs at most the 150 ms greeting wait and the
    // 300 ms answer wait. (The probe's own clock: the runner's duration_us
    // also counts the wait for the probes collected before it.)
    let took = r.json["inventory"]["secrets"]["elapsed_us"]
        .as_u64()
        .unwrap();
    assert!(
        took < 1_500_000,
        "the secrets probe took {took} us\n{}",
        r.stderr
    );
    assert!(r.has("secret.file", "/ws/.env"), "{}", r.list());
    assert!(
        r.codes("secret.agent-socket").is_empty(),
        "{:?}",
        r.codes("secret.")
    );
    let r2 = t.run(&["--format", "json", "--workspace", "/ws2"]);
    let roots = &r2.json["inventory"]["secrets"]["search"]["roots"];
    let ws2 = roots
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["path"] == "/ws2")
        .unwrap();
    assert_eq!(
        ws2["entries"], 0,
        "the link out of the tree is not followed: {ws2}"
    );
    assert_no_leak(
        &[("json", &r.stdout), ("stderr", &r.stderr)],
        &[("env".into(), tok)],
    );
}
