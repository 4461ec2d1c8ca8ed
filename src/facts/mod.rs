//! Facts that several probes need, gathered once and read by the probes
//! (docs/layout.md). A fact module reads the system through the root path
//! (src/host.rs), so fixture trees answer as a live system would; it never
//! imports a probe, and probes never import each other: what they share
//! lives here.

pub mod boundary;
pub mod mounts;
pub mod place;
pub mod platform;
pub mod programs;
pub mod unchecked;
pub mod users;
