//! Real-container tests of the secrets probe (the README's Set-up): canary
//! credentials in variables, a host home mounted with real credential
//! files (an ssh-keygen key among them), a real ssh-agent whose socket is
//! mounted, a service-account JWT valid for a year and a shell history with
//! a token. Every case runs selfprobe in every format and searches JSON,
//! text, SARIF, JUnit and stderr for every canary, and what `selfprobe-host diff`
//! and `selfprobe-host summary` print about the report in each of theirs; the
//! clean container reports none of it.
//!
//! Needs what tests/containers.rs needs, plus openssh-client (ssh-keygen,
//! ssh-agent, ssh-add) for the key and agent cases. Network rule: nothing
//! here sends traffic anywhere; the agent is a unix socket of our own.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::canary::{b64, now, random, ALNUM, UPPER};
use crate::common::podman::*;
use serde_json::Value;

/// Canaries: a name and the distinctive part (never the rule's prefix).
struct Canaries(Vec<(String, String)>);

impl Canaries {
    fn add(&mut self, name: &str, tail: String) -> String {
        assert!(tail.len() >= 8);
        self.0.push((name.to_string(), tail.clone()));
        tail
    }

    /// Fails on any 8-byte window of any canary in any output.
    fn assert_absent(&self, outputs: &[(&str, &str)]) {
        for (name, c) in &self.0 {
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
}

/// The JSON run (checked by the caller) and the stdout and stderr of a run
/// in every other format.
fn probe_all(img: &str, flags: &[&str], args: &[&str]) -> (Run, Vec<(String, String)>) {
    let r = probe(img, flags, args);
    let mut outs = vec![
        ("json".to_string(), serde_json::to_string(&r.json).unwrap()),
        ("json stderr".to_string(), r.stderr.clone()),
    ];
    for format in ["text", "sarif", "junit"] {
        let name = unique("ctr");
        let mut cmd = podman();
        cmd.args(["run", "--rm", "--name", &name])
            .args(flags)
            .arg(img)
            .args([IN_IMAGE, "--format", format])
            .args(args);
        let _shared = MACHINE.read().unwrap_or_else(|e| e.into_inner());
        let out = run_bounded(cmd, RUN_TIMEOUT, Some(&name)).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            out.stdout.len() > 100,
            "the {format} run produced no report: {}\n{}",
            out.stdout,
            out.stderr
        );
        outs.push((format.to_string(), out.stdout));
        outs.push((format!("{format} stderr"), out.stderr));
    }
    // And what the host-side commands print about the report.
    outs.extend(crate::common::fleet::host_side_outputs(&r.json));
    (r, outs)
}

fn check_no_leak(c: &Canaries, outs: &[(String, String)]) {
    let o: Vec<(&str, &str)> = outs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    c.assert_absent(&o);
}

fn score(r: &Run, control: &str) -> Value {
    r.json["scorecard"]["controls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["control"] == control)
        .map(|c| c["score"].clone())
        .unwrap_or(Value::Null)
}

fn ssh_tools(test: &str) -> bool {
    for t in ["ssh-keygen", "ssh-agent", "ssh-add"] {
        if Command::new(t)
            .arg("-?")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_err()
        {
            skip_or_fail(
                test,
                &format!("{t} not found; apt-get install -y openssh-client"),
            );
            return false;
        }
    }
    true
}

/// `ssh-keygen -t ed25519 -N ''` into `path`; returns the private key's
/// body lines after the first (the key material: the canary).
fn keygen(path: &Path) -> String {
    let st = Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "selfprobe-test",
            "-f",
        ])
        .arg(path)
        .stdin(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "ssh-keygen failed");
    let text = std::fs::read_to_string(path).unwrap();
    let body: Vec<&str> = text.lines().filter(|l| !l.starts_with("-----")).collect();
    body[1..].concat()
}

