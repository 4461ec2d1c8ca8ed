//! Coding agents in fixture trees (`--root`): every agent's credential file
//! in a home (canary values), the CLAUDE_CONFIG_DIR and CODEX_HOME
//! variants, agent variables by kind, MCP configurations in the workspace
//! and the home with the policy's approved list, and every path to root
//! (sudo, doas, writable account files, group doors, setuid and
//! file-capability programs). Every output format is searched for every
//! canary. The same home builder serves tests/it/containers_agents.rs.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, UNIX_EPOCH};

use crate::common::canary::{b64, now, random, ALNUM};
use crate::common::fixture::{data, mountinfo_with, Fixture, Run, BIN};
use serde_json::{json, Value};

/// Canaries: a name and the distinctive part, never a rule's own prefix.
#[derive(Default)]
pub struct Canaries(pub Vec<(String, String)>);

impl Canaries {
    pub fn add(&mut self, name: &str, n: usize) -> String {
        let tail = random(n, ALNUM);
        self.0.push((name.to_string(), tail.clone()));
        tail
    }

    /// Fails on any 8-byte window of any canary in any output.
    pub fn assert_absent(&self, outputs: &[(String, String)]) {
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

/// A compact JWS with these claims and a canary signature.
pub fn jwt(c: &mut Canaries, name: &str, claims: Value) -> String {
    let h = b64(br#"{"alg":"RS256","typ":"JWT"}"#, true);
    let p = b64(claims.to_string().as_bytes(), true);
    format!("{h}.{p}.{}", c.add(name, 43))
}

pub fn rfc3339(secs: i64) -> String {
    selfprobe::host::rfc3339(UNIX_EPOCH + Duration::from_secs(secs as u64))
}

/// One credential file an agent leaves in a home, and what a run must say.
pub struct Expect {
    pub rel: &'static str,
    pub kind: &'static str,
    pub agent: &'static str,
    /// The expiry the file states (seconds), if it states one.
    pub expires: Option<i64>,
    /// The token finding its expiry makes, with its subject's suffix after
    /// the path, if any.
    pub token: Option<(&'static str, &'static str)>,
}

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(&p, text).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
}

/// Writes every agent's credential file into `home` with canary values, as
/// each tool lays it out (see probes/credentials.toml for the sources).
pub fn agent_home(home: &Path, c: &mut Canaries) -> Vec<Expect> {
    let t = now();
    let claude_exp = t + 8 * 3600;
    write(
        home,
        ".claude/.credentials.json",
        &json!({"claudeAiOauth": {
            "accessToken": format!("sk-ant-oat01-{}", c.add("claude access", 60)),
            "refreshToken": format!("sk-ant-ort01-{}", c.add("claude refresh", 60)),
            "expiresAt": claude_exp * 1000 + 123,
            "scopes": ["user:inference", "user:profile"],
            "subscriptionType": "max"}})
        .to_string(),
    );
    write(
        home,
        ".claude.json",
        &json!({"numStartups": 12, "installMethod": "npm",
            "primaryApiKey": format!("sk-ant-api03-{}", c.add("claude api key", 80)),
            "projects": {"/workspace": {"allowedTools": [], "mcpServers": {}}}})
        .to_string(),
    );
    let codex_exp = t + 10 * 86_400;
    let access = jwt(
        c,
        "codex access sig",
        json!({"iss": "https://auth.openai.com", "aud": ["https://api.openai.com/v1"], "exp": codex_exp, "iat": t}),
    );
    let id_token = jwt(
        c,
        "codex id sig",
        json!({"exp": t + 3600, "email": "dev@example.com"}),
    );
    write(
        home,
        ".codex/auth.json",
        &json!({"OPENAI_API_KEY": null,
            "tokens": {"id_token": id_token, "access_token": access,
                "refresh_token": format!("rt_{}", c.add("codex refresh", 40)), "account_id": "acct-1"},
            "last_refresh": rfc3339(t - 600)})
        .to_string(),
    );
    let gemini_exp = t - 3600;
    write(
        home,
        ".gemini/oauth_creds.json",
        &format!(
            r#"{{"access_token": "ya29.{}", "refresh_token": "1//0{}", "scope": "https://www.googleapis.com/auth/cloud-platform openid", "token_type": "Bearer", "id_token": "{}", "expiry_date": {}.7791}}"#,
            c.add("gemini access", 100),
            c.add("gemini refresh", 60),
            jwt(c, "gemini id sig", json!({"exp": gemini_exp})),
            gemini_exp * 1000
        ),
    );
    write(
        home,
        ".config/github-copilot/apps.json",
        &json!({"github.com:Iv1.b507a08c87ecfe98": {"user": "dev",
            "oauth_token": format!("ghu_{}", c.add("copilot apps", 36)),
            "githubAppId": "Iv1.b507a08c87ecfe98"}})
        .to_string(),
    );
    write(
        home,
        ".config/github-copilot/hosts.json",
        &json!({"github.com": {"user": "dev",
            "oauth_token": format!("ghu_{}", c.add("copilot hosts", 36))}})
        .to_string(),
    );
    let cursor_exp = t + 60 * 86_400;
    let cursor_access = jwt(
        c,
        "cursor sig",
        json!({"sub": "auth0|user", "exp": cursor_exp}),
    );
    write(
        home,
        ".config/cursor/auth.json",
        &json!({"accessToken": cursor_access, "refreshToken": c.add("cursor refresh", 40)})
            .to_string(),
    );
    write(
        home,
        ".continue/config.yaml",
        &format!(
            "name: Local Assistant\nversion: 1.0.0\nschema: v1\nmodels:\n  - name: GPT-4o\n    provider: openai\n    model: gpt-4o\n    apiKey: sk-proj-{}\n  - name: Claude\n    provider: anthropic\n    apiKey: ${{{{ secrets.ANTHROPIC_API_KEY }}}}\n",
            c.add("continue yaml", 48)
        ),
    );
    write(
        home,
        ".continue/config.json",
        &json!({"models": [{"title": "Mistral", "provider": "mistral", "model": "codestral",
            "apiKey": c.add("continue json", 32)}]})
        .to_string(),
    );
    write(
        home,
        ".aider.conf.yml",
        &format!(
            "model: sonnet\nanthropic-api-key: sk-ant-api03-{}\napi-key:\n  - gemini={}\n",
            c.add("aider anthropic", 80),
            c.add("aider gemini", 30)
        ),
    );
    let aws_exp = t + 2 * 3600;
    write(
        home,
        ".aws/sso/cache/6f3a1e0c9d2b4a58e7c1b2d3f4a5b6c7d8e9f0a1.json",
        &json!({"startUrl": "https://d-1234567890.awsapps.com/start", "region": "us-east-1",
            "accessToken": c.add("aws sso access", 120), "expiresAt": rfc3339(aws_exp).replace(".000", ""),
            "refreshToken": c.add("aws sso refresh", 120), "clientId": "client-1",
            "clientSecret": c.add("aws sso client secret", 64)})
        .to_string(),
    );
    let mut db = b"SQLite format 3\0".to_vec();
    db.extend_from_slice(&[0u8; 84]);
    db.extend_from_slice(
        format!(
            "codewhisperer:odic:token{{\"access_token\":\"{}\",\"refresh_token\":\"{}\",\"expires_at\":\"{}\"}}",
            c.add("amazon q access", 80),
            c.add("amazon q refresh", 80),
            rfc3339(t + 3600)
        )
        .as_bytes(),
    );
    let p = home.join(".local/share/amazon-q/data.sqlite3");
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(&p, &db).unwrap();
    let mut vscdb = b"SQLite format 3\0".to_vec();
    vscdb.extend_from_slice(&[0u8; 200]);
    vscdb.extend_from_slice(
        format!("cursorAuth/accessToken{}", c.add("cursor editor token", 64)).as_bytes(),
    );
    let p = home.join(".config/Cursor/User/globalStorage/state.vscdb");
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(&p, &vscdb).unwrap();

    vec![
        Expect {
            rel: ".claude/.credentials.json",
            kind: "claude-code-oauth",
            agent: "Claude Code",
            expires: Some(claude_exp),
            token: None,
        },
        Expect {
            rel: ".claude.json",
            kind: "claude-code-api-key",
            agent: "Claude Code",
            expires: None,
            token: None,
        },
        Expect {
            rel: ".codex/auth.json",
            kind: "codex-auth",
            agent: "Codex CLI",
            expires: Some(codex_exp),
            token: Some(("secret.token-long-lived", " tokens.access_token")),
        },
        Expect {
            rel: ".gemini/oauth_creds.json",
            kind: "gemini-cli-oauth",
            agent: "Gemini CLI",
            expires: Some(gemini_exp),
            token: Some(("secret.token-expired", "")),
        },
        Expect {
            rel: ".config/github-copilot/apps.json",
            kind: "github-copilot-oauth",
            agent: "GitHub Copilot",
            expires: None,
            token: None,
        },
        Expect {
            rel: ".config/github-copilot/hosts.json",
            kind: "github-copilot-oauth",
            agent: "GitHub Copilot",
            expires: None,
            token: None,
        },
        Expect {
            rel: ".config/cursor/auth.json",
            kind: "cursor-cli-auth",
            agent: "Cursor CLI",
            expires: Some(cursor_exp),
            token: Some(("secret.token-long-lived", " accessToken")),
        },
        Expect {
            rel: ".config/Cursor/User/globalStorage/state.vscdb",
            kind: "cursor-session",
            agent: "Cursor",
            expires: None,
            token: None,
        },
        Expect {
            rel: ".continue/config.yaml",
            kind: "continue-api-key",
            agent: "Continue",
            expires: None,
            token: None,
        },
        Expect {
            rel: ".continue/config.json",
            kind: "continue-api-key",
            agent: "Continue",
            expires: None,
            token: None,
        },
        Expect {
            rel: ".aider.conf.yml",
            kind: "aider-api-key",
            agent: "aider",
            expires: None,
            token: None,
        },
        Expect {
            rel: ".aws/sso/cache/6f3a1e0c9d2b4a58e7c1b2d3f4a5b6c7d8e9f0a1.json",
            kind: "aws-sso-token",
            agent: "Amazon Q (IDE plugins), AWS CLI SSO",
            expires: Some(aws_exp),
            token: None,
        },
        Expect {
            rel: ".local/share/amazon-q/data.sqlite3",
            kind: "amazon-q-token-store",
            agent: "Amazon Q Developer CLI",
            expires: None,
            token: None,
        },
    ]
}

/// A workspace `.mcp.json` whose `github` server carries a literal token
/// (as in issue 14), and a second server given only a reference.
pub fn workspace_mcp(ws: &Path, c: &mut Canaries) {
    write(
        ws,
        ".mcp.json",
        &json!({"mcpServers": {
            "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": format!("ghp_{}", c.add("mcp github pat", 36))}},
            "docs": {"type": "http", "url": "https://mcp.example.com/mcp",
                "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}}})
        .to_string(),
    );
}

/// Every check of one run's JSON report for the agent home at `home`.
pub fn check_agent_home(json: &Value, home: &str, expects: &[Expect]) -> Vec<String> {
    let mut bad = Vec::new();
    let findings = json["findings"].as_array().cloned().unwrap_or_default();
    let find = |code: &str, subject: &str| {
        findings
            .iter()
            .find(|f| f["code"] == code && f["subject"] == subject)
            .cloned()
    };
    for e in expects {
        let path = format!("{home}/{}", e.rel);
        let Some(f) = find("secret.file", &path) else {
            bad.push(format!("no secret.file for {path}"));
            continue;
        };
        let ev = &f["evidence"];
        if ev["kind"] != e.kind {
            bad.push(format!("{path}: kind {} (want {})", ev["kind"], e.kind));
        }
        if ev["agent"] != e.agent {
            bad.push(format!("{path}: agent {} (want {})", ev["agent"], e.agent));
        }
        if ev["mode"] != "0600" && !e.rel.ends_with(".sqlite3") && !e.rel.ends_with(".vscdb") {
            bad.push(format!("{path}: mode {}", ev["mode"]));
        }
        if ev["readable"] != true {
            bad.push(format!("{path}: not readable: {f}"));
        }
        match e.expires {
            Some(exp) => {
                if ev["expires_at"] != exp {
                    bad.push(format!(
                        "{path}: expires_at {} (want {exp})",
                        ev["expires_at"]
                    ));
                }
                if ev["expires"] != rfc3339(exp).as_str() {
                    bad.push(format!("{path}: expires {}", ev["expires"]));
                }
                let msg = f["message"].as_str().unwrap_or("");
                if !msg.contains("expire") {
                    bad.push(format!("{path}: the message shows no expiry: {msg}"));
                }
            }
            None => {
                if !ev["expires_at"].is_null() {
                    bad.push(format!("{path}: an expiry it does not state"));
                }
            }
        }
        if let Some((code, suffix)) = e.token {
            let subject = format!("{path}{suffix}");
            match find(code, &subject) {
                Some(t) if t["evidence"]["exp"] == e.expires.unwrap() => {}
                Some(t) => bad.push(format!("{code} {subject}: {t}")),
                None => bad.push(format!("no {code} for {subject}")),
            }
        }
    }
    for (code, subject) in [
        (
            "secret.token-long-lived",
            format!("{home}/.claude/.credentials.json"),
        ),
        (
            "secret.token-expired",
            format!("{home}/.claude/.credentials.json"),
        ),
        (
            "secret.token-long-lived",
            format!("{home}/.aws/sso/cache/6f3a1e0c9d2b4a58e7c1b2d3f4a5b6c7d8e9f0a1.json"),
        ),
        (
            "secret.token-long-lived",
            format!("{home}/.codex/auth.json tokens.id_token"),
        ),
    ] {
        if find(code, &subject).is_some() {
            bad.push(format!("unexpected {code} {subject}"));
        }
    }
    bad
}

/// `--root` runs in every format: the JSON run and all outputs.
pub fn run_all(fx: &Fixture, args: &[&str], env: &[(&str, &str)]) -> (Run, Vec<(String, String)>) {
    let r = fx.run_env(args, env);
    let mut outs = vec![
        ("json".to_string(), r.stdout.clone()),
        ("json stderr".to_string(), r.stderr.clone()),
    ];
    // The text report groups a code's findings; --verbose shows each
    // finding's own message (an expiry, the agent).
    for format in ["text", "text-verbose", "sarif", "junit"] {
        let mut cmd = Command::new(BIN);
        cmd.arg("--root").arg(&fx.dir).args(args);
        match format.split_once('-') {
            Some((f, _)) => cmd.args(["--format", f, "--verbose"]),
            None => cmd.args(["--format", format]),
        };
        for (k, v) in env {
            cmd.env(k, v);
        }
        let o = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(stdout.len() > 100, "the {format} run wrote no report");
        outs.push((format.to_string(), stdout));
        outs.push((
            format!("{format} stderr"),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        ));
    }
    (r, outs)
}

fn tree(name: &str) -> Fixture {
    let fx = Fixture::container(name, &data("plain.mountinfo"), &data("plain.status"));
    fx.file(
        "etc/passwd",
        "root:x:0:0:root:/root:/bin/sh\ndev:x:1000:1000::/home/dev:/bin/bash\n",
    );
    fx.dir("workspace");
    fx
}

fn text_of<'a>(outs: &'a [(String, String)], what: &str) -> &'a str {
    &outs.iter().find(|(w, _)| w == what).unwrap().1
}

#[test]
fn every_agent_credential_file_in_a_home() {
    let fx = tree("agent-home");
    let mut c = Canaries::default();
    let expects = agent_home(&fx.path("home/dev"), &mut c);
    let (r, outs) = run_all(&fx, &["--workspace", "/workspace"], &[]);
    let bad = check_agent_home(&r.json, "/home/dev", &expects);
    assert!(bad.is_empty(), "{}\n{:#?}", bad.join("\n"), r.pairs());
    c.assert_absent(&outs);
    let text = text_of(&outs, "text-verbose");
    assert!(text.contains("expires in"), "{text}");
    assert!(text.contains("of Claude Code"), "{text}");
    assert!(
        text.contains("with a refresh token that renews it"),
        "{text}"
    );
    assert_eq!(r.code, 1, "the agents' tokens are high findings");
}

#[test]
fn claude_config_dir_and_codex_home_move_the_files() {
    let fx = tree("agent-dirs");
    let mut c = Canaries::default();
    // CLAUDE_CONFIG_DIR and CODEX_HOME point outside any home.
    write(
        &fx.path("opt/claude-cfg"),
        ".credentials.json",
        &json!({"claudeAiOauth": {"accessToken": format!("sk-ant-oat01-{}", c.add("cfg dir access", 60)),
            "refreshToken": format!("sk-ant-ort01-{}", c.add("cfg dir refresh", 60)),
            "expiresAt": (now() + 400 * 86_400) * 1000}})
        .to_string(),
    );
    write(
        &fx.path("opt/claude-cfg"),
        ".claude.json",
        &json!({"primaryApiKey": format!("sk-ant-api03-{}", c.add("cfg dir api", 80)),
            "mcpServers": {"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}}})
        .to_string(),
    );
    write(
        &fx.path("srv/codex"),
        "auth.json",
        &json!({"OPENAI_API_KEY": format!("sk-proj-{}", c.add("codex api key", 60)), "tokens": null}).to_string(),
    );
    // The same credentials file under another name of directory, in the
    // workspace, is recognised by its contents; one without claudeAiOauth
    // is not a credential.
    write(
        &fx.path("workspace/tools/claude-profile"),
        ".credentials.json",
        &json!({"claudeAiOauth": {"refreshToken": format!("sk-ant-ort01-{}", c.add("ws refresh", 60))}}).to_string(),
    );
    write(
        &fx.path("workspace/other"),
        ".credentials.json",
        &json!({"username": "someone", "note": "not a token"}).to_string(),
    );
    fx.file(
        "proc/self/environ",
        "PATH=/usr/bin:/bin\0CLAUDE_CONFIG_DIR=/opt/claude-cfg\0CODEX_HOME=/srv/codex\0",
    );
    let (r, outs) = run_all(&fx, &["--workspace", "/workspace"], &[]);
    c.assert_absent(&outs);
    let f = r.find("secret.file", "/opt/claude-cfg/.credentials.json");
    assert_eq!(f["evidence"]["origin"], "env:CLAUDE_CONFIG_DIR");
    assert_eq!(f["evidence"]["kind"], "claude-code-oauth");
    let t = r.find(
        "secret.token-long-lived",
        "/opt/claude-cfg/.credentials.json",
    );
    assert!(
        t["message"].as_str().unwrap().contains("refresh token"),
        "{t}"
    );
    let f = r.find("secret.file", "/opt/claude-cfg/.claude.json");
    assert_eq!(f["evidence"]["entries"], json!(["primaryApiKey"]));
    let f = r.find("secret.file", "/srv/codex/auth.json");
    assert_eq!(f["evidence"]["entries"], json!(["OPENAI_API_KEY"]));
    assert_eq!(f["evidence"]["origin"], "env:CODEX_HOME");
    let f = r.find(
        "secret.file",
        "/workspace/tools/claude-profile/.credentials.json",
    );
    assert_eq!(f["evidence"]["refresh_token"], true);
    assert!(!r.has("secret.file", "/workspace/other/.credentials.json"));
    // ~/.claude.json under CLAUDE_CONFIG_DIR is read for MCP servers too.
    let servers = r.json["inventory"]["secrets"]["mcp"]["servers"]
        .as_array()
        .unwrap();
    assert!(
        servers
            .iter()
            .any(|s| s["name"] == "memory" && s["config"] == "/opt/claude-cfg/.claude.json"),
        "{servers:?}"
    );
}

#[test]
fn agent_variables_are_named_by_kind() {
    let fx = tree("agent-vars");
    let mut c = Canaries::default();
    let vars = [
        (
            "ANTHROPIC_API_KEY",
            format!("sk-ant-api03-{}", c.add("anthropic", 80)),
            "anthropic-api-key",
            "value prefix sk-ant-api03-",
        ),
        (
            "OPENAI_API_KEY",
            format!("sk-proj-{}", c.add("openai", 60)),
            "openai-project-key",
            "value prefix sk-proj-",
        ),
        (
            "GEMINI_API_KEY",
            format!("AIza{}", c.add("gemini", 35)),
            "google-api-key",
            "value prefix AIza",
        ),
        (
            "GOOGLE_API_KEY",
            c.add("google plain", 30),
            "google-api-key",
            "name GOOGLE_API_KEY",
        ),
        (
            "CLAUDE_CODE_OAUTH_TOKEN",
            format!("sk-ant-oat01-{}", c.add("setup token", 80)),
            "anthropic-oauth-token",
            "value prefix sk-ant-oat01-",
        ),
        (
            "ANTHROPIC_AUTH_TOKEN",
            c.add("auth token", 30),
            "anthropic-auth-token",
            "name ANTHROPIC_AUTH_TOKEN",
        ),
        (
            "OPENROUTER_API_KEY",
            format!("sk-or-v1-{}", c.add("openrouter", 64)),
            "openrouter-api-key",
            "value prefix sk-or-v1-",
        ),
    ];
    let mut environ = String::from("PATH=/usr/bin:/bin\0");
    for (k, v, _, _) in &vars {
        environ.push_str(&format!("{k}={v}\0"));
    }
    fx.file("proc/self/environ", &environ);
    let (r, outs) = run_all(&fx, &[], &[]);
    c.assert_absent(&outs);
    for (k, _, kind, rule) in &vars {
        let f = r.find("secret.env", k);
        assert_eq!(f["evidence"]["kind"], *kind, "{k}: {f}");
        assert_eq!(f["evidence"]["rule"], *rule, "{k}: {f}");
    }
    let f = r.find("secret.env", "CLAUDE_CODE_OAUTH_TOKEN");
    assert!(
        f["message"].as_str().unwrap().contains("one year"),
        "the setup-token lifetime is said: {f}"
    );
    let t = r.find("secret.token-long-lived", "env:CLAUDE_CODE_OAUTH_TOKEN");
    assert_eq!(t["evidence"]["kind"], "claude-oauth-token");
    assert!(
        t["message"]
            .as_str()
            .unwrap()
            .contains("claude setup-token"),
        "{t}"
    );
    assert!(!r.has("secret.token-long-lived", "env:ANTHROPIC_API_KEY"));
}

#[test]
fn placeholders_and_empty_shapes_are_not_credentials() {
    let fx = tree("agent-empty");
    let home = fx.path("home/dev");
    write(
        &home,
        ".codex/auth.json",
        r#"{"OPENAI_API_KEY": null, "tokens": null, "last_refresh": null}"#,
    );
    write(
        &home,
        ".claude.json",
        r#"{"numStartups": 3, "projects": {}}"#,
    );
    write(&home, ".config/github-copilot/apps.json", "{}");
    write(
        &home,
        ".continue/config.yaml",
        "models:\n  - name: x\n    provider: openai\n    apiKey: ${{ secrets.OPENAI_API_KEY }}\n",
    );
    write(
        &home,
        ".continue/config.json",
        r#"{"models": [{"title": "t", "apiKey": ""}]}"#,
    );
    write(
        &home,
        ".aider.conf.yml",
        "model: sonnet\n#anthropic-api-key: xxx\n",
    );
    write(
        &home,
        ".claude/settings.json",
        r#"{"env": {"ANTHROPIC_API_KEY": "${ANTHROPIC_API_KEY}"}, "apiKeyHelper": "/usr/local/bin/key"}"#,
    );
    let r = fx.run(&[]);
    let files: Vec<(String, String)> = r
        .pairs()
        .into_iter()
        .filter(|(c, _)| c == "secret.file" || c.starts_with("secret.token"))
        .collect();
    // An unreadable file is reported by name only where the rule says the
    // name alone is one (.codex/auth.json is, .claude.json is not).
    assert!(
        files.iter().all(|(_, s)| !s.starts_with("/home/dev")),
        "empty shapes are not credentials: {files:?}"
    );
}

// ---------------------------------------------------------------------------
// MCP.

fn mcp_tree(name: &str, c: &mut Canaries) -> Fixture {
    let fx = tree(name);
    let ws = fx.path("workspace");
    workspace_mcp(&ws, c);
    write(
        &ws,
        ".vscode/mcp.json",
        &format!(
            "{{\n  // VS Code allows comments\n  \"inputs\": [{{\"type\": \"promptString\", \"id\": \"tok\", \"password\": true}}],\n  \"servers\": {{\n    \"playwright\": {{\"type\": \"stdio\", \"command\": \"npx\", \"args\": [\"@playwright/mcp@latest\", \"--api-key={}\"],}},\n    \"search\": {{\"type\": \"http\", \"url\": \"https://search.example.com/mcp?key={}\", \"headers\": {{\"X-Api-Key\": \"${{input:tok}}\"}}}},\n  }},\n}}\n",
            c.add("vscode arg key", 32),
            c.add("vscode url key", 32)
        ),
    );
    write(
        &ws,
        ".cursor/mcp.json",
        &json!({"mcpServers": {"linear": {"url": "https://mcp.linear.app/sse",
            "headers": {"Authorization": format!("Bearer {}", c.add("cursor bearer", 40))}},
            // A token as the argument after its flag: only the flag's name
            // says it is one (the value has no known prefix).
            "notion": {"command": "npx",
                "args": ["-y", "@notionhq/notion-mcp-server", "--token", c.add("cursor flag token", 32)]}}})
        .to_string(),
    );
    let home = fx.path("home/dev");
    write(
        &home,
        ".claude.json",
        &json!({"numStartups": 5,
            "mcpServers": {"github": {"type": "stdio", "command": "docker",
                "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
                "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_PAT}"}}},
            "projects": {"/workspace": {"mcpServers": {"postgres": {"command": "npx",
                "args": ["-y", "@modelcontextprotocol/server-postgres",
                    format!("postgresql://app:{}@db:5432/app", c.add("postgres password", 20))]}}}}})
        .to_string(),
    );
    write(
        &home,
        ".codex/config.toml",
        &format!(
            "model = \"gpt-5-codex\"\n\n[mcp_servers.context7]\ncommand = \"npx\"\nargs = [\"-y\", \"@upstash/context7-mcp\"]\n\n[mcp_servers.context7.env]\nCONTEXT7_API_KEY = \"{}\"\n\n[mcp_servers.figma]\nurl = \"https://mcp.figma.com/mcp\"\nbearer_token_env_var = \"FIGMA_OAUTH_TOKEN\"\n",
            c.add("context7 key", 32)
        ),
    );
    write(
        &home,
        ".config/Claude/claude_desktop_config.json",
        &json!({"mcpServers": {"filesystem": {"command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/dev/Desktop"]}}})
        .to_string(),
    );
    write(
        &home,
        ".codeium/windsurf/mcp_config.json",
        &json!({"mcpServers": {"slack": {"serverUrl": "https://mcp.slack.example/mcp",
            "headers": {"Authorization": format!("Bearer xoxb-{}", c.add("windsurf slack", 40))}}}})
        .to_string(),
    );
    write(&home, ".cursor/mcp.json", "{ not json");
    fx
}

#[test]
fn mcp_servers_are_listed_by_name_and_never_by_value() {
    let mut c = Canaries::default();
    let fx = mcp_tree("mcp", &mut c);
    fx.file("policy.toml", "[mcp]\napproved = [\"github\", \"figma\"]\n");
    let policy = fx.path("policy.toml");
    let (r, outs) = run_all(
        &fx,
        &[
            "--workspace",
            "/workspace",
            "--policy",
            policy.to_str().unwrap(),
        ],
        &[],
    );
    c.assert_absent(&outs);
    let inv = &r.json["inventory"]["secrets"]["mcp"];
    let servers = inv["servers"].as_array().unwrap();
    let server = |config: &str, name: &str| -> &Value {
        servers
            .iter()
            .find(|s| s["config"] == config && s["name"] == name)
            .unwrap_or_else(|| panic!("no server {name} in {config}: {servers:#?}"))
    };
    let gh = server("/workspace/.mcp.json", "github");
    assert_eq!(gh["command"], "npx");
    assert_eq!(
        gh["args"],
        json!(["-y", "@modelcontextprotocol/server-github"])
    );
    assert_eq!(gh["env"], json!(["GITHUB_PERSONAL_ACCESS_TOKEN"]));
    assert_eq!(gh["client"], "Claude Code (project scope)");
    let docs = server("/workspace/.mcp.json", "docs");
    assert_eq!(
        (docs["transport"].as_str(), docs["url"].as_str()),
        (Some("http"), Some("https://mcp.example.com/mcp"))
    );
    assert_eq!(docs["headers"], json!(["Authorization"]));
    let pw = server("/workspace/.vscode/mcp.json", "playwright");
    assert_eq!(
        pw["args"],
        json!(["@playwright/mcp@latest", "--api-key=<redacted>"])
    );
    let search = server("/workspace/.vscode/mcp.json", "search");
    assert_eq!(
        search["url"],
        "https://search.example.com/mcp?key=<redacted>"
    );
    server("/workspace/.cursor/mcp.json", "linear");
    let notion = server("/workspace/.cursor/mcp.json", "notion");
    assert_eq!(
        notion["args"],
        json!(["-y", "@notionhq/notion-mcp-server", "--token", "<redacted>"])
    );
    let user_gh = server("/home/dev/.claude.json", "github");
    assert_eq!(user_gh["command"], "docker");
    let pg = server("/home/dev/.claude.json", "postgres");
    assert_eq!(pg["project"], "/workspace");
    assert_eq!(pg["args"][2], "<redacted>");
    let c7 = server("/home/dev/.codex/config.toml", "context7");
    assert_eq!(c7["env"], json!(["CONTEXT7_API_KEY"]));
    let figma = server("/home/dev/.codex/config.toml", "figma");
    assert_eq!(figma["env_from"], json!(["FIGMA_OAUTH_TOKEN"]));
    server(
        "/home/dev/.config/Claude/claude_desktop_config.json",
        "filesystem",
    );
    let slack = server("/home/dev/.codeium/windsurf/mcp_config.json", "slack");
    assert_eq!(slack["url"], "https://mcp.slack.example/mcp");
    let broken = inv["configs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["path"] == "/home/dev/.cursor/mcp.json")
        .expect("the broken config is listed");
    assert_eq!(broken["error"], "not valid JSON or TOML");

    // Literal secrets, by where they sit.
    for (subject, field) in [
        (
            "/workspace/.mcp.json github",
            "env GITHUB_PERSONAL_ACCESS_TOKEN",
        ),
        ("/workspace/.vscode/mcp.json playwright", "arg 1"),
        ("/workspace/.vscode/mcp.json search", "url query key"),
        ("/workspace/.cursor/mcp.json linear", "header Authorization"),
        ("/workspace/.cursor/mcp.json notion", "arg 3"),
        ("/home/dev/.claude.json [/workspace] postgres", "arg 2"),
        (
            "/home/dev/.codex/config.toml context7",
            "env CONTEXT7_API_KEY",
        ),
        (
            "/home/dev/.codeium/windsurf/mcp_config.json slack",
            "header Authorization",
        ),
    ] {
        let f = r.find("mcp.secret-in-config", subject);
        assert_eq!(f["severity"], "high");
        assert_eq!(f["control"], "secret-boundary");
        let fields: Vec<&str> = f["evidence"]["secrets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["field"].as_str().unwrap())
            .collect();
        assert!(fields.contains(&field), "{subject}: {fields:?}");
    }
    let gh = r.find("mcp.secret-in-config", "/workspace/.mcp.json github");
    assert_eq!(gh["evidence"]["secrets"][0]["kind"], "github-token");
    for s in [
        "/workspace/.mcp.json docs",
        "/home/dev/.claude.json github",
        "/home/dev/.codex/config.toml figma",
        "/home/dev/.config/Claude/claude_desktop_config.json filesystem",
    ] {
        assert!(
            !r.has("mcp.secret-in-config", s),
            "{s}: a reference is not a secret"
        );
    }

    // Approval: github and figma are approved wherever they are configured.
    for s in [
        "/workspace/.mcp.json github",
        "/home/dev/.claude.json github",
        "/home/dev/.codex/config.toml figma",
    ] {
        assert!(!r.has("mcp.unapproved-server", s), "{s} is approved");
    }
    for s in [
        "/workspace/.mcp.json docs",
        "/workspace/.vscode/mcp.json playwright",
        "/home/dev/.claude.json [/workspace] postgres",
        "/home/dev/.config/Claude/claude_desktop_config.json filesystem",
        "/home/dev/.codeium/windsurf/mcp_config.json slack",
    ] {
        let f = r.find("mcp.unapproved-server", s);
        assert_eq!(f["severity"], "medium", "{s}");
        assert_eq!(f["control"], "secret-boundary");
    }
    let text = text_of(&outs, "text");
    assert!(text.contains("MCP servers ("), "{text}");
    for l in [
        "github",
        "approved",
        "unapproved",
        "https://mcp.example.com/mcp",
        "env GITHUB_PERSONAL_ACCESS_TOKEN",
    ] {
        assert!(
            text.contains(l),
            "the text report's MCP section names {l}:\n{text}"
        );
    }
    let sc = r.json["scorecard"]["controls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["control"] == "secret-boundary")
        .unwrap()
        .clone();
    assert_eq!(
        sc["score"], 0,
        "a literal secret in an MCP config is the 0-point signal: {sc}"
    );
}

#[test]
fn without_an_approved_list_every_server_is_a_low_note() {
    let mut c = Canaries::default();
    let fx = mcp_tree("mcp-nolist", &mut c);
    let r = fx.run(&["--workspace", "/workspace"]);
    let f = r.find("mcp.unapproved-server", "/workspace/.mcp.json github");
    assert_eq!(f["severity"], "low");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("[mcp] approved is not set"),
        "{f}"
    );
    // An empty list approves nothing, at the code's own severity.
    fx.file("policy.toml", "[mcp]\napproved = []\n");
    let policy = fx.path("policy.toml");
    let r = fx.run(&[
        "--workspace",
        "/workspace",
        "--policy",
        policy.to_str().unwrap(),
    ]);
    assert_eq!(
        r.find("mcp.unapproved-server", "/workspace/.mcp.json github")["severity"],
        "medium"
    );
    // A bad [mcp] section is a policy error with its place.
    fx.file("bad.toml", "[mcp]\napproved = [\"github\", 3]\n");
    let bad = fx.path("bad.toml");
    let r = fx.run(&["--policy", bad.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("bad.toml:2:"), "{}", r.stderr);
}

// ---------------------------------------------------------------------------
// Paths to root.

fn status_as(uid: u32, groups: &str, nnp: u8) -> String {
    data("plain.status")
        .replace(
            "Uid:\t0\t0\t0\t0",
            &format!("Uid:\t{uid}\t{uid}\t{uid}\t{uid}"),
        )
        .replace(
            "Gid:\t0\t0\t0\t0",
            &format!("Gid:\t{uid}\t{uid}\t{uid}\t{uid}"),
        )
        .replace("Groups:\t \n", &format!("Groups:\t{groups}\n"))
        .replace("NoNewPrivs:\t0", &format!("NoNewPrivs:\t{nnp}"))
        .replace("CapPrm:\t00000000a80425fb", "CapPrm:\t0000000000000000")
        .replace("CapEff:\t00000000a80425fb", "CapEff:\t0000000000000000")
}

fn root_tree(name: &str, status: &str) -> Fixture {
    let fx = Fixture::container(name, &data("plain.mountinfo"), status);
    fx.file(
        "etc/passwd",
        "root:x:0:0:root:/root:/bin/bash\nvscode:x:1000:1000::/home/vscode:/bin/bash\n",
    );
    fx.file(
        "etc/group",
        "root:x:0:\nsudo:x:27:vscode\ndocker:x:998:\nvscode:x:1000:\n",
    );
    fx.file("etc/sudoers", "Defaults env_reset\nroot ALL=(ALL:ALL) ALL\n%sudo ALL=(ALL:ALL) ALL\n@includedir /etc/sudoers.d\n");
    fx.dir("etc/sudoers.d");
    for f in ["etc/passwd", "etc/group", "etc/sudoers"] {
        fs::set_permissions(fx.path(f), fs::Permissions::from_mode(0o644)).unwrap();
    }
    fs::set_permissions(fx.path("etc/sudoers.d"), fs::Permissions::from_mode(0o755)).unwrap();
    fx.dir("usr/bin");
    fx
}

fn root_findings(r: &Run) -> Vec<(String, String, String)> {
    r.findings()
        .iter()
        .filter(|f| f["code"] == "priv.passwordless-root" || f["code"] == "priv.setuid-binaries")
        .map(|f| {
            (
                f["code"].as_str().unwrap().to_string(),
                f["subject"].as_str().unwrap().to_string(),
                f["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_clean_tree_has_no_path_to_root() {
    let fx = root_tree("root-clean", &status_as(1000, "1000", 0));
    let r = fx.run(&[]);
    assert!(root_findings(&r).is_empty(), "{:?}", root_findings(&r));
    let sudo = &r.json["inventory"]["rootpaths"]["sudo"];
    assert_eq!(sudo["listing"], "not-present");
    assert_eq!(sudo["files_read"], json!(["/etc/sudoers"]));
    assert_eq!(
        r.json["inventory"]["rootpaths"]["boundary"]["kind"],
        "host-root"
    );
    let rec = r.json["probes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "rootpaths")
        .unwrap()
        .clone();
    assert_eq!(rec["status"], "ok", "{rec}");
}

#[test]
fn every_path_to_root_in_a_fixture_tree() {
    let fx = root_tree("root-all", &status_as(1000, "27 998 1000", 0));
    // sudo: the devcontainer default, and a group rule in the same tree.
    fx.file("etc/sudoers.d/vscode", "vscode ALL=(root) NOPASSWD:ALL\n");
    fx.file(
        "etc/sudoers.d/README.txt",
        "vscode ALL=(root) NOPASSWD:ALL\n",
    );
    fx.file("usr/bin/sudo", "");
    fx.file(
        "etc/doas.conf",
        "permit persist :wheel\npermit nopass :sudo\n",
    );
    // A writable /etc/shadow (mode bits judged for uid 1000 under --root).
    fx.file("etc/shadow", "root:*:19000:0:99999:7:::\n");
    fs::set_permissions(fx.path("etc/shadow"), fs::Permissions::from_mode(0o666)).unwrap();
    // The docker group owns the engine socket.
    fx.dir("var/run");
    let sock = std::os::unix::net::UnixListener::bind(fx.path("var/run/docker.sock")).unwrap();
    nix::unistd::chown(
        &fx.path("var/run/docker.sock"),
        Some(0.into()),
        Some(998.into()),
    )
    .unwrap();
    fs::set_permissions(
        fx.path("var/run/docker.sock"),
        fs::Permissions::from_mode(0o660),
    )
    .unwrap();
    // setuid-root programs, one notable, and one that is not root's.
    for (name, owner) in [("su", 0), ("pkexec", 0), ("odd", 1000)] {
        let p = fx.path(&format!("usr/bin/{name}"));
        fs::write(&p, "#!/bin/true\n").unwrap();
        nix::unistd::chown(&p, Some(owner.into()), Some(0.into())).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o4755)).unwrap();
    }
    // A binary with file capabilities (cap_net_raw+ep), where the test
    // filesystem keeps security.* attributes.
    let ping = fx.path("usr/bin/ping");
    fs::write(&ping, "#!/bin/true\n").unwrap();
    fs::set_permissions(&ping, fs::Permissions::from_mode(0o755)).unwrap();
    let caps_set = Command::new("setcap")
        .arg("cap_net_raw+ep")
        .arg(&ping)
        .status()
        .is_ok_and(|s| s.success());

    let r = fx.run(&[]);
    drop(sock);
    let got = root_findings(&r);
    for (code, subject, sev) in [
        ("priv.passwordless-root", "sudo", "high"),
        ("priv.passwordless-root", "doas", "high"),
        ("priv.passwordless-root", "/etc/shadow", "high"),
        ("priv.passwordless-root", "group docker", "high"),
        ("priv.setuid-binaries", "setuid", "low"),
    ] {
        assert!(
            got.contains(&(code.into(), subject.into(), sev.into())),
            "{code} {subject} {sev}: {got:?}"
        );
    }
    assert!(!got.iter().any(|(_, s, _)| s == "/etc/passwd"), "{got:?}");
    let sudo = r.find("priv.passwordless-root", "sudo");
    assert_eq!(
        sudo["evidence"]["sources"],
        json!(["/etc/sudoers.d/vscode:1"]),
        "files with a dot are skipped, as sudo does"
    );
    assert_eq!(sudo["evidence"]["sudo_listing"], "not-run");
    assert!(
        sudo["message"]
            .as_str()
            .unwrap()
            .contains("root on the host"),
        "{sudo}"
    );
    assert_eq!(sudo["evidence"]["uid_map"], json!(["0 0 4294967295"]));
    let doas = r.find("priv.passwordless-root", "doas");
    assert_eq!(doas["evidence"]["rules"][0]["source"], "/etc/doas.conf:2");
    let set = r.find("priv.setuid-binaries", "setuid");
    assert_eq!(set["evidence"]["notable"], json!(["pkexec", "su"]));
    let progs: Vec<&str> = set["evidence"]["programs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    assert!(
        !progs.contains(&"/usr/bin/odd"),
        "setuid to uid 1000 is not root's: {progs:?}"
    );
    if caps_set {
        let ping = set["evidence"]["programs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["path"] == "/usr/bin/ping")
            .unwrap_or_else(|| panic!("file capabilities are read: {progs:?}"))
            .clone();
        assert_eq!(ping["capabilities"], json!(["CAP_NET_RAW"]));
    } else {
        crate::common::podman::skip_or_fail(
            "every_path_to_root_in_a_fixture_tree (file capabilities)",
            "setcap failed or is missing (apt-get install -y libcap2-bin)",
        );
    }
    assert_eq!(r.code, 1);

    // In a user namespace where uid 0 is host uid 100000 the same paths
    // rank lower, and say why; an engine group stays high.
    fx.file("proc/self/uid_map", "         0     100000      65536\n");
    let r = fx.run(&[]);
    let sudo = r.find("priv.passwordless-root", "sudo");
    assert_eq!(sudo["severity"], "medium");
    assert!(
        sudo["message"]
            .as_str()
            .unwrap()
            .contains("host uid 100000"),
        "{sudo}"
    );
    assert_eq!(
        r.find("priv.passwordless-root", "group docker")["severity"],
        "high"
    );

    // With no_new_privs set, setuid programs raise nothing.
    fx.file("proc/self/status", &status_as(1000, "27 998 1000", 1));
    let r = fx.run(&[]);
    assert!(!r.has_code("priv.setuid-binaries"));
}

#[test]
fn a_writable_passwd_and_limited_rules() {
    let fx = root_tree("root-passwd", &status_as(1000, "1000", 0));
    fs::set_permissions(fx.path("etc/passwd"), fs::Permissions::from_mode(0o666)).unwrap();
    fx.file(
        "etc/sudoers.d/apt",
        "vscode ALL=(root) NOPASSWD: /usr/bin/apt-get update, /usr/bin/systemctl restart app\n",
    );
    let r = fx.run(&[]);
    let f = r.find("priv.passwordless-root", "/etc/passwd");
    assert_eq!(f["severity"], "high");
    assert_eq!(f["evidence"]["file"]["checked_with"], "mode bits (--root)");
    // Fixed arguments to a package manager and a service manager: each
    // does what it says (issue 29), so the rule is information.
    assert!(!r.has("priv.passwordless-root", "sudo"), "{:?}", r.pairs());
    let f = r.find("priv.sudo-limited", "sudo");
    assert_eq!(f["severity"], "info");
    let msg = f["message"].as_str().unwrap();
    assert!(
        msg.contains("only /usr/bin/apt-get update, /usr/bin/systemctl restart app")
            && msg.contains("with the fixed arguments `update`"),
        "{f}"
    );
    // The same package manager with any arguments runs hooks as root.
    fx.file(
        "etc/sudoers.d/apt",
        "vscode ALL=(root) NOPASSWD: /usr/bin/apt-get, /usr/bin/systemctl restart app\n",
    );
    let r = fx.run(&[]);
    let f = r.find("priv.passwordless-root", "sudo");
    assert_eq!(f["severity"], "high");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("apt-get with any arguments"),
        "{f}"
    );
    assert!(!r.has_code("priv.sudo-limited"));
    // Running as root, there is no path to find.
    fx.file("proc/self/status", &data("plain.status"));
    let r = fx.run(&[]);
    assert!(!r.has_code("priv.passwordless-root"));
}

// ---------------------------------------------------------------------------
// The agent platforms' own workspaces, from their public files.

/// anthropics/claude-code .devcontainer/Dockerfile at commit
/// 5cfc0a1905ce0c0a9bd81d8a90fe6b62ff614357 (last changed in 5f52517c):
/// `COPY init-firewall.sh /usr/local/bin/`, then as root
/// `echo "node ALL=(root) NOPASSWD: /usr/local/bin/init-firewall.sh" >
/// /etc/sudoers.d/node-firewall && chmod 0440 ...`, user node (uid 1000 in
/// node:20). openai/codex codex-cli/Dockerfile (8b38aa3a) does the same for
/// /usr/local/bin/init_firewall.sh. The script's text is not copied: a
/// stand-in with the same path, owner and mode (the probe never runs it).
pub const CLAUDE_SUDOERS: &str = "node ALL=(root) NOPASSWD: /usr/local/bin/init-firewall.sh\n";
pub const CLAUDE_SCRIPT: &str = "/usr/local/bin/init-firewall.sh";

fn claude_tree(name: &str) -> Fixture {
    let fx = Fixture::container(name, &data("plain.mountinfo"), &status_as(1000, "1000", 0));
    fx.file(
        "etc/passwd",
        "root:x:0:0:root:/root:/bin/bash\nnode:x:1000:1000::/home/node:/bin/bash\n",
    );
    fx.file("etc/group", "root:x:0:\nsudo:x:27:\nnode:x:1000:\n");
    fx.file(
        "etc/sudoers",
        "Defaults env_reset\nroot ALL=(ALL:ALL) ALL\n%sudo ALL=(ALL:ALL) ALL\n@includedir /etc/sudoers.d\n",
    );
    fx.file("etc/sudoers.d/node-firewall", CLAUDE_SUDOERS);
    fs::set_permissions(
        fx.path("etc/sudoers.d/node-firewall"),
        fs::Permissions::from_mode(0o440),
    )
    .unwrap();
    fx.file(
        &CLAUDE_SCRIPT[1..],
        "#!/bin/bash\n# stand-in for init-firewall.sh\nexit 0\n",
    );
    fs::set_permissions(
        fx.path(&CLAUDE_SCRIPT[1..]),
        fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    for d in ["usr", "usr/local", "usr/local/bin", "etc", "etc/sudoers.d"] {
        fs::set_permissions(fx.path(d), fs::Permissions::from_mode(0o755)).unwrap();
    }
    fx.dir("home/node/.claude");
    fx.dir("workspace");
    fx
}

fn control(r: &Run, key: &str) -> Value {
    r.json["scorecard"]["controls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["control"] == key)
        .unwrap()
        .clone()
}

#[test]
fn claude_code_devcontainer_sudo_rule_is_not_a_path_to_root() {
    let fx = claude_tree("claude-devc");
    let r = fx.run(&["--workspace", "/workspace"]);
    assert!(
        !r.has("priv.passwordless-root", "sudo"),
        "a root-owned script the user cannot change is not a path to root: {:?}",
        r.pairs()
    );
    let f = r.find("priv.sudo-limited", "sudo");
    assert_eq!(f["severity"], "info");
    let msg = f["message"].as_str().unwrap();
    assert!(
        msg.contains("sudo lets node (uid 1000) run only /usr/local/bin/init-firewall.sh")
            && msg.contains("(owner uid 0, mode 0755) is not writable by node (uid 1000)")
            && msg.contains("/etc/sudoers.d/node-firewall:1"),
        "{msg}"
    );
    // The fix never asks to remove a rule the devcontainer needs.
    let fix = f["remediation"].as_str().unwrap();
    assert!(fix.starts_with("Nothing to remove"), "{fix}");
    let judged = &f["evidence"]["rules"][0]["judged"][0];
    assert_eq!(judged["verdict"], "limited", "{judged}");
    let es = control(&r, "engine-socket");
    assert!(
        !es["decisive"]
            .as_array()
            .unwrap()
            .iter()
            .any(|id| *id == f["id"]),
        "{es}"
    );
    assert_ne!(
        es["score"],
        json!(0),
        "the limited rule alone scores no 0: {es}"
    );

    // The same rule with the script the user's (chown node, as a careless
    // COPY --chown would leave it): a path to root, high, and the
    // engine-socket control 0 on it.
    nix::unistd::chown(
        &fx.path(&CLAUDE_SCRIPT[1..]),
        Some(1000.into()),
        Some(1000.into()),
    )
    .unwrap();
    let r = fx.run(&["--workspace", "/workspace"]);
    let f = r.find("priv.passwordless-root", "sudo");
    assert_eq!(f["severity"], "high");
    let msg = f["message"].as_str().unwrap();
    assert!(
        msg.contains("a way to root: /usr/local/bin/init-firewall.sh: /usr/local/bin/init-firewall.sh (owner uid 1000, mode 0755) is writable by node (uid 1000)"),
        "{msg}"
    );
    assert!(!r.has_code("priv.sudo-limited"));
    let es = control(&r, "engine-socket");
    assert_eq!(es["score"], 0, "{es}");
    assert!(
        es["decisive"]
            .as_array()
            .unwrap()
            .iter()
            .any(|id| *id == f["id"]),
        "{es}"
    );

    // Root-owned again, in a directory the user may write.
    nix::unistd::chown(
        &fx.path(&CLAUDE_SCRIPT[1..]),
        Some(0.into()),
        Some(0.into()),
    )
    .unwrap();
    fs::set_permissions(fx.path("usr/local/bin"), fs::Permissions::from_mode(0o777)).unwrap();
    let r = fx.run(&["--workspace", "/workspace"]);
    let f = r.find("priv.passwordless-root", "sudo");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("the directory /usr/local/bin (owner uid 0, mode 0777) is writable by node"),
        "{f}"
    );
    fs::set_permissions(fx.path("usr/local/bin"), fs::Permissions::from_mode(0o755)).unwrap();

    // An env_keep of LD_PRELOAD makes the same root-owned script a way in.
    fx.file(
        "etc/sudoers.d/node-firewall",
        &format!("Defaults env_keep += \"LD_PRELOAD\"\n{CLAUDE_SUDOERS}"),
    );
    let r = fx.run(&["--workspace", "/workspace"]);
    let f = r.find("priv.passwordless-root", "sudo");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("env_keep keeps LD_PRELOAD"),
        "{f}"
    );
    assert_eq!(f["evidence"]["env_keep"], json!(["LD_PRELOAD"]));
}

/// OpenHands' settings file as its FileSettingsStore writes it
/// (All-Hands-AI/OpenHands at 156d0686c46aafb0fa9d291da6421fb6f64dddc0,
/// openhands/storage/settings/file_settings_store.py: model_dump_json with
/// expose_secrets, so llm_api_key is in the clear; fields from
/// openhands/storage/data_models/settings.py), in ~/.openhands
/// (openhands/core/config/openhands_config.py: file_store_path =
/// '~/.openhands').
pub fn openhands_settings(c: &mut Canaries) -> String {
    json!({
        "language": "en", "agent": "CodeActAgent", "max_iterations": null,
        "security_analyzer": null, "confirmation_mode": false,
        "llm_model": "anthropic/claude-sonnet-4-20250514",
        "llm_api_key": format!("sk-ant-api03-{}", c.add("openhands llm key", 80)),
        "llm_base_url": "", "remote_runtime_resource_factor": 1,
        "secrets_store": {"provider_tokens": {"github": {
            "token": format!("ghp_{}", c.add("openhands github token", 36)),
            "host": "github.com"}}},
        "enable_default_condenser": true, "enable_sound_notifications": false,
        "user_consents_to_analytics": false, "sandbox_base_container_image": null,
        "mcp_config": null, "search_api_key": "", "max_budget_per_task": null
    })
    .to_string()
}

#[test]
fn agent_settings_files_are_searched_for_key_formats() {
    let fx = tree("agent-keys");
    let mut c = Canaries::default();
    let home = fx.path("home/dev");
    write(
        &home,
        ".openhands/settings.json",
        &openhands_settings(&mut c),
    );
    // aider keeps the keys of its OpenRouter login here (aider/main.py).
    write(
        &home,
        ".aider/oauth-keys.env",
        &format!("OPENROUTER_API_KEY=sk-or-v1-{}\n", c.add("aider oauth", 64)),
    );
    // opencode's /connect store: {provider: {type: api, key}}.
    write(
        &home,
        ".local/share/opencode/auth.json",
        &json!({"anthropic": {"type": "api",
            "key": format!("sk-ant-api03-{}", c.add("opencode key", 80))}})
        .to_string(),
    );
    // Settings without a key, and an MCP configuration (the MCP reader's).
    write(
        &home,
        ".openhands-state/settings.json",
        &json!({"language": "en", "llm_model": "gpt-4o", "llm_api_key": null}).to_string(),
    );
    write(
        &home,
        ".gemini/settings.json",
        &json!({"mcpServers": {"gh": {"command": "npx", "env": {
            "GITHUB_PERSONAL_ACCESS_TOKEN": format!("ghp_{}", c.add("gemini mcp", 36))}}}})
        .to_string(),
    );
    let (r, outs) = run_all(&fx, &["--workspace", "/workspace"], &[]);
    c.assert_absent(&outs);
    // oauth-keys.env is a .env file, and the .env rule (earlier in the
    // catalog) judges it: same finding, kind env-file.
    for (path, kind, agent, entry) in [
        (
            "/home/dev/.openhands/settings.json",
            "agent-config-secret",
            json!("OpenHands"),
            "llm_api_key",
        ),
        (
            "/home/dev/.aider/oauth-keys.env",
            "env-file",
            Value::Null,
            "OPENROUTER_API_KEY",
        ),
        (
            "/home/dev/.local/share/opencode/auth.json",
            "agent-config-secret",
            json!("opencode"),
            "key",
        ),
    ] {
        let f = r.find("secret.file", path);
        assert_eq!(f["severity"], "high", "{f}");
        assert_eq!(f["evidence"]["kind"], kind, "{f}");
        assert_eq!(f["evidence"]["agent"], agent, "{f}");
        assert!(
            f["evidence"]["entries"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e == entry),
            "{f}"
        );
    }
    let oh = r.find("secret.file", "/home/dev/.openhands/settings.json");
    assert_eq!(oh["evidence"]["entries"], json!(["llm_api_key", "token"]));
    assert!(!r.has("secret.file", "/home/dev/.openhands-state/settings.json"));
    assert!(!r.has("secret.file", "/home/dev/.gemini/settings.json"));
    assert!(r.has("mcp.secret-in-config", "/home/dev/.gemini/settings.json gh"));
    assert_eq!(control(&r, "secret-boundary")["score"], 0);
    let budget = &r.json["inventory"]["secrets"]["search"]["budget"];
    assert_eq!(budget["max_agent_files"], 256);
}

/// An agent's directory full of files: at most 256 are read, and the
/// search says it did not check the rest.
#[test]
fn agent_directory_files_are_bounded() {
    let fx = tree("agent-many");
    let dir = fx.path("home/dev/.codex");
    fs::create_dir_all(&dir).unwrap();
    for i in 0..400 {
        fs::write(dir.join(format!("f{i:03}.json")), "{}").unwrap();
    }
    let r = fx.run(&["--workspace", "/workspace"]);
    let search = &r.json["inventory"]["secrets"]["search"];
    assert!(
        search["candidates_dropped"].as_u64().unwrap() >= 144,
        "{search}"
    );
    assert!(search["files_checked"].as_u64().unwrap() <= 300, "{search}");
    assert!(
        r.has("probe.incomplete", "secrets:files"),
        "{:?}",
        r.pairs()
    );
}

/// aider's documented docker run (Aider-AI/aider
/// aider/website/docs/install/docker.md at 22a494bb): `docker run -it
/// --volume $(pwd):/app paulgauthier/aider --openai-api-key
/// $OPENAI_API_KEY` makes the key an argument of PID 1.
#[test]
fn an_api_key_on_pid_1s_command_line() {
    let fx = tree("agent-cmdline");
    let mut c = Canaries::default();
    let key = format!("sk-proj-{}", c.add("aider cmdline key", 64));
    fx.file(
        "proc/1/cmdline",
        &format!("/venv/bin/python\0/venv/bin/aider\0--openai-api-key\0{key}\0--model\0gpt-4o\0"),
    );
    fx.file("proc/1/comm", "aider\n");
    fx.file(
        "proc/1/status",
        "Name:\taider\nUid:\t1000\t1000\t1000\t1000\n",
    );
    // Another process with nothing secret on its command line.
    fx.file("proc/7/cmdline", "sleep\0infinity\0");
    let (r, outs) = run_all(&fx, &["--workspace", "/workspace"], &[]);
    c.assert_absent(&outs);
    let f = r.find("secret.process-cmdline", "pid 1");
    assert_eq!(f["severity"], "high");
    assert_eq!(f["evidence"]["comm"], "aider");
    assert_eq!(f["evidence"]["uid"], 1000);
    let a = &f["evidence"]["arguments"][0];
    assert_eq!(
        (a["index"].clone(), a["option"].clone(), a["kind"].clone()),
        (
            json!(3),
            json!("--openai-api-key"),
            json!("openai-project-key")
        ),
        "{f}"
    );
    assert!(!r.has("secret.process-cmdline", "pid 7"));
    assert_eq!(
        r.json["inventory"]["secrets"]["processes"]["cmdlines_read"],
        2
    );
}

/// Agent directories bound from the host: Codex's (`-v
/// ~/.codex:/home/node/.codex`, as OpenClaw's Docker guide documents with
/// OPENCLAW_EXTRA_MOUNTS), OpenHands' documented `-v
/// ~/.openhands:/.openhands`, Claude Code's ~/.claude.json file, one known
/// only by its mount point (gVisor's 9p hides the host path) and one by
/// its host path only.
#[test]
fn agent_configuration_directories_bound_from_the_host() {
    let fx = Fixture::container(
        "agent-binds",
        &mountinfo_with(&[
            "84 80 254:0 /home/alice/.codex /home/node/.codex ro,relatime - ext4 /dev/vda rw",
            "85 80 254:0 /home/alice/.openhands /.openhands rw,relatime - ext4 /dev/vda rw",
            "86 80 254:0 /home/alice/.claude.json /home/node/.claude.json rw,relatime - ext4 /dev/vda rw",
            "87 80 254:0 /srv/cfg/gem /home/node/.gemini rw,relatime - ext4 /dev/vda rw",
            "88 80 254:0 /home/alice/.local/share/opencode /data/oc rw,relatime - ext4 /dev/vda rw",
            "89 80 254:0 /home/alice/src/app /workspace rw,relatime - ext4 /dev/vda rw",
        ]),
        &data("plain.status"),
    );
    for d in [
        "home/node/.codex",
        ".openhands",
        "home/node/.gemini",
        "data/oc",
        "workspace",
    ] {
        fx.dir(d);
    }
    fx.file("home/node/.claude.json", "{}");
    let r = fx.run(&["--workspace", "/workspace"]);
    for (mp, agent) in [
        ("/home/node/.codex", "Codex CLI"),
        ("/.openhands", "OpenHands"),
        ("/home/node/.claude.json", "Claude Code"),
        ("/home/node/.gemini", "Gemini CLI"),
        ("/data/oc", "opencode"),
    ] {
        let f = r.find("mount.config-directory", mp);
        assert_eq!(f["severity"], "high", "{f}");
        assert_eq!(f["evidence"]["agent"], agent, "{f}");
        assert!(f["message"].as_str().unwrap().contains(agent), "{f}");
        assert!(!r.has("mount.unexpected", mp), "{mp}: {:?}", r.pairs());
    }
}

fn text_report(fx: &Fixture) -> String {
    let o = Command::new(BIN)
        .arg("--root")
        .arg(&fx.dir)
        .args(["--format", "text"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Capabilities only in the bounding set: the text headline says they can
/// be gained, not that they are held (the JSON says which sets hold them).
#[test]
fn bounding_only_capabilities_are_not_called_held() {
    let status = data("plain.status")
        .replace("CapPrm:\t00000000a80425fb", "CapPrm:\t0000000000000000")
        .replace("CapEff:\t00000000a80425fb", "CapEff:\t0000000000000000")
        .replace("CapBnd:\t00000000a80425fb", "CapBnd:\t000001ffffffffff");
    let fx = Fixture::container("caps-bounding", &data("plain.mountinfo"), &status);
    let text = text_report(&fx);
    assert!(
        text.contains("A dangerous capability can be gained (in the bounding set: not held now)"),
        "{text}"
    );
    assert!(!text.contains("A dangerous capability is held"), "{text}");
    // A held one keeps the code's title, in an entry of its own.
    let status = status
        .replace("CapEff:\t0000000000000000", "CapEff:\t0000000000200000")
        .replace("CapPrm:\t0000000000000000", "CapPrm:\t0000000000200000");
    let fx = Fixture::container("caps-mixed", &data("plain.mountinfo"), &status);
    let r = fx.run(&[]);
    let admin = r.find("priv.capability", "CAP_SYS_ADMIN");
    assert_eq!(admin["title"], "A dangerous capability is held");
    let text = text_report(&fx);
    assert!(text.contains("CAP_SYS_ADMIN"), "{text}");
    assert!(text.contains("can be gained"), "{text}");
}
