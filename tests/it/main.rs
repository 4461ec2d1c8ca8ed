//! The one integration-test binary (as uv's `crates/uv/tests/it/main.rs`
//! and ripgrep's `tests/tests.rs`): every suite is a module, so the
//! shared helpers in `common/` compile once and one link serves them all.

mod common;

mod agents;
mod attest;
mod boundary;
mod captures;
mod cli;
mod codes;
mod compare;
mod containers;
mod containers_agents;
mod containers_artifacts;
mod containers_attest;
mod containers_canary;
mod containers_formats;
mod containers_gate;
mod containers_hostile;
mod containers_mounts;
mod containers_network;
mod containers_parity;
mod containers_realistic;
mod containers_secrets;
mod containers_usage;
mod deadline;
mod engines;
mod feature;
mod fixtures;
mod fuzz_regressions;
mod gate;
mod helpers;
mod hostile_fs;
mod hostile_scale;
mod inspect;
mod inspect_hostile;
mod inspect_trust;
mod kubernetes;
mod layout;
mod network;
mod panics;
mod procfs;
mod proxies;
mod quiet;
mod registry;
mod report_model;
mod repro_artifacts;
mod sandboxes;
mod secrets;
mod secrets_hostile;
mod sentences;
mod signals;
mod size;
mod teardown;
mod untrusted;
mod watch;
