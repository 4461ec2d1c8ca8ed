//! selfprobe-host: the side of selfprobe that stays on the host (DESIGN.md
//! §13, §16). It places the probe (`selfprobe`, a file beside this binary or
//! `--binary`) into running workspaces and checks what it reports against
//! the engine's own record (outside), proves teardown, compares and
//! summarises workspaces (compare), and attaches attestations to images
//! (registry). The probe's library gives it the report model, the catalog,
//! keys and signing.

pub mod cli;
pub mod commands;
pub mod compare;
pub mod error;
pub mod outside;
pub mod registry;
pub mod report;
pub mod watch;
