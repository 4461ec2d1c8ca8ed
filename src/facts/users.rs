//! Users and their homes, read once a run in phase 1 for the probes that
//! need them: the credential search (src/probe/secrets), the caches,
//! browser profiles and artifacts (src/probe/artifacts.rs) and the paths
//! to root (src/probe/rootpaths.rs). /etc/passwd has one parser with one
//! set of limits, and "a home" one rule, so every probe looks in the same
//! places and names the same owners.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::facts::mounts::{MountClass, MountFacts};
use crate::host::{read_regular, Host};

/// The fact's own deadline: a few small reads and two directory listings.
/// It runs before the probes that read it, so a slow one costs one step.
pub const BUDGET: Duration = Duration::from_secs(2);
/// The caches and browser probes look in at most this many homes (the
/// first ones make the point on a shared host root); the credential search
/// looks in all of them, each under its own walk budget.
pub const MAX_HOMES: usize = 64;
/// /etc/passwd can be huge on a shared host root: this much of it is read,
/// and this many accounts kept.
const MAX_PASSWD_BYTES: u64 = 4 << 20;
const MAX_ACCOUNTS: usize = 10_000;
/// Entries of a /home listing looked at.
const MAX_LISTED: usize = 1000;

/// One line of /etc/passwd. The name is short and free of control
/// characters: it is the file's text, and it reaches reports as an owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub name: String,
    /// None when the uid field is not a number.
    pub uid: Option<u32>,
    pub home: String,
    pub shell: String,
}

/// /etc/passwd parsed by hand: a static binary has no NSS.
#[derive(Debug, Clone, Default)]
pub struct Passwd {
    pub accounts: Vec<Account>,
}

impl Passwd {
    /// Comment lines and lines of fewer than seven fields are skipped; the
    /// first MAX_ACCOUNTS accounts are kept.
    pub fn parse(text: &str) -> Passwd {
        let accounts = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let f: Vec<&str> = l.split(':').collect();
                (f.len() >= 7).then(|| Account {
                    name: short_name(f[0]),
                    uid: f[2].parse().ok(),
                    home: f[5].to_string(),
                    shell: f[6].to_string(),
                })
            })
            .take(MAX_ACCOUNTS)
            .collect();
        Passwd { accounts }
    }

    /// The file at `path` (in-root), or no accounts when it cannot be read.
    pub fn read(host: &Host, path: &Path) -> Passwd {
        read_regular(&host.path(path), MAX_PASSWD_BYTES)
            .map(|b| Passwd::parse(&String::from_utf8_lossy(&b)))
            .unwrap_or_default()
    }

    /// The first account with this uid.
    pub fn name_of(&self, uid: u32) -> Option<String> {
        self.accounts
            .iter()
            .find(|a| a.uid == Some(uid))
            .map(|a| a.name.clone())
    }

    /// The homes of the accounts, by the one rule: an absolute path that
    /// is not /, a placeholder (/nonexistent, /var/empty, /dev/null) or a
    /// system directory, of an account with a login shell or in a place
    /// where users' homes live (/root, /home/, /Users/, /var/home/). Given
    /// without a trailing slash.
    pub fn homes(&self) -> impl Iterator<Item = &str> {
        self.accounts.iter().filter_map(|a| {
            let h = a.home.trim_end_matches('/');
            let h = if h.is_empty() { "/" } else { h };
            let system = [
                "/bin", "/sbin", "/usr", "/lib", "/dev", "/proc", "/sys", "/run", "/var/run",
                "/boot", "/etc",
            ];
            let bad = !h.starts_with('/')
                || ["/", "/nonexistent", "/var/empty", "/dev/null"].contains(&h)
                || system
                    .iter()
                    .any(|s| h == *s || h.starts_with(&format!("{s}/")));
            let login = !(a.shell.ends_with("nologin")
                || a.shell.ends_with("/false")
                || a.shell.ends_with("/sync"));
            let user_home = h == "/root"
                || ["/home/", "/Users/", "/var/home/"]
                    .iter()
                    .any(|p| h.starts_with(p));
            (!bad && (login || user_home)).then_some(h)
        })
    }
}

fn short_name(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).take(32).collect()
}

/// A directory that is somebody's home, and why it is taken for one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    /// In-root path.
    pub path: PathBuf,
    /// passwd, home-dir, root, env:HOME, host-mount:MOUNT (a mount that
    /// holds a home), host-root:MOUNT (a home of the host's own root
    /// filesystem mounted in).
    pub origin: String,
    /// The same directory as the host sees it, when a mount shows it.
    pub alias: Option<PathBuf>,
}

