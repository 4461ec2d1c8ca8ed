//! The renderers: each returns the bytes of one format, main writes them.
//! The data they render is src/model.rs.

pub mod catalog;
pub mod gate;
pub mod json;
pub mod junit;
pub mod plant;
pub mod sarif;
pub mod text;
pub mod verify;
