//! MCP servers an agent in this workspace would start or connect to, from
//! the configurations of probes/credentials.toml [[mcp]]: the workspace's
//! `.mcp.json`, `.vscode/mcp.json`, `.cursor/mcp.json`..., and in every home
//! `~/.claude.json` (user and per-project servers), `~/.codex/config.toml`,
//! Claude Desktop's and Windsurf's files. Each server is kept as its name,
//! command and arguments (any that looks like a secret redacted), URL
//! (without userinfo or query values) and the NAMES of the variables and
//! headers it is given. A literal secret among their values is recorded by
//! where it sits and what kind it is, never by value (mcp.secret-in-config);
//! a server the policy's `[mcp] approved` does not name is
//! mcp.unapproved-server. Servers are never started or contacted.

use crate::finding::Code;
use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use serde_json::{Map, Value};

use super::files::{read_head, Root};
use super::rules::{credentials, env_secrets, placeholder, McpFormat, McpPlace};
use super::{scoped_file, short, MountIndex};
use crate::finding::{Finding, Severity};
use crate::host::Host;
use crate::policy::Policy;
use crate::util::redact;

/// ~/.claude.json keeps every project's history beside its servers.
const MAX_CONFIG: u64 = 8 << 20;
const MAX_CONFIGS: usize = 64;
const MAX_SERVERS: usize = 512;
const MAX_ARGS: usize = 64;

/// Headers that carry a credential whatever their value looks like.
const AUTH_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "x-auth-token",
    "x-goog-api-key",
    "cookie",
];

