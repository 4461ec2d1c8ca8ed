//! Small pieces shared by probes, renderers and main: they hold no
//! knowledge of any probe.

pub mod sanitize;
