//! secret.credential-helper: git credential helpers from git config files
//! and GIT_CONFIG_* variables, IDE and devcontainer relays (variables,
//! sockets, scripts) and docker credential stores. None is ever run or
//! connected to: a helper's command line can itself hold a token, so only
//! its class and the base name of its program are kept.

use serde::{Deserialize, Serialize};

use super::rules::{env_secrets, HelperVar};
use super::short;

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Helper {
    /// What the finding is about: `FILE:credential.helper`, `env:NAME`, a path.
    pub subject: String,
    /// Where it was configured: a config file, a variable, a path on disk.
    pub source: String,
    pub kind: String,
    /// Relays to a process outside the workspace (the IDE, the host).
    pub forwarded: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// For `[credential "URL"]`: the host it applies to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The helper's own command line looks like it holds a secret.
    pub inline_secret: bool,
    /// For a variable that names a socket or file: whether it exists here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exists: Option<bool>,
}

/// `credential.helper` values of one git config text, each with the
/// `[credential "URL"]` scope it sits in.
pub fn git_config_helpers(text: &str) -> Vec<(Option<String>, String)> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut sub: Option<String> = None;
    for raw in text.lines() {
        let line = raw.trim();
        if line.starts_with('#') || line.starts_with(';') || line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let head = rest.split(']').next().unwrap_or("");
            let (name, s) = match head.split_once(char::is_whitespace) {
                Some((n, s)) => (n, Some(s.trim().trim_matches('"').to_string())),
                None => match head.split_once('.') {
                    Some((n, s)) => (n, Some(s.to_string())),
                    None => (head, None),
                },
            };
            section = name.to_ascii_lowercase();
            sub = s;
            continue;
        }
        if section != "credential" {
            continue;
        }
        let (k, v) = line.split_once('=').unwrap_or((line, ""));
        if k.trim().eq_ignore_ascii_case("helper") {
            let v = v.trim().trim_matches('"').trim();
            out.push((sub.as_deref().map(url_host), v.to_string()));
        }
        if out.len() >= 32 {
            break;
        }
    }
    out
}

/// The host of a credential scope URL, without any user part.
pub fn url_host(u: &str) -> String {
    let rest = u.split_once("://").map_or(u, |(_, r)| r);
    let auth = rest.split('/').next().unwrap_or("");
    let host = auth.rsplit('@').next().unwrap_or("");
    short(host, 96)
}

/// The base name of a program, or "" when the word is not a plain program
/// name: a helper's command line can hold a token, and a word that is not
/// a path or a bare name may be one.
fn base_name(p: &str) -> String {
    let b = p.rsplit('/').next().unwrap_or(p);
    let plain = !b.is_empty()
        && b.len() <= 48
        && b.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if !plain || env_secrets().value_rule(b).is_some() {
        return String::new();
    }
    b.to_string()
}

/// Classifies a credential.helper value: kind, forwarded, program.
pub fn classify(value: &str) -> (String, bool, Option<String>) {
    let t = value.trim();
    let inline = t.starts_with('!');
    let cmd = t.trim_start_matches('!').trim();
    let first = cmd.split_whitespace().next().unwrap_or("");
    let lower = t.to_ascii_lowercase();
    // An inline helper is usually a shell function around one program:
    // name the first word that is a path, else the first word.
    let first = if inline {
        cmd.split_whitespace()
            .find(|w| w.starts_with('/'))
            .unwrap_or(first)
    } else {
        first
    };
    let program = if inline || first.contains('/') {
        base_name(first)
    } else {
        format!("git-credential-{}", base_name(first))
    };
    let program = (!program.is_empty() && program != "git-credential-").then_some(program);
    let kind = if lower.contains("vscode-remote-containers")
        || lower.contains(".vscode-server")
        || lower.contains("vscode")
    {
        ("vscode-git-credential-forwarder", true)
    } else if lower.contains("gitcredential_github") || lower.contains("codespaces") {
        ("codespaces-git-credential", true)
    } else if lower.contains("devcontainer") || lower.contains("jbdevcontainer") {
        ("devcontainer-credential-forwarder", true)
    } else if lower.contains("gh auth git-credential") {
        ("gh", false)
    } else if first == "store" {
        ("store", false)
    } else if first == "cache" {
        ("cache", false)
    } else if [
        "osxkeychain",
        "manager",
        "manager-core",
        "libsecret",
        "gnome-keyring",
        "wincred",
        "git-credential-manager",
    ]
    .contains(&first)
    {
        ("os-keystore", false)
    } else if inline {
        ("inline-shell", false)
    } else {
        ("other", false)
    };
    (kind.0.to_string(), kind.1, program)
}

