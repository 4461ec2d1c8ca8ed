//! What "selfprobe changed nothing" means for a host tree: a hash of what
//! lstat(2) says about every entry, and of every small file's bytes.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use sha2::{Digest, Sha256};

/// Everything lstat(2) says about every entry under `dir` that could change
/// if a probe wrote, moved, chmodded or removed something. Links are never
/// followed; an unreadable directory is opened as root when we are root.
pub fn tree_hash(dir: &Path) -> String {
    let mut rows = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else {
            rows.insert(d.as_os_str().as_bytes().to_vec(), "unlistable".to_string());
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let m = fs::symlink_metadata(&p).unwrap();
            let mut row = format!(
                "{:o} {} {} {} {}.{}",
                m.mode(),
                m.uid(),
                m.gid(),
                m.size(),
                m.mtime(),
                m.mtime_nsec()
            );
            if m.file_type().is_symlink() {
                row.push_str(&format!(" -> {:?}", fs::read_link(&p).unwrap()));
            } else if m.is_file() && m.size() < 1 << 20 {
                row.push_str(&format!(" {:x}", Sha256::digest(fs::read(&p).unwrap())));
            } else if m.is_dir() {
                stack.push(p.clone());
            }
            rows.insert(p.as_os_str().as_bytes().to_vec(), row);
        }
    }
    let mut h = Sha256::new();
    for (k, v) in &rows {
        h.update(k);
        h.update(b"\0");
        h.update(v.as_bytes());
        h.update(b"\n");
    }
    format!("{:x} ({} entries)", h.finalize(), rows.len())
}