#[derive(Debug, Default, Serialize)]
pub struct McpFacts {
    pub configs: Vec<McpConfig>,
    pub servers: Vec<McpServer>,
    /// Servers beyond MAX_SERVERS, not listed.
    pub servers_dropped: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct McpConfig {
    pub path: String,
    pub client: String,
    /// workspace, host-mount:/src, home:/home/dev, env:CLAUDE_CONFIG_DIR
    pub origin: String,
    pub owner_uid: u32,
    pub mode: String,
    pub readable: bool,
    pub servers: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mount: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct McpServer {
    pub name: String,
    pub client: String,
    pub config: String,
    /// The project a per-project entry belongs to (~/.claude.json local scope).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// stdio, http, sse, streamable-http... as configured, else inferred.
    pub transport: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Names of the variables set for it (never their values).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// Names of the headers sent to it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<String>,
    /// Variables it takes from the agent's environment by name
    /// (bearer_token_env_var, env_vars, env_http_headers).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env_from: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env_file: Option<String>,
    pub disabled: bool,
    /// Literal secrets in its configuration: where and what, not the value.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<McpSecret>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct McpSecret {
    /// `env NAME`, `header NAME`, `arg N`, `url`, `command`.
    pub field: String,
    pub kind: String,
    pub rule: String,
}

/// Query parameters that carry a credential whatever their value looks like.
const SECRET_QUERY: &[&str] = &[
    "key",
    "apikey",
    "api_key",
    "api-key",
    "token",
    "access_token",
    "auth_token",
    "auth",
    "secret",
    "client_secret",
    "password",
    "sig",
    "signature",
];

/// Directories a variable moves a configuration into: (variable, the
/// [[mcp]] path it stands for, the file's name inside it).
const ENV_DIRS: &[(&str, &str, &str)] = &[
    ("CLAUDE_CONFIG_DIR", ".claude.json", ".claude.json"),
    ("CODEX_HOME", ".codex/config.toml", "config.toml"),
];

pub struct Places<'a> {
    pub workspace: Option<&'a Path>,
    /// Directories bind-mounted from the host (besides the workspace).
    pub host_dirs: Vec<(PathBuf, String)>,
    pub homes: &'a [Root],
    pub vars: &'a [(String, String)],
}

pub fn collect(host: &Host, idx: &MountIndex, places: &Places, deadline: Instant) -> McpFacts {
    let mut facts = McpFacts::default();
    let mut seen: HashSet<(u64, u64)> = HashSet::new();
    let root = std::fs::canonicalize(host.root()).unwrap_or_else(|_| host.root().to_path_buf());
    let mut cands: Vec<(PathBuf, usize, String)> = Vec::new();
    for (i, r) in credentials().mcp.iter().enumerate() {
        match r.place {
            McpPlace::Workspace => {
                if let Some(ws) = places.workspace {
                    cands.push((ws.join(&r.path), i, "workspace".into()));
                }
                for (d, origin) in &places.host_dirs {
                    cands.push((d.join(&r.path), i, origin.clone()));
                }
            }
            McpPlace::Home => {
                for h in places.homes {
                    cands.push((
                        h.path.join(&r.path),
                        i,
                        format!("home:{}", h.path.display()),
                    ));
                }
                for (var, as_path, file) in ENV_DIRS {
                    if *as_path != r.path {
                        continue;
                    }
                    if let Some((_, v)) = places.vars.iter().find(|(k, _)| k == var) {
                        if v.starts_with('/') {
                            cands.push((Path::new(v).join(file), i, format!("env:{var}")));
                        }
                    }
                }
            }
        }
    }
    for (path, i, origin) in cands {
        if facts.configs.len() >= MAX_CONFIGS || Instant::now() > deadline {
            break;
        }
        let rule = &credentials().mcp[i];
        // A dotfile manager's symlink is followed as long as it stays in
        // the probed tree.
        let Some((real, meta)) = scoped_file(host, &path, &root, &mut seen) else {
            continue;
        };
        let mut cfg = McpConfig {
            path: path.to_string_lossy().into_owned(),
            client: rule.client.clone(),
            origin,
            owner_uid: meta.uid(),
            mode: format!("{:04o}", meta.mode() & 0o7777),
            readable: false,
            servers: 0,
            error: None,
            mount: idx.lookup(&path).map(|(m, _)| m),
        };
        let bytes = match read_head(&real, MAX_CONFIG) {
            Ok(b) => b,
            Err(e) => {
                cfg.error = Some(format!("cannot read: {}", e.kind()));
                facts.configs.push(cfg);
                continue;
            }
        };
        cfg.readable = true;
        let text = String::from_utf8_lossy(&bytes);
        let doc = match rule.format {
            McpFormat::Json => crate::util::jsonc::parse_json(&text),
            McpFormat::Toml => toml::from_str::<toml::Value>(&text)
                .ok()
                .and_then(|t| serde_json::to_value(t).ok()),
        };
        let Some(doc) = doc else {
            cfg.error = Some(if bytes.len() as u64 >= MAX_CONFIG {
                format!("larger than {MAX_CONFIG} bytes: not parsed")
            } else {
                "not valid JSON or TOML".into()
            });
            facts.configs.push(cfg);
            continue;
        };
        for table_path in &rule.servers {
            for (at, table) in super::structured::at_path(&doc, table_path) {
                let Some(table) = table.as_object() else {
                    continue;
                };
                // projects.<path>.mcpServers: the project is the middle.
                let project = table_path.contains('*').then(|| {
                    let prefix = table_path.split('*').next().unwrap_or("");
                    let suffix = table_path.rsplit('*').next().unwrap_or("");
                    short(
                        at.strip_prefix(prefix)
                            .and_then(|r| r.strip_suffix(suffix))
                            .unwrap_or(&at),
                        256,
                    )
                });
                for (name, spec) in table {
                    if facts.servers.len() >= MAX_SERVERS {
                        facts.servers_dropped += 1;
                        continue;
                    }
                    let Some(spec) = spec.as_object() else {
                        continue;
                    };
                    cfg.servers += 1;
                    facts
                        .servers
                        .push(server(name, spec, &cfg, project.clone()));
                }
            }
        }
        facts.configs.push(cfg);
    }
    facts
}

fn strings(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(a)) => a
            .iter()
            .take(MAX_ARGS)
            .map(|x| match x {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect(),
        Some(Value::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    }
}

fn names(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_object)
        .map(|m| m.keys().take(64).map(|k| short(k, 128)).collect())
        .unwrap_or_default()
}

fn server(
    name: &str,
    spec: &Map<String, Value>,
    cfg: &McpConfig,
    project: Option<String>,
) -> McpServer {
    let s = |k: &str| spec.get(k).and_then(Value::as_str).map(str::to_string);
    let mut secrets = Vec::new();
    let (command, mut args) = match spec.get("command") {
        // Some clients take the command as an argv array.
        Some(Value::Array(_)) => {
            let mut v = strings(spec.get("command"));
            let c = (!v.is_empty()).then(|| v.remove(0));
            (c, v)
        }
        _ => (s("command"), Vec::new()),
    };
    args.extend(strings(spec.get("args")));
    args.truncate(MAX_ARGS);
    let command = command.map(|c| {
        if let Some(h) = env_secrets().value_rule(&c) {
            secrets.push(McpSecret {
                field: "command".into(),
                kind: h.kind.clone(),
                rule: "value".into(),
            });
            "<redacted>".to_string()
        } else {
            short(&c, 512)
        }
    });
    let args = redact_args(&args, &mut secrets);
    let url = s("url").or_else(|| s("serverUrl")).or_else(|| s("httpUrl"));
    let url = url.map(|u| redact_url(&u, &mut secrets));
    let transport = s("type")
        .or_else(|| s("transport"))
        .map(|t| short(&t, 32))
        .unwrap_or_else(|| {
            if url.is_some() {
                "http".into()
            } else if command.is_some() {
                "stdio".into()
            } else {
                "unknown".into()
            }
        });
    let rules = env_secrets();
    for (k, v) in spec
        .get("env")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if let Some(v) = v.as_str() {
            if let Some(h) = rules.classify(k, v) {
                secrets.push(McpSecret {
                    field: format!("env {}", short(k, 128)),
                    kind: h.kind,
                    rule: h.rule,
                });
            }
        }
    }
    let header_table = spec.get("headers").or_else(|| spec.get("http_headers"));
    for (k, v) in header_table
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let Some(v) = v.as_str() else { continue };
        if let Some(hit) = header_secret(k, v) {
            secrets.push(McpSecret {
                field: format!("header {}", short(k, 128)),
                kind: hit.0,
                rule: hit.1,
            });
        }
    }
    let mut env_from: Vec<String> = Vec::new();
    if let Some(v) = s("bearer_token_env_var") {
        env_from.push(short(&v, 128));
    }
    env_from.extend(strings(spec.get("env_vars")).iter().map(|v| short(v, 128)));
    for (_, v) in spec
        .get("env_http_headers")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if let Some(v) = v.as_str() {
            env_from.push(short(v, 128));
        }
    }
    let mut headers = names(header_table);
    headers.extend(names(spec.get("env_http_headers")));
    let disabled = spec.get("disabled") == Some(&Value::Bool(true))
        || spec.get("enabled") == Some(&Value::Bool(false));
    McpServer {
        name: short(name, 128),
        client: cfg.client.clone(),
        config: cfg.path.clone(),
        project,
        transport,
        command,
        args,
        url,
        env: names(spec.get("env")),
        headers,
        env_from,
        env_file: s("envFile").map(|f| short(&f, 256)),
        disabled,
        secrets,
    }
}