#[test]
fn variables_holding_canary_tokens() {
    let Some(img) = setup("variables_holding_canary_tokens") else {
        return;
    };
    let mut c = Canaries(Vec::new());
    let vars = [
        (
            "GITHUB_TOKEN",
            format!("ghp_{}", c.add("ghp", random(36, ALNUM))),
        ),
        (
            "AWS_ACCESS_KEY_ID",
            format!("AKIA{}", c.add("akia", random(16, UPPER))),
        ),
        (
            "AWS_SECRET_ACCESS_KEY",
            c.add("aws secret", random(40, ALNUM)),
        ),
        (
            "SLACK_HOOK",
            format!("xoxb-{}", c.add("xoxb", random(40, ALNUM))),
        ),
        (
            "NPM_CONFIG_TOKEN",
            format!("npm_{}", c.add("npm", random(36, ALNUM))),
        ),
        (
            "OPENAI_API_KEY",
            format!("sk-{}", c.add("sk", random(48, ALNUM))),
        ),
        ("CI_DEPLOY_PASSWORD", c.add("password", random(20, ALNUM))),
        (
            "DATABASE_URL",
            format!(
                "postgres://app:{}@db:5432/app",
                c.add("db", random(24, ALNUM))
            ),
        ),
    ];
    let mut flags: Vec<String> = Vec::new();
    for (k, v) in &vars {
        flags.push("-e".into());
        flags.push(format!("{k}={v}"));
    }
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let (r, outs) = probe_all(img, &flags, &[]);
    let mut ck = r.check();
    for (k, rule) in [
        ("GITHUB_TOKEN", "value prefix ghp_"),
        ("AWS_ACCESS_KEY_ID", "value prefix AKIA"),
        ("AWS_SECRET_ACCESS_KEY", "name *SECRET_ACCESS_KEY"),
        ("SLACK_HOOK", "value prefix xoxb-"),
        ("NPM_CONFIG_TOKEN", "value prefix npm_"),
        ("OPENAI_API_KEY", "value prefix sk-"),
        ("CI_DEPLOY_PASSWORD", "name *PASSWORD"),
        ("DATABASE_URL", "value url with user:password@"),
    ] {
        ck.evidence("secret.env", k, "/evidence/rule", rule.into());
    }
    ck.exit(1)
        .lacks("secret.env", "PATH")
        .lacks("secret.env", "HOSTNAME")
        .lacks("secret.env", "HOME")
        .lacks_code("secret.process-env")
        .lacks_code("secret.file")
        .probes_ok();
    if score(&r, "secret-boundary") != 0 {
        ck.fail(format!(
            "secret-boundary score {} (want 0)",
            score(&r, "secret-boundary")
        ));
    }
    lacks_common(&mut ck);
    ck.done();
    check_no_leak(&c, &outs);
}

