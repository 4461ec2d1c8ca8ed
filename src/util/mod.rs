//! Small pieces shared by probes, renderers and main: they hold no
//! knowledge of any probe.

pub mod codec;
pub mod command;
pub mod der;
pub mod digest;
pub mod embedded;
pub mod filename;
pub mod glob;
pub mod http1;
pub mod jsonc;
pub mod panics;
pub mod path;
pub mod redact;
pub mod sanitize;
pub mod socket;
pub mod sort;
pub mod text;
pub mod tls;
pub mod walk;
pub mod workers;
pub mod x509;