/// An authorization-like header with a literal value, or any header whose
/// value a rule recognises: (kind, rule).
fn header_secret(name: &str, value: &str) -> Option<(String, String)> {
    let rules = env_secrets();
    if let Some(v) = rules.value_rule(value) {
        return Some((v.kind.clone(), "value".into()));
    }
    let lower = name.to_ascii_lowercase();
    if AUTH_HEADERS.contains(&lower.as_str()) {
        let t = value.trim();
        let rest = ["bearer ", "basic ", "token ", "bot "]
            .iter()
            .find_map(|p| {
                t.get(..p.len())
                    .filter(|h| h.eq_ignore_ascii_case(p))
                    .map(|_| &t[p.len()..])
            })
            .unwrap_or(t)
            .trim();
        if !rest.is_empty() && !placeholder(rest) {
            return Some(("http-authorization".into(), format!("header {name}")));
        }
        return None;
    }
    let var = lower.replace('-', "_").to_ascii_uppercase();
    rules.classify(&var, value).map(|h| (h.kind, h.rule))
}

/// The variable-style name of a `--flag`: `--api-key` -> API_KEY.
fn flag_var(flag: &str) -> Option<String> {
    let n = flag.strip_prefix("--").or_else(|| flag.strip_prefix('-'))?;
    (!n.is_empty()).then(|| n.replace('-', "_").to_ascii_uppercase())
}

