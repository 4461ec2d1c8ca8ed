//! The host commands' text renderers; the data they render is outside's and
//! registry's.

pub mod inspect;
pub mod registry;