/// Who owns a file: the uid, and the account's name when /etc/passwd has it.
#[derive(Debug, Default, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct Owner {
    pub uid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Owner {
    pub fn label(&self) -> String {
        match &self.name {
            Some(n) => format!("{n} ({})", self.uid),
            None => format!("uid {}", self.uid),
        }
    }
}

/// The fact: this system's accounts and every home worth looking in.
/// `Users::default()` (no accounts, no homes) is what the probes get when
/// the fact could not be gathered; the scheduler then says so.
#[derive(Debug, Clone, Default)]
pub struct Users {
    pub passwd: Passwd,
    pub homes: Vec<Home>,
}

impl Users {
    /// Reads /etc/passwd and finds the homes. `mounts` adds the homes that
    /// mounts show (a host home bound in, a host root filesystem's homes)
    /// and says which mounts did not answer: nothing below one of those is
    /// looked at, since a stat there would block.
    pub fn collect(host: &Host, mounts: Option<&MountFacts>) -> Users {
        let passwd = Passwd::read(host, Path::new("/etc/passwd"));
        let homes = homes(host, &passwd, mounts);
        Users { passwd, homes }
    }

    pub fn name_of(&self, uid: u32) -> Option<String> {
        self.passwd.name_of(uid)
    }

    pub fn owner(&self, uid: u32) -> Owner {
        Owner {
            uid,
            name: self.name_of(uid),
        }
    }

    /// The homes' paths, at most `n` of them.
    pub fn home_paths(&self, n: usize) -> Vec<PathBuf> {
        self.homes.iter().take(n).map(|h| h.path.clone()).collect()
    }
}

