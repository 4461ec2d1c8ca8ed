//! The policy file's shape, read through serde with toml's deserializer:
//! these types are the schema, written once; src/policy/mod.rs checks what
//! they hold and builds the Policy. Every span is toml's (`Spanned`), so
//! each error names `file:line:column`. The probe once read this from
//! toml's parse tree by hand to save serde's 0.1 MB (with its error
//! messages copied word for word and a serde mirror in the tests to hold
//! them); with the host side in `selfprobe-host` (issue 30) the probe has
//! room for serde again.

use std::collections::BTreeMap;
use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

/// A network destination as written: a string, or a table with url and
/// timeout (src/policy/mod.rs reads which).
pub(super) type Value = Spanned<toml::Value>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Raw {
    pub workspace: Option<RawWorkspace>,
    pub network: Option<RawNetwork>,
    pub capabilities: Option<RawCapabilities>,
    pub secrets: Option<RawSecrets>,
    pub mcp: Option<RawMcp>,
    #[serde(default)]
    pub exception: Vec<Spanned<RawException>>,
    #[serde(default)]
    pub severity: BTreeMap<Spanned<String>, Spanned<String>>,
    pub parity: Option<RawParity>,
    #[serde(default)]
    pub retain: Vec<Spanned<RawRetain>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRetain {
    pub volume: Spanned<String>,
    pub owner: Option<String>,
    pub reason: Option<String>,
    pub expires: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawParity {
    #[serde(default)]
    pub allow: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWorkspace {
    pub path: Option<Spanned<String>>,
    #[serde(default)]
    pub allow_mounts: Vec<Spanned<String>>,
    #[serde(default)]
    pub deny: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNetwork {
    #[serde(default)]
    pub allow: Vec<Value>,
    #[serde(default)]
    pub deny: Vec<Value>,
    #[serde(default)]
    pub defaults: bool,
    pub timeout: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCapabilities {
    #[serde(default)]
    pub allow: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSecrets {
    pub max_token_ttl: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMcp {
    pub approved: Option<Vec<Spanned<String>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawException {
    pub code: Spanned<String>,
    pub subject: Option<String>,
    pub owner: Option<String>,
    pub reason: Option<String>,
    pub expires: Option<Spanned<String>>,
}

/// What toml's deserializer reported: its message and where.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct ReadError {
    pub message: String,
    pub span: Option<Range<usize>>,
}

/// Parses `text` and reads it as the policy's sections.
pub(super) fn read(text: &str) -> Result<Raw, ReadError> {
    toml::from_str(text).map_err(|e: toml::de::Error| ReadError {
        message: e.message().to_string(),
        span: e.span(),
    })
}