/// Arguments as shown: any that looks like a secret, and the value after a
/// flag whose name says secret (`--token X`, `--api-key=X`), replaced.
fn redact_args(args: &[String], secrets: &mut Vec<McpSecret>) -> Vec<String> {
    let rules = env_secrets();
    let mut out = Vec::with_capacity(args.len());
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if let Some(v) = rules.value_rule(a) {
            secrets.push(McpSecret {
                field: format!("arg {i}"),
                kind: v.kind.clone(),
                rule: "value".into(),
            });
            out.push(redact_keep_flag(a));
            i += 1;
            continue;
        }
        if let Some((flag, val)) = a.split_once('=') {
            if let Some(var) = flag_var(flag)
                .or_else(|| super::rules::is_identifier(flag).then(|| flag.to_ascii_uppercase()))
            {
                if let Some(h) = rules.classify(&var, val) {
                    secrets.push(McpSecret {
                        field: format!("arg {i}"),
                        kind: h.kind,
                        rule: h.rule,
                    });
                    out.push(format!("{}=<redacted>", short(flag, 128)));
                    i += 1;
                    continue;
                }
            }
        }
        if let (Some(var), Some(next)) = (flag_var(a), args.get(i + 1)) {
            if !next.starts_with('-') {
                if let Some(n) = rules.name_rule(&var) {
                    if !placeholder(next) {
                        secrets.push(McpSecret {
                            field: format!("arg {}", i + 1),
                            kind: n.kind.clone(),
                            rule: format!("flag {}", short(a, 64)),
                        });
                        out.push(short(a, 256));
                        out.push("<redacted>".into());
                        i += 2;
                        continue;
                    }
                }
            }
        }
        out.push(short(a, 512));
        i += 1;
    }
    out
}

fn redact_keep_flag(a: &str) -> String {
    match a.split_once('=') {
        Some((f, _)) if f.starts_with('-') => format!("{}=<redacted>", short(f, 128)),
        _ => "<redacted>".into(),
    }
}

/// A URL as shown: no userinfo, every query value replaced. A password in
/// the userinfo, or a query value that looks like a secret, is recorded.
fn redact_url(u: &str, secrets: &mut Vec<McpSecret>) -> String {
    let rules = env_secrets();
    let split = |s: &str| -> (String, Option<String>) {
        match s.split_once('?') {
            Some((b, q)) => (b.to_string(), Some(q.to_string())),
            None => (s.to_string(), None),
        }
    };
    let (base, query) = split(u);
    // The userinfo goes from the URL as a whole (src/util/redact.rs), so a
    // password with an unencoded '?' goes with it; what is judged below is
    // the URL as written.
    let stripped = redact::strip(u);
    let (mut shown, shown_query) = split(&stripped);
    if stripped.len() != u.len() && super::rules::url_userinfo(&base) {
        secrets.push(McpSecret {
            field: "url".into(),
            kind: "url-credentials".into(),
            rule: "value url with user:password@".into(),
        });
    }
    if let Some(v) = rules.value_rule(&shown) {
        secrets.push(McpSecret {
            field: "url".into(),
            kind: v.kind.clone(),
            rule: "value".into(),
        });
        shown = "<redacted>".into();
    }
    for kv in query.iter().flat_map(|q| q.split('&').take(32)) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        let var = k.replace('-', "_").to_ascii_uppercase();
        let hit = rules
            .classify(&var, v)
            .map(|h| (h.kind, h.rule))
            .or_else(|| {
                (SECRET_QUERY.contains(&k.to_ascii_lowercase().as_str()) && !placeholder(v)).then(
                    || {
                        (
                            "url-query-secret".to_string(),
                            format!("query parameter {k}"),
                        )
                    },
                )
            });
        if let Some((kind, rule)) = hit {
            secrets.push(McpSecret {
                field: format!("url query {}", short(k, 64)),
                kind,
                rule: short(&rule, 96),
            });
        }
    }
    if let Some(q) = shown_query {
        let parts: Vec<String> = q
            .split('&')
            .take(32)
            .map(|kv| match kv.split_once('=') {
                Some((k, v)) if !v.is_empty() => format!("{}=<redacted>", short(k, 64)),
                Some((k, _)) => short(k, 64),
                None => short(kv, 64),
            })
            .collect();
        shown = format!("{shown}?{}", parts.join("&"));
    }
    short(&shown, 512)
}