/// The one homes rule, in this order (the first origin of a path stands):
/// the accounts' homes (Passwd::homes), the directories in /home, /root,
/// $HOME, mounts that hold a home, and on a mounted host root filesystem
/// its accounts' homes, its /home and its /root. Only directories count.
fn homes(host: &Host, passwd: &Passwd, mounts: Option<&MountFacts>) -> Vec<Home> {
    let hung: &[String] = mounts.map_or(&[], |m| &m.unresponsive);
    let hung = |p: &Path| hung.iter().any(|u| p.starts_with(u));
    let mut out: Vec<Home> = Vec::new();
    let mut add = |path: PathBuf, origin: String, alias: Option<PathBuf>| {
        if out.iter().any(|h| h.path == path) || hung(&path) || !host.path(&path).is_dir() {
            return;
        }
        out.push(Home {
            path,
            origin,
            alias,
        });
    };
    let list = |dir: &Path| -> Vec<PathBuf> {
        if hung(dir) {
            return Vec::new();
        }
        let mut v: Vec<PathBuf> = std::fs::read_dir(host.path(dir))
            .map(|rd| {
                rd.flatten()
                    .take(MAX_LISTED)
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| dir.join(e.file_name()))
                    .collect()
            })
            .unwrap_or_default();
        crate::util::sort::sort(&mut v);
        v
    };
    let entries = mounts.into_iter().flat_map(|m| &m.mounts);
    let host_roots: Vec<&PathBuf> = entries
        .clone()
        .filter(|e| e.class == MountClass::HostRoot)
        .map(|e| &e.mount.mount_point)
        .collect();
    // Seen from a sandbox over the machine's own root, "/" is the host
    // root: its homes are the host's, and named so first.
    let (at_root, elsewhere): (Vec<&PathBuf>, Vec<&PathBuf>) = host_roots
        .into_iter()
        .partition(|m| m.as_path() == Path::new("/"));
    let host_root_homes = |m: &Path, add: &mut dyn FnMut(PathBuf, String, Option<PathBuf>)| {
        let origin = format!("host-root:{}", m.display());
        if hung(m) {
            return;
        }
        let hp = Passwd::read(host, &m.join("etc/passwd"));
        for h in hp.homes() {
            let rel = h.trim_start_matches('/');
            add(m.join(rel), origin.clone(), Some(PathBuf::from(h)));
        }
        for h in list(&m.join("home")) {
            let alias = h.strip_prefix(m).ok().map(|r| Path::new("/").join(r));
            add(h, origin.clone(), alias);
        }
        add(m.join("root"), origin.clone(), Some(PathBuf::from("/root")));
    };
    for m in at_root {
        host_root_homes(m, &mut add);
    }
    for h in passwd.homes() {
        add(PathBuf::from(h), "passwd".into(), None);
    }
    for h in list(Path::new("/home")) {
        add(h, "home-dir".into(), None);
    }
    add(PathBuf::from("/root"), "root".into(), None);
    let env_home = host
        .env()
        .get("HOME")
        .map(str::trim)
        .filter(|h| h.starts_with('/') && *h != "/");
    if let Some(h) = env_home {
        add(PathBuf::from(h), "env:HOME".into(), None);
    }
    for e in entries.filter(|e| e.has_kind("home")) {
        let mp = &e.mount.mount_point;
        add(
            mp.clone(),
            format!("host-mount:{}", mp.display()),
            Some(e.mount.root.clone()),
        );
    }
    // The host's own homes, through a mount of its root filesystem.
    for m in elsewhere {
        host_root_homes(m, &mut add);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwd_homes() {
        let p = Passwd::parse(
            "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin:/usr/sbin/nologin\nwww:x:33:33::/var/www:/usr/sbin/nologin\npg:x:70:70::/var/lib/postgresql:/bin/bash\nalice:x:1000:1000::/home/alice:/usr/sbin/nologin\nnobody:x:65534:65534::/nonexistent:/usr/sbin/nologin\nbad line\n",
        );
        let h: Vec<&str> = p.homes().collect();
        assert_eq!(h, vec!["/root", "/var/lib/postgresql", "/home/alice"]);
        assert_eq!(p.name_of(1000).as_deref(), Some("alice"));
        assert_eq!(p.name_of(4), None);
    }

    #[test]
    fn one_rule_for_every_account() {
        let p = Passwd::parse(
            "#root:x:7:0::/home/commented:/bin/sh\nsync:x:4:65534:sync:/bin:/bin/sync\nmac:x:501:20::/Users/mac/:/usr/sbin/nologin\nsb:x:1001:1001::/var/home/sb:/bin/false\nodd:x:abc:0::/srv/odd:/bin/sh\nrel:x:9:9::home/rel:/bin/sh\nctl\u{1b}[2J:x:1002:1002::/home/ctl:/bin/sh\n",
        );
        let h: Vec<&str> = p.homes().collect();
        // /bin is a system directory whatever the shell; /Users/ and
        // /var/home/ are where users live, login shell or not.
        assert_eq!(
            h,
            vec!["/Users/mac", "/var/home/sb", "/srv/odd", "/home/ctl"]
        );
        assert_eq!(p.name_of(7), None, "a commented line is no account");
        assert_eq!(p.name_of(u32::MAX), None, "a uid that is not a number");
        assert_eq!(p.name_of(1002).as_deref(), Some("ctl[2J"));
        let many = "u:x:1:1::/home/u:/bin/sh\n".repeat(MAX_ACCOUNTS + 5);
        assert_eq!(Passwd::parse(&many).accounts.len(), MAX_ACCOUNTS);
    }

    #[test]
    fn homes_in_order_with_their_origins() {
        let dir = std::env::temp_dir().join(format!("selfprobe-users-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for d in [
            "root",
            "home/dev",
            "home/zed",
            "srv/app",
            "host/root",
            "host/home/alice",
        ] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        std::fs::create_dir_all(dir.join("etc")).unwrap();
        std::fs::write(
            dir.join("etc/passwd"),
            "root:x:0:0::/root:/bin/sh\nsvc:x:5:5::/srv/app:/bin/sh\ngone:x:6:6::/home/gone:/bin/sh\n",
        )
        .unwrap();
        let host = Host::new(dir.clone(), Duration::from_secs(1)).with_env(
            crate::host::Environ::from_vars(vec![("HOME".into(), "/home/dev/".into())]),
        );
        let u = Users::collect(&host, None);
        let got: Vec<(&str, &str)> = u
            .homes
            .iter()
            .map(|h| (h.path.to_str().unwrap(), h.origin.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("/root", "passwd"),
                ("/srv/app", "passwd"),
                ("/home/dev", "home-dir"),
                ("/home/zed", "home-dir"),
            ]
        );
        assert_eq!(u.owner(5).label(), "svc (5)");
        assert_eq!(u.owner(77).label(), "uid 77");
        assert_eq!(u.home_paths(1), vec![PathBuf::from("/root")]);
        // A mount that did not answer lstat(2) is not looked into.
        let hung = MountFacts {
            mounts: Vec::new(),
            workspace: None,
            lines: 0,
            parse_errors: Vec::new(),
            unresponsive: vec!["/home".into(), "/srv/app".into()],
            engine: None,
        };
        let u = Users::collect(&host, Some(&hung));
        assert_eq!(u.home_paths(9), vec![PathBuf::from("/root")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
