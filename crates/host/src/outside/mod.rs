//! The outside view (DESIGN.md §13): host-side commands that talk to a
//! container engine through its CLI. `inspect` places the probe in running
//! containers, runs it with a fresh nonce and the key on its stdin,
//! verifies what comes back and checks it, fact by fact, against the
//! engine's own record; `teardown` proves from the host what survived a
//! workspace's removal.
//!
//! Never needed inside a workspace: no probe or fact imports this module.

pub mod cis;
pub mod crosscheck;
pub mod direct;
pub mod engine;
pub mod engine_api;
pub mod inspect;
pub mod placement;
pub mod record;
pub mod resolve;
pub mod teardown;
