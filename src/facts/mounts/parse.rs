//! /proc/self/mountinfo as the kernel writes it (proc(5), fs/proc_namespace.c
//! show_mountinfo): `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] -
//! FSTYPE SOURCE SUPER`. ROOT is whatever the filesystem's show_path prints:
//! a path for most, `net:[4026532832]` for an nsfs bind of a namespace,
//! `/../../..` for a cgroup2 root outside this cgroup namespace. Only the
//! fields the kernel always writes are required; a line that still does not
//! parse costs that line, with its number, never the table.
//!
//! One filesystem's ROOT is not a path of its own source: shiftfs (Ubuntu's
//! uid-shifting filesystem, which Sysbox mounts over host directories)
//! shows it relative to the host directory it shifts, which is its SOURCE.
//! The two are joined here, so that every reader of `root` sees the host
//! path (`/var/lib/docker/containers/<id>/hosts`, not `/hosts`).

use crate::util::text::Text;
use serde::{Deserialize, Serialize};

use super::Mount;
use crate::host::os_path;

/// A line of mountinfo that could not be read, by its 1-based number. The
/// line itself is not kept: a hostile or broken /proc could put anything in
/// it, and the number is enough to find it.
#[derive(Debug, Default, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct ParseError {
    pub line: usize,
    pub reason: Text,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "mountinfo line {} does not parse: {}",
            self.line, self.reason
        )
    }
}

/// Parses mountinfo. Every non-blank line is either a mount or an error.
pub fn parse_mountinfo(text: &str) -> (Vec<Mount>, Vec<ParseError>) {
    let mut mounts = Vec::new();
    let mut errors = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        match parse_line(line) {
            Ok(m) => mounts.push(m),
            Err(reason) => errors.push(ParseError {
                line: n + 1,
                reason: reason.into(),
            }),
        }
    }
    (mounts, errors)
}

fn parse_line(line: &str) -> Result<Mount, &'static str> {
    // The kernel separates fields with single spaces and escapes spaces in
    // paths, so a plain split keeps every field where it was written.
    let fields: Vec<&str> = line.split(' ').collect();
    if fields.len() < 7 {
        return Err("fewer than the seven fields before the separator");
    }
    let id = fields[0].parse().map_err(|_| "mount id is not a number")?;
    let parent = fields[1].parse().map_err(|_| "parent id is not a number")?;
    let (major, minor) = fields[2]
        .split_once(':')
        .ok_or("device is not MAJOR:MINOR")?;
    let major = major.parse().map_err(|_| "device major is not a number")?;
    let minor = minor.parse().map_err(|_| "device minor is not a number")?;
    let root = fields[3];
    let mount_point = fields[4];
    if root.is_empty() {
        return Err("root field is empty");
    }
    // A mount point is always absolute: it is where the mount sits in this
    // process's view, and nothing else could be located.
    if !mount_point.starts_with('/') {
        return Err("mount point is not an absolute path");
    }
    // Zero or more optional fields (shared:N, master:N, propagate_from:N,
    // unbindable, and whatever a later kernel adds), then a lone "-".
    let sep = fields[6..]
        .iter()
        .position(|f| *f == "-")
        .map(|p| p + 6)
        .ok_or("no \" - \" separator after the optional fields")?;
    let fstype = fields.get(sep + 1).copied().unwrap_or("");
    if fstype.is_empty() {
        return Err("no filesystem type after the separator");
    }
    let source = fields.get(sep + 2).copied().unwrap_or("");
    let super_options = if fields.len() > sep + 3 {
        fields[sep + 3..].join(" ")
    } else {
        String::new()
    };
    let source = String::from_utf8_lossy(&unescape(source)).into_owned();
    let mut root = os_path(unescape(root));
    if fstype == "shiftfs" && source.starts_with('/') {
        let rel = root.strip_prefix("/").unwrap_or(&root).to_path_buf();
        let base = std::path::Path::new(&source);
        root = if rel.as_os_str().is_empty() {
            base.to_path_buf()
        } else {
            base.join(rel)
        };
    }
    Ok(Mount {
        id,
        parent,
        major,
        minor,
        root,
        mount_point: os_path(unescape(mount_point)),
        options: fields[5].split(',').map(str::to_string).collect(),
        optional: fields[6..sep].iter().map(|s| s.to_string()).collect(),
        fstype: String::from_utf8_lossy(&unescape(fstype)).into_owned(),
        source,
        super_options,
    })
}