/// One server from a hostile table, for the parsers' robustness test.
#[cfg(test)]
pub fn test_server(spec: &Map<String, Value>) -> McpServer {
    let c = McpConfig {
        path: "/p".into(),
        client: "c".into(),
        origin: "o".into(),
        owner_uid: 0,
        mode: "0600".into(),
        readable: true,
        servers: 0,
        error: None,
        mount: None,
    };
    server("s", spec, &c, None)
}

/// The subject of a server's findings: its config file and name (and the
/// project, for a per-project entry).
pub fn subject(s: &McpServer) -> String {
    match &s.project {
        Some(p) => format!("{} [{p}] {}", s.config, s.name),
        None => format!("{} {}", s.config, s.name),
    }
}

fn describe(s: &McpServer) -> String {
    match (&s.command, &s.url) {
        (Some(c), _) => {
            let mut line = c.clone();
            for a in s.args.iter().take(8) {
                line.push(' ');
                line.push_str(a);
            }
            if s.args.len() > 8 {
                line.push_str(" ...");
            }
            line
        }
        (None, Some(u)) => u.clone(),
        (None, None) => "no command or URL".into(),
    }
}

pub fn evaluate(f: &McpFacts, policy: &Policy) -> Vec<Finding> {
    let mut out = Vec::new();
    let json = |s: &McpServer| serde_json::to_value(s).unwrap_or(Value::Null);
    for s in &f.servers {
        let subject = subject(s);
        let scope = s
            .project
            .as_ref()
            .map(|p| format!(" for the project {p}"))
            .unwrap_or_default();
        let vars = if s.env.is_empty() && s.headers.is_empty() {
            String::new()
        } else {
            let mut v = Vec::new();
            if !s.env.is_empty() {
                v.push(format!("variables {}", s.env.join(", ")));
            }
            if !s.headers.is_empty() {
                v.push(format!("headers {}", s.headers.join(", ")));
            }
            format!("; it is given {}", v.join(" and "))
        };
        let approved = policy
            .mcp_approved
            .as_ref()
            .map(|list| list.iter().any(|a| a == &s.name));
        if approved != Some(true) {
            let (sev, why) = match approved {
                None => (
                    Some(Severity::Low),
                    "the policy approves no MCP servers ([mcp] approved is not set)",
                ),
                _ => (None, "it is not in the policy's [mcp] approved list"),
            };
            let mut fnd = Finding::new(
                Code::McpUnapprovedServer,
                &subject,
                format!(
                    "{} configures the MCP server {} ({}, {}){scope}{}{vars}: {why}",
                    s.config,
                    s.name,
                    s.client,
                    describe(s),
                    if s.disabled { ", disabled" } else { "" }
                ),
            )
            .with("server", json(s))
            .with("approved_list", policy.mcp_approved.is_some());
            if let Some(sev) = sev {
                fnd = fnd.severity(sev);
            }
            out.push(fnd);
        }
        if !s.secrets.is_empty() {
            let what: Vec<String> = s
                .secrets
                .iter()
                .map(|x| format!("{} ({})", x.field, x.kind))
                .collect();
            out.push(
                Finding::new(
                    Code::McpSecretInConfig,
                    &subject,
                    format!(
                        "{} gives the MCP server {} a literal secret in {}: anyone who can read the file has it, and it lives as long as the file; the value is not shown",
                        s.config,
                        s.name,
                        what.join(", ")
                    ),
                )
                .with("server", s.name.clone())
                .with("config", s.config.clone())
                .with("client", s.client.clone())
                .with("secrets", serde_json::to_value(&s.secrets).unwrap_or(Value::Null)),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> McpConfig {
        McpConfig {
            path: "/w/.mcp.json".into(),
            client: "c".into(),
            origin: "workspace".into(),
            owner_uid: 0,
            mode: "0644".into(),
            readable: true,
            servers: 0,
            error: None,
            mount: None,
        }
    }

    #[test]
    fn servers_keep_names_and_redact_values() {
        let tok = format!("ghp_{}", "Zq7x".repeat(9));
        let spec: Value = serde_json::from_str(&format!(
            r#"{{"command":"npx","args":["-y","@modelcontextprotocol/server-github","--token","{tok}","--api-key=q8Zr2mVx9Lk3","--verbose"],
                "env":{{"GITHUB_PERSONAL_ACCESS_TOKEN":"{tok}","REF":"${{GITHUB_TOKEN}}","DEBUG":"1"}}}}"#
        ))
        .unwrap();
        let s = server("github", spec.as_object().unwrap(), &cfg(), None);
        let shown = serde_json::to_string(&s).unwrap();
        assert!(!shown.contains(&tok[4..]), "{shown}");
        assert!(!shown.contains("q8Zr2mVx9Lk3"), "{shown}");
        assert_eq!(s.env, vec!["DEBUG", "GITHUB_PERSONAL_ACCESS_TOKEN", "REF"]);
        assert_eq!(s.transport, "stdio");
        assert_eq!(
            s.args,
            vec![
                "-y",
                "@modelcontextprotocol/server-github",
                "--token",
                "<redacted>",
                "--api-key=<redacted>",
                "--verbose"
            ]
        );
        let fields: Vec<&str> = s.secrets.iter().map(|x| x.field.as_str()).collect();
        assert!(
            fields.contains(&"env GITHUB_PERSONAL_ACCESS_TOKEN"),
            "{fields:?}"
        );
        assert!(!fields.iter().any(|f| f.contains("REF")));
        assert!(
            fields.contains(&"arg 3") && fields.contains(&"arg 4"),
            "{fields:?}"
        );
    }

    #[test]
    fn url_credentials_go_in_every_spelling() {
        for u in [
            "https://u:Kq7Z?x9Wm@mcp.example.com/x?a=1",
            "https://u:Kq7Z/x9Wm@mcp.example.com/",
            "https://u:Kq7Z%40x9Wm@mcp.example.com/",
            "https://u:Kq7Z@x9Wm@[fd00::1]:8443/mcp",
            "https://mcp.example.com/?next=https://u:Kq7Zx9Wm@e.example/",
        ] {
            let mut found = Vec::new();
            let shown = redact_url(u, &mut found);
            assert!(
                !shown.contains("Kq7Z") && !shown.contains("x9Wm"),
                "{u} -> {shown}"
            );
        }
        let mut found = Vec::new();
        let shown = redact_url("https://u:Kq7Zx9Wm@[fd00::1]:8443/mcp?v=2", &mut found);
        assert_eq!(shown, "https://[fd00::1]:8443/mcp?v=<redacted>");
        assert_eq!(found[0].kind, "url-credentials");
    }

    #[test]
    fn urls_and_headers() {
        let spec: Value = serde_json::from_str(
            r#"{"type":"http","url":"https://u:pw12345@mcp.example.com/x?api_key=q8Zr2mVx9Lk3&v=2",
                "headers":{"Authorization":"Bearer abcdefgh12345","X-Other":"${input:tok}","Accept":"text/event-stream"}}"#,
        )
        .unwrap();
        let s = server("remote", spec.as_object().unwrap(), &cfg(), None);
        assert_eq!(
            s.url.as_deref(),
            Some("https://mcp.example.com/x?api_key=<redacted>&v=<redacted>")
        );
        assert_eq!(s.headers, vec!["Accept", "Authorization", "X-Other"]);
        let fields: Vec<&str> = s.secrets.iter().map(|x| x.field.as_str()).collect();
        assert_eq!(
            fields,
            vec!["url", "url query api_key", "header Authorization"]
        );
        let ok: Value = serde_json::from_str(
            r#"{"url":"https://x/mcp","headers":{"Authorization":"Bearer ${env:T}"}}"#,
        )
        .unwrap();
        assert!(server("r", ok.as_object().unwrap(), &cfg(), None)
            .secrets
            .is_empty());
    }
}
