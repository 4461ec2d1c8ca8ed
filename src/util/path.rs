//! Paths taken apart as text, never through the filesystem.

use std::path::{Path, PathBuf};

/// Removes `.` and `..` lexically: the workspace is compared with mount
/// points, which the kernel reports without either, and a worktree's
/// commondir is `../..`. Never touches the filesystem.
pub fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}