pub fn from_git_config(path: &str, text: &str) -> Vec<Helper> {
    git_config_helpers(text)
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .enumerate()
        .map(|(i, (scope, v))| {
            let (kind, forwarded, program) = classify(&v);
            Helper {
                subject: if i == 0 {
                    format!("{path}:credential.helper")
                } else {
                    format!("{path}:credential.helper#{}", i + 1)
                },
                source: path.to_string(),
                kind,
                forwarded,
                program,
                scope,
                inline_secret: env_secrets().line_hit(&v).is_some(),
                exists: None,
            }
        })
        .collect()
}

/// GIT_CONFIG_COUNT / GIT_CONFIG_KEY_n / GIT_CONFIG_VALUE_n entries for
/// credential.helper.
pub fn from_git_env(vars: &[(String, String)]) -> Vec<Helper> {
    let get = |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let n: usize = get("GIT_CONFIG_COUNT")
        .and_then(|c| c.trim().parse().ok())
        .unwrap_or(0);
    let mut out = Vec::new();
    for i in 0..n.min(64) {
        let key = get(&format!("GIT_CONFIG_KEY_{i}")).unwrap_or("");
        let lk = key.to_ascii_lowercase();
        if !(lk.starts_with("credential.") && lk.ends_with(".helper")) {
            continue;
        }
        let Some(v) = get(&format!("GIT_CONFIG_VALUE_{i}")).filter(|v| !v.trim().is_empty()) else {
            continue;
        };
        let (kind, forwarded, program) = classify(v);
        let scope = lk
            .strip_prefix("credential.")
            .and_then(|r| r.strip_suffix(".helper"))
            .filter(|s| !s.is_empty())
            .map(|_| url_host(&key["credential.".len()..key.len() - ".helper".len()]));
        out.push(Helper {
            subject: format!("env:GIT_CONFIG_KEY_{i}"),
            source: format!("env:GIT_CONFIG_VALUE_{i}"),
            kind,
            forwarded,
            program,
            scope,
            inline_secret: env_secrets().line_hit(v).is_some(),
            exists: None,
        });
    }
    out
}

/// Variables of probes/credentials.toml [[helper_var]]. `exists` tells
/// whether the path the variable names is there.
pub fn from_env(
    vars: &[(String, String)],
    rules: &[HelperVar],
    exists: impl Fn(&str) -> bool,
) -> Vec<Helper> {
    let mut out = Vec::new();
    for r in rules {
        let Some((_, v)) = vars.iter().find(|(n, _)| *n == r.var) else {
            continue;
        };
        let v = v.trim();
        if v.is_empty() {
            continue;
        }
        let first = v.split_whitespace().next().unwrap_or("");
        let path_like = first.starts_with('/');
        let lower = v.to_ascii_lowercase();
        // An askpass program of VS Code's relays to the IDE like its IPC does.
        let forwarded = r.forwarded || lower.contains("vscode") || lower.contains("devcontainer");
        out.push(Helper {
            subject: format!("env:{}", r.var),
            source: format!("env:{}", r.var),
            kind: r.kind.clone(),
            forwarded,
            program: path_like
                .then(|| base_name(first))
                .filter(|p| !p.is_empty()),
            scope: None,
            inline_secret: false,
            exists: path_like.then(|| exists(first)),
        });
    }
    out
}