#[test]
fn host_home_with_credentials_and_history() {
    let test = "host_home_with_credentials_and_history";
    let Some(img) = setup(test) else { return };
    if !ssh_tools(test) {
        return;
    }
    let home = TempPath::dir_in(Path::new("/home"), "home").unwrap();
    let h = |rel: &str| home.path.join(rel);
    let mut c = Canaries(Vec::new());
    std::fs::create_dir_all(h(".ssh")).unwrap();
    let key = keygen(&h(".ssh/id_ed25519"));
    c.add("ssh key", key);
    std::fs::create_dir_all(h(".aws")).unwrap();
    let aws = c.add("aws", random(40, ALNUM));
    std::fs::write(
        h(".aws/credentials"),
        format!("[default]\naws_access_key_id = AKIAEXAMPLEEXAMPLE00\naws_secret_access_key = {aws}\n[ci]\naws_secret_access_key = {aws}\n"),
    )
    .unwrap();
    std::fs::create_dir_all(h(".kube")).unwrap();
    let kc = c.add("kube client key", b64(random(60, ALNUM).as_bytes(), false));
    std::fs::write(
        h(".kube/config"),
        format!("apiVersion: v1\ncurrent-context: prod-admin\nusers:\n- name: admin\n  user:\n    client-key-data: {kc}\n"),
    )
    .unwrap();
    std::fs::create_dir_all(h(".docker")).unwrap();
    let dpw = random(30, ALNUM);
    let dauth = c.add("docker auth", b64(format!("dev:{dpw}").as_bytes(), false));
    c.add("docker password", dpw);
    std::fs::write(
        h(".docker/config.json"),
        format!(r#"{{"auths":{{"registry.example.org":{{"auth":"{dauth}"}}}}}}"#),
    )
    .unwrap();
    let npm = c.add("npmrc", random(36, ALNUM));
    std::fs::write(
        h(".npmrc"),
        format!("//registry.npmjs.org/:_authToken=npm_{npm}\n"),
    )
    .unwrap();
    let gc = c.add("git-credentials", random(36, ALNUM));
    std::fs::write(
        h(".git-credentials"),
        format!("https://dev:ghp_{gc}@github.com\n"),
    )
    .unwrap();
    let hist = c.add("history", random(36, ALNUM));
    std::fs::write(
        h(".bash_history"),
        format!("ls\ngit status\nexport GITHUB_TOKEN=ghp_{hist}\nmake test\n"),
    )
    .unwrap();
    std::fs::write(h(".bashrc"), "# test\n").unwrap();

    let ws = TempPath::dir("ws").unwrap();
    let flags = [
        "-v".to_string(),
        vol(&home, "/home/dev"),
        "-v".into(),
        vol(&ws, "/workspace"),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let (r, outs) = probe_all(img, &flags, &["--workspace", "/workspace"]);
    let mut ck = r.check();
    ck.exit(1);
    ck.evidence(
        "secret.file",
        "/home/dev/.ssh/id_ed25519",
        "/evidence/format",
        "openssh".into(),
    )
    .evidence(
        "secret.file",
        "/home/dev/.ssh/id_ed25519",
        "/evidence/encrypted",
        false.into(),
    )
    .evidence(
        "secret.file",
        "/home/dev/.ssh/id_ed25519",
        "/evidence/mount",
        "/home/dev".into(),
    )
    .evidence(
        "secret.file",
        "/home/dev/.ssh/id_ed25519",
        "/evidence/mode",
        "0600".into(),
    )
    .evidence(
        "secret.file",
        "/home/dev/.aws/credentials",
        "/evidence/entries",
        serde_json::json!(["default", "ci"]),
    )
    .evidence(
        "secret.file",
        "/home/dev/.kube/config",
        "/evidence/entries",
        serde_json::json!(["prod-admin"]),
    )
    .evidence(
        "secret.file",
        "/home/dev/.docker/config.json",
        "/evidence/entries",
        serde_json::json!(["registry.example.org"]),
    )
    .evidence(
        "secret.file",
        "/home/dev/.npmrc",
        "/evidence/entries",
        serde_json::json!(["//registry.npmjs.org/"]),
    )
    .evidence(
        "secret.file",
        "/home/dev/.git-credentials",
        "/evidence/entries",
        serde_json::json!(["github.com"]),
    )
    .evidence(
        "artifact.shell-history",
        "/home/dev/.bash_history",
        "/evidence/secret_lines",
        1.into(),
    )
    .evidence(
        "artifact.shell-history",
        "/home/dev/.bash_history",
        "/evidence/retention",
        "persistent".into(),
    )
    .has_sev("secret.file", "/home/dev/.aws/credentials", "high")
    .lacks("secret.file", "/home/dev/.ssh/id_ed25519.pub")
    .lacks("secret.file", "/home/dev/.bashrc")
    .has("mount.home-directory", "/home/dev");
    ck.probes_ok();
    lacks_common(&mut ck);
    if score(&r, "secret-boundary") != 0 {
        ck.fail(format!(
            "secret-boundary score {} (want 0)",
            score(&r, "secret-boundary")
        ));
    }
    ck.done();
    check_no_leak(&c, &outs);
    drop(home);
}

/// `ssh-agent -D -a SOCK`, killed on drop.
struct Agent {
    child: Child,
    sock: TempPath,
    _dir: TempPath,
}

impl Agent {
    fn start() -> Agent {
        let dir = TempPath::dir("agent").unwrap();
        let sock = TempPath::file("agent", ".sock");
        let child = Command::new("ssh-agent")
            .arg("-D")
            .arg("-a")
            .arg(&sock.path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn ssh-agent");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::os::unix::net::UnixStream::connect(&sock.path).is_err() {
            assert!(Instant::now() < deadline, "ssh-agent: no socket after 10 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        Agent {
            child,
            sock,
            _dir: dir,
        }
    }

    fn add(&self, key: &Path) {
        let st = Command::new("ssh-add")
            .arg(key)
            .env("SSH_AUTH_SOCK", &self.sock.path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success(), "ssh-add failed");
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn forwarded_ssh_agent_offers_one_identity() {
    let test = "forwarded_ssh_agent_offers_one_identity";
    let Some(img) = setup(test) else { return };
    if !ssh_tools(test) {
        return;
    }
    let agent = Agent::start();
    let keydir = TempPath::dir("key").unwrap();
    let mut c = Canaries(Vec::new());
    c.add("agent key", keygen(&keydir.path.join("id")));
    agent.add(&keydir.path.join("id"));

    // As devcontainer tooling forwards it: the socket mounted, the variable set.
    let flags = [
        "-v".to_string(),
        vol(&agent.sock, "/tmp/ssh-agent.sock"),
        "-e".into(),
        "SSH_AUTH_SOCK=/tmp/ssh-agent.sock".into(),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let (r, outs) = probe_all(img, &flags, &[]);
    let mut ck = r.check();
    let s = "/tmp/ssh-agent.sock";
    ck.exit(1)
        .has_sev("secret.agent-socket", s, "critical")
        .evidence("secret.agent-socket", s, "/evidence/identities", 1.into())
        .evidence("secret.agent-socket", s, "/evidence/protocol", "ssh".into())
        .evidence(
            "secret.agent-socket",
            s,
            "/evidence/origin",
            "env:SSH_AUTH_SOCK".into(),
        )
        .evidence(
            "secret.agent-socket",
            s,
            "/evidence/key_types",
            serde_json::json!(["ssh-ed25519"]),
        )
        .has("mount.socket", s);
    ck.lacks("engine.socket-reachable", s)
        .lacks("engine.socket-present", s)
        .lacks("secret.env", "SSH_AUTH_SOCK")
        .probes_ok();
    lacks_common(&mut ck);
    ck.done();
    check_no_leak(&c, &outs);

    // Mounted without the variable: found as a socket mount and asked.
    let flags = ["-v".to_string(), vol(&agent.sock, "/mnt/agent")];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let r = probe(img, &flags, &[]);
    let mut ck = r.check();
    ck.evidence(
        "secret.agent-socket",
        "/mnt/agent",
        "/evidence/identities",
        1.into(),
    )
    .evidence(
        "secret.agent-socket",
        "/mnt/agent",
        "/evidence/origin",
        "host-mount".into(),
    )
    .probes_ok();
    ck.done();
}

#[test]
fn service_account_token_valid_for_a_year() {
    let Some(img) = setup("service_account_token_valid_for_a_year") else {
        return;
    };
    let mut c = Canaries(Vec::new());
    let claims = format!(
        r#"{{"aud":["https://kubernetes.default.svc"],"exp":{},"iat":{},"iss":"https://kubernetes.default.svc","sub":"system:serviceaccount:ci:builder","kubernetes.io":{{"namespace":"ci","serviceaccount":{{"name":"builder"}}}}}}"#,
        now() + 365 * 86_400,
        now()
    );
    let payload = c.add("jwt payload", b64(claims.as_bytes(), true));
    let sig = c.add("jwt signature", random(86, ALNUM));
    let jwt = format!(
        "{}.{payload}.{sig}",
        b64(br#"{"alg":"RS256","kid":"k1"}"#, true)
    );
    let dir = TempPath::dir("sa").unwrap();
    std::fs::write(dir.path.join("token"), &jwt).unwrap();
    std::fs::write(dir.path.join("namespace"), "ci").unwrap();
    let flags = [
        "-v".to_string(),
        format!(
            "{}:/var/run/secrets/kubernetes.io/serviceaccount:ro",
            dir.arg()
        ),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let (r, outs) = probe_all(img, &flags, &[]);
    let mut ck = r.check();
    let p = "/var/run/secrets/kubernetes.io/serviceaccount/token";
    ck.exit(1)
        .has_sev("secret.token-long-lived", p, "high")
        .evidence(
            "secret.token-long-lived",
            p,
            "/evidence/sub",
            "system:serviceaccount:ci:builder".into(),
        )
        .evidence(
            "secret.token-long-lived",
            p,
            "/evidence/kind",
            "kubernetes-service-account".into(),
        )
        .evidence(
            "secret.token-long-lived",
            p,
            "/evidence/max_token_ttl_s",
            86_400.into(),
        )
        .lacks_code("secret.token-expired")
        .probes_ok();
    if let Some(f) = r.find("secret.token-long-lived", p) {
        let ttl = f["evidence"]["ttl_s"].as_i64().unwrap_or(0);
        if !(364 * 86_400..=365 * 86_400).contains(&ttl) {
            ck.fail(format!("ttl_s {ttl}, want about 365 days"));
        }
        let msg = f["message"].as_str().unwrap_or("");
        if !(msg.contains("364d") || msg.contains("365d")) {
            ck.fail(format!("the message gives no TTL: {msg}"));
        }
    }
    lacks_common(&mut ck);
    ck.done();
    check_no_leak(&c, &outs);

    // A policy that allows a year and a day: the same token passes.
    let pol = TempPath::dir("pol").unwrap();
    std::fs::write(
        pol.path.join("p.toml"),
        "[secrets]\nmax_token_ttl = \"366d\"\n",
    )
    .unwrap();
    let mut flags2: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
    flags2.extend(["-v".into(), format!("{}:/policy:ro", pol.arg())]);
    let flags2: Vec<&str> = flags2.iter().map(String::as_str).collect();
    let r = probe(img, &flags2, &["--policy", "/policy/p.toml"]);
    let mut ck = r.check();
    ck.lacks("secret.token-long-lived", p).probes_ok();
    ck.done();
}

#[test]
fn shell_history_with_a_token() {
    let Some(img) = setup("shell_history_with_a_token") else {
        return;
    };
    let mut c = Canaries(Vec::new());
    let tok = c.add("history token", random(20, ALNUM));
    let dir = TempPath::dir("hist").unwrap();
    std::fs::write(
        dir.path.join("h"),
        format!(": 1700000000:0;cd /src\n: 1700000001:0;curl -H 'PRIVATE-TOKEN: x' https://gitlab.example/api\n: 1700000002:0;glab auth login --token glpat-{tok}\n: 1700000003:0;make\n"),
    )
    .unwrap();
    let flags = [
        "-v".to_string(),
        format!("{}/h:/root/.zsh_history", dir.arg()),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let (r, outs) = probe_all(img, &flags, &[]);
    let mut ck = r.check();
    let p = "/root/.zsh_history";
    ck.exit(1)
        .has_sev("artifact.shell-history", p, "high")
        .evidence(
            "artifact.shell-history",
            p,
            "/evidence/secret_lines",
            2.into(),
        )
        .evidence("artifact.shell-history", p, "/evidence/lines", 4.into())
        .evidence("artifact.shell-history", p, "/evidence/shell", "zsh".into())
        .evidence(
            "artifact.shell-history",
            p,
            "/evidence/persistent",
            true.into(),
        )
        .probes_ok();
    lacks_common(&mut ck);
    ck.done();
    check_no_leak(&c, &outs);
}

#[test]
fn clean_container_reports_no_secrets() {
    let Some(img) = setup("clean_container_reports_no_secrets") else {
        return;
    };
    let ws = TempPath::dir("ws").unwrap();
    std::fs::write(ws.path.join("README.md"), "# app\n").unwrap();
    std::fs::write(ws.path.join(".env.example"), "API_TOKEN=changeme\n").unwrap();
    let flags = [
        "--read-only".to_string(),
        "--cap-drop=all".into(),
        "--user".into(),
        "1000:1000".into(),
        "--network".into(),
        "none".into(),
        "-v".into(),
        vol(&ws, "/workspace"),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let r = probe(img, &flags, &["--workspace", "/workspace"]);
    let mut ck = r.check();
    ck.exit(0)
        .nothing_high()
        .lacks_code("secret.")
        .lacks_code("artifact.shell-history")
        .probes_ok();
    if score(&r, "secret-boundary") != 2 {
        ck.fail(format!(
            "secret-boundary score {} (want 2)",
            score(&r, "secret-boundary")
        ));
    }
    lacks_common(&mut ck);
    ck.done();
}
