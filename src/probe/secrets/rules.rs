//! The two catalogs this probe reads: probes/env-secrets.toml (what a secret
//! looks like) and probes/credentials.toml (where credentials live). Both are
//! embedded and checked by tests, so parsing at run time cannot fail.

use std::sync::OnceLock;

use serde::Deserialize;

pub const ENV_SECRETS_TOML: &str = include_str!("../../../probes/env-secrets.toml");
pub const CREDENTIALS_TOML: &str = include_str!("../../../probes/credentials.toml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvSecrets {
    pub ignore_names: Vec<String>,
    pub name: Vec<NameRule>,
    pub value: Vec<ValueRule>,
    pub lines: Lines,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NameRule {
    pub glob: String,
    pub kind: String,
    /// Said with every hit of the rule (a lifetime the issuer documents).
    pub note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValueRule {
    pub prefix: Option<String>,
    pub builtin: Option<Builtin>,
    pub kind: String,
    #[serde(default)]
    pub min_len: usize,
    pub max_len: Option<usize>,
    pub charset: Option<Charset>,
    /// Said with every hit of the rule (a lifetime the issuer documents).
    pub note: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Builtin {
    PemPrivateKey,
    UrlUserinfo,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Charset {
    Alnum,
    UpperAlnum,
    Word,
    Dotted,
    Hex,
    Jwt,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lines {
    pub markers: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    pub walk: Walk,
    pub file: Vec<FileRule>,
    pub pointer: Vec<Pointer>,
    pub token: Vec<TokenRule>,
    pub token_var: Vec<TokenVar>,
    pub agent: Vec<AgentRule>,
    pub helper_path: Vec<HelperPath>,
    pub helper_var: Vec<HelperVar>,
    pub git: Git,
    pub history: Vec<HistoryRule>,
    pub mcp: Vec<McpRule>,
}

/// Where an agent reads its MCP servers from (inventory, mcp.* findings).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpRule {
    /// Relative to the workspace (and each host mount) or to each home.
    pub path: String,
    pub place: McpPlace,
    pub format: McpFormat,
    /// Dotted paths to the tables of servers; `*` matches any key (the
    /// project paths of ~/.claude.json).
    pub servers: Vec<String>,
    /// The agent that loads it.
    pub client: String,
    /// Where the location and shape were checked.
    pub source: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum McpPlace {
    Workspace,
    Home,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum McpFormat {
    /// JSON, with the comments and trailing commas VS Code allows.
    Json,
    Toml,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Git {
    pub configs: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Walk {
    pub agent_sockets: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Check {
    PrivateKey,
    Contains,
    Nonempty,
    EnvFile,
    Npmrc,
    DockerAuths,
    UrlUserinfo,
    GitConfig,
    /// A JSON document with one of `fields` (dotted paths, `*` any key)
    /// holding a non-empty string that is not a placeholder.
    JsonFields,
    /// A JSON, YAML, TOML or INI-like config with one of `keys` (at any
    /// depth) set to a value that is not a placeholder, or any value that a
    /// value rule of env-secrets.toml recognises.
    SecretKeys,
    /// Any value a value rule of env-secrets.toml recognises (the known
    /// key formats), wherever it stands in the text: the files of the
    /// agents' own directories (probes/agents.toml).
    KeyFormats,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Entries {
    IniSections,
    NetrcMachines,
    NpmRegistries,
    UrlHosts,
    YamlTopKeys,
    DockerAuths,
    EnvNames,
    KubeContext,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileRule {
    pub path: String,
    pub kind: String,
    pub check: Check,
    #[serde(default)]
    pub any: Vec<String>,
    pub entries: Option<Entries>,
    #[serde(default)]
    pub exclude: Vec<String>,
    #[serde(default)]
    pub name_only: bool,
    pub max_read: Option<u64>,
    /// check = json-fields: the fields that hold the credential.
    #[serde(default)]
    pub fields: Vec<String>,
    /// check = secret-keys: the key names that hold one.
    #[serde(default)]
    pub keys: Vec<String>,
    /// A field whose value is a JWT: its exp claim is the token's expiry.
    pub jwt: Option<String>,
    /// A field that states when the token expires, in `expires_unit`.
    pub expires: Option<String>,
    pub expires_unit: Option<ExpiresUnit>,
    /// A field that holds a refresh token: the session outlives the expiry.
    pub refresh: Option<String>,
    /// The coding agent or tool that writes the file.
    pub agent: Option<String>,
    /// Where the location and shape were checked (documentation or source).
    pub source: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExpiresUnit {
    /// Milliseconds since the epoch (JavaScript's Date.now()).
    Ms,
    /// Seconds since the epoch.
    S,
    /// An RFC 3339 / ISO 8601 time.
    Rfc3339,
}

impl FileRule {
    pub fn max_read(&self) -> u64 {
        self.max_read.unwrap_or(64 * 1024)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pointer {
    pub var: String,
    #[serde(rename = "as")]
    pub as_rule: String,
    #[serde(default)]
    pub list: bool,
    pub join: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenRule {
    pub path: String,
    pub kind: String,
    #[serde(default)]
    pub jwt_only: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenVar {
    pub var: String,
    pub kind: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Ssh,
    Gpg,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentRule {
    pub path: String,
    pub protocol: Protocol,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HelperPath {
    pub path: String,
    pub kind: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HelperVar {
    pub var: String,
    pub kind: String,
    pub forwarded: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryRule {
    pub path: String,
    pub shell: String,
}

// Read without serde (util/embedded.rs); the tests read them both ways.
crate::embedded_struct!(EnvSecrets { get [ignore_names, name, value, lines] });
crate::embedded_struct!(NameRule { get [glob, kind] opt [note] });
crate::embedded_struct!(ValueRule {
    opt [prefix, builtin, max_len, charset, note]
    get [kind]
    or_default [min_len]
});
crate::embedded_enum!(Builtin { "pem-private-key" => PemPrivateKey, "url-userinfo" => UrlUserinfo });
crate::embedded_enum!(Charset {
    "alnum" => Alnum,
    "upper-alnum" => UpperAlnum,
    "word" => Word,
    "dotted" => Dotted,
    "hex" => Hex,
    "jwt" => Jwt,
});
crate::embedded_struct!(Lines { get [markers] });
crate::embedded_struct!(Credentials {
    get [walk, file, pointer, token, token_var, agent, helper_path, helper_var, git, history, mcp]
});
crate::embedded_struct!(McpRule { get [path, place, format, servers, client, source] });
crate::embedded_enum!(McpPlace { "workspace" => Workspace, "home" => Home });
crate::embedded_enum!(McpFormat { "json" => Json, "toml" => Toml });
crate::embedded_struct!(Git { get [configs] });
crate::embedded_struct!(Walk { get [agent_sockets] });
crate::embedded_enum!(Check {
    "private-key" => PrivateKey,
    "contains" => Contains,
    "nonempty" => Nonempty,
    "env-file" => EnvFile,
    "npmrc" => Npmrc,
    "docker-auths" => DockerAuths,
    "url-userinfo" => UrlUserinfo,
    "git-config" => GitConfig,
    "json-fields" => JsonFields,
    "secret-keys" => SecretKeys,
    "key-formats" => KeyFormats,
});
crate::embedded_enum!(Entries {
    "ini-sections" => IniSections,
    "netrc-machines" => NetrcMachines,
    "npm-registries" => NpmRegistries,
    "url-hosts" => UrlHosts,
    "yaml-top-keys" => YamlTopKeys,
    "docker-auths" => DockerAuths,
    "env-names" => EnvNames,
    "kube-context" => KubeContext,
});
crate::embedded_struct!(FileRule {
    get [path, kind, check]
    or_default [any, exclude, name_only, fields, keys]
    opt [entries, max_read, jwt, expires, expires_unit, refresh, agent, source]
});
crate::embedded_enum!(ExpiresUnit { "ms" => Ms, "s" => S, "rfc3339" => Rfc3339 });
crate::embedded_struct!(Pointer { get [var, as_rule = "as"] or_default [list] opt [join] });
crate::embedded_struct!(TokenRule { get [path, kind] or_default [jwt_only] });
crate::embedded_struct!(TokenVar { get [var, kind] });
crate::embedded_enum!(Protocol { "ssh" => Ssh, "gpg" => Gpg });
crate::embedded_struct!(AgentRule { get [path, protocol] });
crate::embedded_struct!(HelperPath { get [path, kind] });
crate::embedded_struct!(HelperVar { get [var, kind, forwarded] });
crate::embedded_struct!(HistoryRule { get [path, shell] });

#[cfg(test)]
#[test]
fn secret_catalogs_read_as_serde_read_them() {
    crate::util::embedded::tests::same::<EnvSecrets>("env-secrets.toml", ENV_SECRETS_TOML);
    crate::util::embedded::tests::same::<Credentials>("credentials.toml", CREDENTIALS_TOML);
}

use crate::catalog::parse_embedded as parse;
use crate::util::glob::matches_component;

pub fn env_secrets() -> &'static EnvSecrets {
    static C: OnceLock<EnvSecrets> = OnceLock::new();
    C.get_or_init(|| parse("env-secrets.toml", ENV_SECRETS_TOML))
}

/// Bytes read of a file in an agent's own directory: its settings are
/// small, and a long history is judged by its head.
pub const AGENT_FILE_READ: u64 = 256 * 1024;
/// The kind of a secret.file found by the known key formats in an agent's
/// own directory or file.
pub const AGENT_CONFIG_KIND: &str = "agent-config-secret";

/// probes/credentials.toml, then one key-formats rule for the files
/// directly in each agent directory of probes/agents.toml and for each
/// agent file without a rule of its own (agent_rules() says which): the
/// rules above them win, so a file with its own rule is judged by it.
pub fn credentials() -> &'static Credentials {
    static C: OnceLock<Credentials> = OnceLock::new();
    C.get_or_init(|| {
        let mut c: Credentials = parse("credentials.toml", CREDENTIALS_TOML);
        let generated = agent_file_rules(&c);
        c.file.extend(generated);
        c
    })
}

/// The indexes of credentials().file that agent_file_rules() added.
pub fn agent_rules() -> std::ops::Range<usize> {
    let c = credentials();
    let n = c
        .file
        .iter()
        .rposition(|f| f.check != Check::KeyFormats)
        .map_or(0, |i| i + 1);
    n..c.file.len()
}

fn agent_file_rules(c: &Credentials) -> Vec<FileRule> {
    let rule = |path: String, exclude: Vec<String>, a: &crate::catalog::Agent| FileRule {
        path,
        kind: AGENT_CONFIG_KIND.into(),
        check: Check::KeyFormats,
        any: Vec::new(),
        entries: None,
        exclude,
        name_only: false,
        max_read: Some(AGENT_FILE_READ),
        fields: Vec::new(),
        keys: Vec::new(),
        jwt: None,
        expires: None,
        expires_unit: None,
        refresh: None,
        agent: Some(a.name.clone()),
        source: Some(a.source.clone()),
    };
    let mut out = Vec::new();
    for a in crate::catalog::agents() {
        for d in &a.dirs {
            // An MCP configuration in this directory is the MCP reader's.
            let mut exclude: Vec<String> = Vec::new();
            for rest in c
                .mcp
                .iter()
                .filter_map(|m| m.path.strip_prefix(d.as_str())?.strip_prefix('/'))
                .filter(|rest| !rest.contains('/'))
            {
                if !exclude.iter().any(|e| e == rest) {
                    exclude.push(rest.to_string());
                }
            }
            out.push(rule(format!("{d}/*"), exclude, a));
        }
        for f in a
            .files
            .iter()
            .filter(|f| !c.file.iter().any(|r| &r.path == *f))
        {
            out.push(rule(f.clone(), Vec::new(), a));
        }
    }
    out
}

/// What one rule found: the kind of secret and how it was recognised. The
/// description names the rule, never any part of the value beyond a rule's
/// own literal prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub kind: String,
    pub rule: String,
    pub note: Option<String>,
}

/// Values that stand for a secret without being one: references, paths,
/// defaults and examples. A name rule needs more than this to fire.
pub fn placeholder(v: &str) -> bool {
    let t = v.trim().trim_matches(|c| c == '"' || c == '\'').trim();
    if t.len() < 6 {
        return true;
    }
    let lower = t.to_ascii_lowercase();
    let first = t.chars().next().unwrap_or(' ');
    t.starts_with('$')
        || t.starts_with("%(")
        || t.starts_with("{{")
        || (t.starts_with('<') && t.ends_with('>'))
        || (t.starts_with('[') && t.ends_with(']'))
        || t.starts_with('/')
        || t.starts_with("./")
        || t.starts_with("~/")
        || t.chars().all(|c| c == first)
        || lower.starts_with("your")
        || lower.contains("example")
        || lower.contains("placeholder")
        || lower.contains("changeme")
        || lower.contains("redacted")
        || lower.starts_with("file:")
        || lower.starts_with("vault:")
        || lower.starts_with("op://")
        || lower.starts_with("secret:")
        || matches!(
            lower.as_str(),
            "secret"
                | "password"
                | "token"
                | "dummy"
                | "undefined"
                | "notset"
                | "default"
                | "disabled"
                | "enabled"
                | "insecure"
        )
}

fn charset_ok(cs: Charset, rest: &str) -> bool {
    let ok = |f: fn(u8) -> bool| rest.bytes().all(f);
    match cs {
        Charset::Alnum => ok(|b| b.is_ascii_alphanumeric()),
        Charset::UpperAlnum => ok(|b| b.is_ascii_uppercase() || b.is_ascii_digit()),
        Charset::Word => ok(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
        Charset::Dotted => ok(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b)),
        Charset::Hex => ok(|b| b.is_ascii_hexdigit()),
        Charset::Jwt => {
            ok(|b| b.is_ascii_alphanumeric() || b"_-.=".contains(&b))
                && rest.bytes().filter(|b| *b == b'.').count() >= 2
        }
    }
}

/// The words of a text as the value rules see them: maximal runs of
/// letters, digits, `_`, `-` and `.`, without a sentence's trailing dot.
pub fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.'))
        .map(|w| w.trim_end_matches('.'))
        .filter(|w| w.len() >= 3)
}

/// scheme://user:password@host with a password that is not a placeholder.
pub fn url_userinfo(text: &str) -> bool {
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let after = &rest[i + 3..];
        let end = after
            .find(|c: char| {
                c == '/' || c == '?' || c == '#' || c.is_whitespace() || c == '"' || c == '\''
            })
            .unwrap_or(after.len());
        let authority = &after[..end];
        if let Some(at) = authority.rfind('@') {
            if let Some((_user, pass)) = authority[..at].split_once(':') {
                if !pass.is_empty()
                    && !pass.starts_with('$')
                    && !pass.starts_with('*')
                    && !placeholder_short(pass)
                {
                    return true;
                }
            }
        }
        rest = after;
    }
    false
}

/// The placeholder test for a password inside a URL, where short real
/// passwords are common: only references and masks are excluded.
fn placeholder_short(p: &str) -> bool {
    let lower = p.to_ascii_lowercase();
    p.starts_with('{')
        || p.starts_with('<')
        || p.starts_with('%')
        || lower == "password"
        || lower == "pass"
        || lower == "x-oauth-basic"
}

impl ValueRule {
    fn describe(&self) -> String {
        match (&self.prefix, self.builtin) {
            (Some(p), _) => format!("value prefix {p}"),
            (None, Some(Builtin::PemPrivateKey)) => "value private-key header".into(),
            (None, Some(Builtin::UrlUserinfo)) => "value url with user:password@".into(),
            (None, None) => "value".into(),
        }
    }

    fn word_matches(&self, w: &str) -> bool {
        let Some(p) = &self.prefix else { return false };
        let Some(rest) = w.strip_prefix(p.as_str()) else {
            return false;
        };
        w.len() >= self.min_len.max(p.len() + 1)
            && self.max_len.is_none_or(|m| w.len() <= m)
            && self.charset.is_none_or(|cs| charset_ok(cs, rest))
    }

    fn text_matches(&self, text: &str) -> bool {
        match self.builtin {
            Some(Builtin::PemPrivateKey) => {
                text.contains("-----BEGIN") && text.contains("PRIVATE KEY")
            }
            Some(Builtin::UrlUserinfo) => url_userinfo(text),
            None => words(text).any(|w| self.word_matches(w)),
        }
    }
}

impl EnvSecrets {
    pub fn name_rule(&self, name: &str) -> Option<&NameRule> {
        let up = name.to_ascii_uppercase();
        if self.ignore_names.iter().any(|g| matches_component(g, &up)) {
            return None;
        }
        self.name.iter().find(|r| matches_component(&r.glob, &up))
    }

    /// The first value rule that any word of `text` (or the text as a whole,
    /// for the builtins) matches.
    pub fn value_rule(&self, text: &str) -> Option<&ValueRule> {
        self.value.iter().find(|r| r.text_matches(text))
    }

    /// Classifies one variable: a value rule first (it says what the secret
    /// is), else a name rule with a value that is not a placeholder.
    pub fn classify(&self, name: &str, value: &str) -> Option<Hit> {
        if value.trim().is_empty() {
            return None;
        }
        if let Some(v) = self.value_rule(value) {
            return Some(Hit {
                kind: v.kind.clone(),
                rule: v.describe(),
                note: v.note.clone(),
            });
        }
        let n = self.name_rule(name)?;
        if placeholder(value) {
            return None;
        }
        Some(Hit {
            kind: n.kind.clone(),
            rule: format!("name {}", n.glob),
            note: n.note.clone(),
        })
    }

    /// Whether one line of a shell history (or any typed text) looks like it
    /// holds a secret: a marker, a value rule, or NAME=value where a name
    /// rule matches NAME.
    pub fn line_hit(&self, line: &str) -> Option<Hit> {
        let lower = line.to_ascii_lowercase();
        if let Some(m) = self
            .lines
            .markers
            .iter()
            .find(|m| lower.contains(m.as_str()))
        {
            return Some(Hit {
                kind: "typed-secret".into(),
                rule: format!("marker {}", m.trim()),
                note: None,
            });
        }
        if let Some(v) = self.value_rule(line) {
            return Some(Hit {
                kind: v.kind.clone(),
                rule: v.describe(),
                note: v.note.clone(),
            });
        }
        assignments(line).find_map(|(name, value)| {
            let n = self.name_rule(name)?;
            (!placeholder(value)).then(|| Hit {
                kind: n.kind.clone(),
                rule: format!("name {}", n.glob),
                note: n.note.clone(),
            })
        })
    }
}

/// NAME=value pairs in a command line (export, env, a prefix assignment),
/// and `setenv NAME value` / `set -x NAME value`.
pub fn assignments(line: &str) -> impl Iterator<Item = (&str, &str)> {
    let parts: Vec<&str> = line.split_whitespace().collect();
    let mut out = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        if let Some((n, v)) = p.split_once('=') {
            let n = n.trim_start_matches(['(', ';', '&', '|']);
            if is_identifier(n) {
                out.push((n, v));
            }
        } else if (*p == "setenv" || *p == "set") && i + 1 < parts.len() {
            let mut j = i + 1;
            while j < parts.len() && parts[j].starts_with('-') {
                j += 1;
            }
            if j + 1 < parts.len() && is_identifier(parts[j]) {
                out.push((parts[j], parts[j + 1]));
            }
        }
    }
    out.into_iter()
}

pub fn is_identifier(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogs_parse_and_are_consistent() {
        let e = env_secrets();
        assert!(e.name.len() > 10 && e.value.len() > 20);
        for v in &e.value {
            assert!(
                v.prefix.is_some() != v.builtin.is_some(),
                "{}: a value rule has a prefix or a builtin",
                v.kind
            );
            if let Some(p) = &v.prefix {
                assert!(v.min_len > p.len(), "{p}: min_len must exceed the prefix");
                assert!(v.charset.is_some(), "{p}: a prefix rule needs a charset");
            }
        }
        for want in [
            "ghp_",
            "github_pat_",
            "glpat-",
            "AKIA",
            "ASIA",
            "xoxb-",
            "sk-",
            "npm_",
        ] {
            assert!(
                e.value.iter().any(|v| v.prefix.as_deref() == Some(want)),
                "{want} rule missing"
            );
        }
        for n in &e.name {
            assert_eq!(
                n.glob,
                n.glob.to_ascii_uppercase(),
                "name globs are upper case"
            );
        }
        let c = credentials();
        assert!(c.file.len() > 30);
        for f in &c.file {
            assert!(
                !f.path.starts_with('/'),
                "{}: file paths are suffixes",
                f.path
            );
            assert!(
                (f.check == Check::Contains) != f.any.is_empty(),
                "{}: `any` goes with check = contains",
                f.path
            );
        }
        for want in [
            ".aws/credentials",
            ".kube/config",
            ".docker/config.json",
            ".netrc",
            ".npmrc",
            ".pypirc",
            ".git-credentials",
            ".config/gh/hosts.yml",
            ".cargo/credentials.toml",
            ".vault-token",
            ".gnupg/private-keys-v1.d/*.key",
            ".env",
            "id_rsa",
        ] {
            assert!(c.file.iter().any(|f| f.path == want), "{want} missing");
        }
        for f in &c.file {
            assert_eq!(
                f.check == Check::JsonFields,
                !f.fields.is_empty(),
                "{}: `fields` goes with check = json-fields",
                f.path
            );
            assert_eq!(
                f.check == Check::SecretKeys,
                !f.keys.is_empty(),
                "{}: `keys` goes with check = secret-keys",
                f.path
            );
            assert_eq!(
                f.expires.is_some(),
                f.expires_unit.is_some(),
                "{}: expires goes with expires_unit",
                f.path
            );
            assert!(
                f.agent.is_none() || f.source.as_deref().is_some_and(|s| s.len() > 20),
                "{}: an agent's rule says where it was checked",
                f.path
            );
        }
        for want in [
            ".claude/.credentials.json",
            ".claude.json",
            ".codex/auth.json",
            ".gemini/oauth_creds.json",
            ".config/github-copilot/apps.json",
            ".config/github-copilot/hosts.json",
            ".continue/config.json",
            ".continue/config.yaml",
            ".aider.conf.yml",
            ".aws/sso/cache/*.json",
        ] {
            assert!(
                c.file.iter().any(|f| f.path == want && f.agent.is_some()),
                "{want} missing"
            );
        }
        // The agents' directories: one key-formats rule each, after every
        // rule of the file, never shadowing an MCP configuration.
        let toml: Credentials = parse("credentials.toml", CREDENTIALS_TOML);
        assert!(toml.file.iter().all(|f| f.check != Check::KeyFormats));
        assert_eq!(agent_rules().start, toml.file.len());
        let gen = &c.file[agent_rules()];
        assert!(gen.iter().any(|f| f.path == ".openhands/*"));
        let cursor = gen.iter().find(|f| f.path == ".cursor/*").unwrap();
        assert_eq!(cursor.exclude, vec!["mcp.json"]);
        assert!(
            !gen.iter().any(|f| f.path == ".claude.json"),
            "it has a rule of its own"
        );
        for m in &c.mcp {
            assert!(!m.path.starts_with('/'), "{}: relative", m.path);
            assert!(!m.servers.is_empty() && m.source.len() > 20, "{}", m.path);
        }
        for want in [
            ".mcp.json",
            ".vscode/mcp.json",
            ".cursor/mcp.json",
            ".claude.json",
            ".codex/config.toml",
            ".config/Claude/claude_desktop_config.json",
            ".codeium/windsurf/mcp_config.json",
        ] {
            assert!(c.mcp.iter().any(|m| m.path == want), "{want} missing");
        }
        for p in &c.pointer {
            assert!(
                c.file.iter().any(|f| f.path == p.as_rule),
                "{}: pointer to unknown rule {}",
                p.var,
                p.as_rule
            );
        }
        for a in &c.agent {
            assert!(
                a.path.starts_with('/') || a.path.starts_with("~/"),
                "{}",
                a.path
            );
        }
        for t in &c.token {
            assert!(t.path.starts_with('/'), "{}", t.path);
        }
        assert!(c.history.iter().any(|h| h.path == ".bash_history"));
    }

    #[test]
    fn classifies_names_and_values() {
        let e = env_secrets();
        let gh = format!("ghp_{}", "a1B2".repeat(9));
        assert_eq!(
            e.classify("WHATEVER", &gh).unwrap().rule,
            "value prefix ghp_"
        );
        assert_eq!(
            e.classify("X", "AKIAABCDEFGHIJKLMNOP").unwrap().kind,
            "aws-access-key-id"
        );
        assert!(
            e.classify("X", "AKIAabc").is_none(),
            "too short, wrong case"
        );
        assert_eq!(
            e.classify("MY_API_TOKEN", "q8Zr2mVx9Lk3").unwrap().rule,
            "name *TOKEN"
        );
        assert!(e.classify("MY_API_TOKEN", "${TOKEN}").is_none());
        assert!(e.classify("GITHUB_TOKEN_FILE", "/run/secrets/gh").is_none());
        assert!(e
            .classify("GPG_KEY", "A035C8C19219BA821ECEA86B64E628F8D684696D")
            .is_none());
        assert!(e.classify("PATH", "/usr/bin:/bin").is_none());
        assert!(e.classify("DB_PASSWORD", "changeme").is_none());
        assert_eq!(
            e.classify("DATABASE_URL", "postgres://app:s3cr3t@db:5432/app")
                .unwrap()
                .kind,
            "url-credentials"
        );
        assert!(e
            .classify("DATABASE_URL", "postgres://app@db:5432/app")
            .is_none());
        assert!(e.classify("HOME", "/root").is_none());
        assert!(e.classify("TERM", "xterm-256color").is_none());
        assert!(e
            .classify("K", "-----BEGIN OPENSSH PRIVATE KEY-----\nabc")
            .is_some());
        assert!(e
            .classify("K", "-----BEGIN CERTIFICATE-----\nabc")
            .is_none());
        assert!(e.classify("X", "sk-short").is_none());
    }

    #[test]
    fn history_lines() {
        let e = env_secrets();
        let tok = format!("ghp_{}", "Zz9".repeat(12));
        assert!(e.line_hit(&format!("export GITHUB_TOKEN={tok}")).is_some());
        assert!(e.line_hit("export MY_SECRET=hunter2hunter2").is_some());
        assert!(e
            .line_hit("curl -H 'Authorization: Bearer abc' https://x")
            .is_some());
        assert!(e
            .line_hit("git clone https://u:pw1234@example.org/r.git")
            .is_some());
        assert!(e.line_hit("ls -la").is_none());
        assert!(e.line_hit("export PATH=$PATH:/opt/bin").is_none());
        assert!(e
            .line_hit("export GITHUB_TOKEN=$(cat /run/secrets/gh)")
            .is_none());
        assert!(e.line_hit("setenv API_KEY q8Zr2mVx9Lk3").is_some());
        assert!(e.line_hit("cargo build --release").is_none());
    }
}