/// credsStore / credHelpers of a docker (or podman auth.json) config.
pub fn from_docker_config(path: &str, json: &serde_json::Value) -> Vec<Helper> {
    let mut out = Vec::new();
    let mut push = |key: &str, name: &str, scope: Option<String>| {
        let name = base_name(name);
        if name.is_empty() {
            return;
        }
        let forwarded = name.starts_with("dev-containers-") || name.contains("vscode");
        out.push(Helper {
            subject: format!("{path}:{key}"),
            source: path.to_string(),
            kind: if forwarded {
                "docker-credential-forwarder".into()
            } else {
                "docker-credential-store".into()
            },
            forwarded,
            program: Some(format!("docker-credential-{name}")),
            scope,
            inline_secret: false,
            exists: None,
        });
    };
    if let Some(s) = json.get("credsStore").and_then(|v| v.as_str()) {
        push("credsStore", s, None);
    }
    if let Some(m) = json.get("credHelpers").and_then(|v| v.as_object()) {
        for (i, (host, h)) in m.iter().take(16).enumerate() {
            if let Some(h) = h.as_str() {
                push(&format!("credHelpers#{}", i + 1), h, Some(url_host(host)));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_git_config() {
        let text = "[core]\n\thelper = nope\n[credential]\n\thelper = \"!f() { echo password=x; }; f\"\n[credential \"https://u@github.com/org\"]\n  helper = /tmp/vscode-remote-containers-1a2b.js\n[credential]\n helper =\n";
        let h = git_config_helpers(text);
        assert_eq!(h.len(), 3);
        assert_eq!(h[1].0.as_deref(), Some("github.com"));
        let hs = from_git_config("/root/.gitconfig", text);
        assert_eq!(hs.len(), 2);
        assert_eq!(hs[0].kind, "inline-shell");
        assert_eq!(hs[1].kind, "vscode-git-credential-forwarder");
        assert!(hs[1].forwarded);
        assert_eq!(
            hs[1].program.as_deref(),
            Some("vscode-remote-containers-1a2b.js")
        );
        assert_eq!(classify("store --file ~/.gc").0, "store");
        assert_eq!(classify("!gh auth git-credential").0, "gh");
        assert_eq!(
            classify("cache --timeout 60").2.as_deref(),
            Some("git-credential-cache")
        );
        // A word holding a secret is never taken for the program's name.
        let aws = "!f() { printf 'password=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzKEY'; }; f";
        assert_eq!(classify(aws).2, None);
        let tok = format!("!ghp_{}", "Ab1".repeat(12));
        assert_eq!(classify(&tok).2, None);
        assert_eq!(
            classify("!/usr/local/bin/relay --x").2.as_deref(),
            Some("relay")
        );
    }

    #[test]
    fn inline_secrets_are_flagged_not_shown() {
        let tok = format!("ghp_{}", "Ab1".repeat(12));
        let text = format!("[credential]\nhelper = \"!f() {{ echo password={tok}; }}; f\"\n");
        let hs = from_git_config("/g", &text);
        assert!(hs[0].inline_secret);
        assert!(!format!("{hs:?}").contains(&tok[4..]));
    }

    #[test]
    fn git_env_and_docker() {
        let vars: Vec<(String, String)> = [
            ("GIT_CONFIG_COUNT", "2"),
            ("GIT_CONFIG_KEY_0", "user.name"),
            ("GIT_CONFIG_VALUE_0", "x"),
            (
                "GIT_CONFIG_KEY_1",
                "credential.https://git.example.org.helper",
            ),
            ("GIT_CONFIG_VALUE_1", "store"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        let h = from_git_env(&vars);
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].scope.as_deref(), Some("git.example.org"));
        let j = serde_json::json!({"credsStore": "dev-containers-1234", "credHelpers": {"gcr.io": "gcloud"}});
        let d = from_docker_config("/c.json", &j);
        assert!(d[0].forwarded && !d[1].forwarded);
    }
}
