//! Small pieces shared by probes, renderers and main: they hold no
//! knowledge of any probe.

pub mod codec;
pub mod sanitize;
