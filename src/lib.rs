//! selfprobe: from inside a container, devcontainer or CI build container,
//! find out whether the workspace is the narrow boundary its owners think.

pub mod attest;
pub mod catalog;
pub mod cli;
pub mod commands;
pub mod evaluate;
pub mod facts;
pub mod finding;
pub mod gate;
pub mod host;
pub mod keys;
pub mod model;
pub mod output;
pub mod policy;
pub mod probe;
pub mod report;
pub mod run;
pub mod scorecard;
pub mod target;
pub mod util;