/// The kernel escapes space, tab, newline and backslash as \ooo octal.
pub fn unescape(s: &str) -> Vec<u8> {
    crate::util::codec::unescape_with(s, b'\\', 3, |oct| {
        if !oct.iter().all(|c| (b'0'..=b'7').contains(c)) {
            return None;
        }
        let v = oct.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0'));
        u8::try_from(v).ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn parses_and_unescapes() {
        let text = "36 35 98:0 /mnt\\040dir /mnt/with\\040space rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n\
                    garbage\n\
                    37 35 0:5 / /proc rw - proc proc rw\n";
        let (m, errs) = parse_mountinfo(text);
        assert_eq!(m.len(), 2);
        assert_eq!(
            errs,
            vec![ParseError {
                line: 2,
                reason: "fewer than the seven fields before the separator".into()
            }]
        );
        assert_eq!(m[0].root, PathBuf::from("/mnt dir"));
        assert_eq!(m[0].mount_point, PathBuf::from("/mnt/with space"));
        assert_eq!((m[0].major, m[0].minor), (98, 0));
        assert_eq!(m[0].optional, vec!["master:1".to_string()]);
        assert_eq!(m[0].fstype, "ext3");
        assert_eq!(m[1].fstype, "proc");
    }

    #[test]
    fn nsfs_roots_and_many_optional_fields() {
        let text = "143 27 0:4 net:[4026532832] /run/docker/netns/5e1b4c rw shared:52 master:1 propagate_from:3 unbindable - nsfs nsfs rw\n\
                    2295 2208 0:24 /../../../.. /host/sys/fs/cgroup ro,relatime - cgroup2 cgroup2 rw\n\
                    10 9 0:5 / /x rw - tmpfs\n";
        let (m, errs) = parse_mountinfo(text);
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(m[0].root, PathBuf::from("net:[4026532832]"));
        assert_eq!(m[0].optional.len(), 4);
        assert_eq!(m[0].fstype, "nsfs");
        assert_eq!(m[1].root, PathBuf::from("/../../../.."));
        assert_eq!(m[2].source, "", "a missing source is empty, not an error");
    }

    #[test]
    fn a_bad_line_costs_only_itself() {
        let text = "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n\
                    x 0 8:1 / /a rw - ext4 /dev/sda1 rw\n\
                    \n\
                    2 1 8:1 / relative rw - ext4 /dev/sda1 rw\n\
                    3 1 8:1 /a /b rw no-separator ext4 /dev/sda1 rw\n\
                    4 1 8:1 /a /c rw - ext4 /dev/sda1 rw\r\n";
        let (m, errs) = parse_mountinfo(text);
        assert_eq!(m.len(), 2);
        assert_eq!(
            errs.iter().map(|e| e.line).collect::<Vec<_>>(),
            vec![2, 4, 5]
        );
        assert_eq!(m[1].mount_point, PathBuf::from("/c"));
        assert_eq!(m[1].super_options, "rw");
    }

    #[test]
    fn unescape_edge_cases() {
        assert_eq!(unescape("a\\134b"), b"a\\b");
        assert_eq!(unescape("a\\012b"), b"a\nb");
        assert_eq!(unescape("\\"), b"\\");
        assert_eq!(unescape("\\12"), b"\\12");
        assert_eq!(unescape("\\999"), b"\\999");
        assert_eq!(unescape("x\\011"), b"x\t");
    }
}
