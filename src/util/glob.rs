//! The one glob: `*` matches any run of characters within one path
//! component, and nothing else is special. The catalogs (devices, kernel
//! interfaces, sockets, credentials, artifacts, the prune list) and the
//! policy all use it; `PathEnds` matches many such path patterns against
//! the end of a path, as the walks need.

use std::collections::HashMap;
use std::path::{Component, Path};

/// `*`-glob of one path component, without allocating: the walk calls it
/// for every file name it meets.
pub fn matches_component(p: &str, x: &str) -> bool {
    match p.split_once('*') {
        None => p == x,
        Some((pre, rest)) => {
            let Some(tail) = x.strip_prefix(pre) else {
                return false;
            };
            if rest.is_empty() {
                return true;
            }
            if !rest.contains('*') {
                return tail.len() >= rest.len() && tail.ends_with(rest);
            }
            (0..=tail.len())
                .filter(|i| tail.is_char_boundary(*i))
                .any(|i| matches_component(rest, &tail[i..]))
        }
    }
}

/// `pattern` against `path`, component by component: the same number of
/// components, each matched by `matches_component`.
pub fn matches_path(pattern: &str, path: &str) -> bool {
    let pc = pattern.split('/');
    let xc = path.split('/');
    pc.clone().count() == xc.clone().count() && pc.zip(xc).all(|(p, x)| matches_component(p, x))
}

/// A `*`-glob over one path component, split once at the stars so that
/// matching a name costs a prefix, a suffix and a search for each middle
/// piece: no allocation and no backtracking. The walks run it for every
/// name they meet, a million times on a large tree. Same answers as
/// `matches_component` (checked by a test over the catalogs' patterns).
#[derive(Debug, Clone)]
pub struct Glob {
    /// The pattern's pieces between stars; one piece means no star.
    pieces: Vec<Box<[u8]>>,
    min_len: usize,
}

impl Glob {
    pub fn new(pattern: &str) -> Glob {
        let pieces: Vec<Box<[u8]>> = pattern.split('*').map(|p| p.as_bytes().into()).collect();
        let min_len = pieces.iter().map(|p| p.len()).sum();
        Glob { pieces, min_len }
    }

    pub fn matches(&self, x: &[u8]) -> bool {
        let (first, last) = match self.pieces.as_slice() {
            [only] => return x == &only[..],
            [first, .., last] => (first, last),
            [] => return x.is_empty(),
        };
        if x.len() < self.min_len || !x.starts_with(first) || !x.ends_with(last) {
            return false;
        }
        let mut mid = &x[first.len()..x.len() - last.len()];
        for piece in &self.pieces[1..self.pieces.len() - 1] {
            // Leftmost is enough: with `*` the only wildcard, an earlier
            // match never rules out a later piece.
            match find(mid, piece) {
                Some(i) => mid = &mid[i + piece.len()..],
                None => return false,
            }
        }
        true
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// `pattern` (components joined by `/`, each a `matches_component` glob)
/// against the last components of `path`.
pub fn suffix_match(pattern: &str, path: &[&str]) -> bool {
    let pc: Vec<&str> = pattern.split('/').collect();
    if pc.len() > path.len() {
        return false;
    }
    let tail = &path[path.len() - pc.len()..];
    pc.iter().zip(tail).all(|(p, x)| matches_component(p, x))
}

/// The normal components of `p`, as strings.
pub fn comps(p: &Path) -> Vec<String> {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect()
}

/// FNV-1a: the exact-name index is hashed once per name a walk meets,
/// and SipHash's flood resistance buys nothing against a catalog of fixed
/// keys (a crafted tree can only make its own lookups collide).
#[derive(Default)]
pub struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

type FnvMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<Fnv>>;

/// Path patterns matched against the end of a path (`suffix_match`),
/// indexed by their last component, so a walk pays one hash lookup per
/// name plus the few globbed names, and a pattern's parent component is
/// checked against the directory's name before the whole path is built.
pub struct PathEnds {
    pats: Vec<Vec<String>>,
    excludes: Vec<Vec<Glob>>,
    /// The last component and the one before it, compiled.
    last: Vec<Glob>,
    parent: Vec<Option<Glob>>,
    exact: FnvMap<String, Vec<usize>>,
    /// `DIR/*` patterns (every file of a directory) by the directory's
    /// name: a walk asks them only in such a directory, not for every file.
    any_in: FnvMap<String, Vec<usize>>,
    globbed: Vec<usize>,
}

impl PathEnds {
    /// Each pattern with the names it does not apply to.
    pub fn new<'a>(items: impl Iterator<Item = (&'a str, &'a [String])>) -> PathEnds {
        let mut m = PathEnds {
            pats: Vec::new(),
            excludes: Vec::new(),
            last: Vec::new(),
            parent: Vec::new(),
            exact: FnvMap::default(),
            any_in: FnvMap::default(),
            globbed: Vec::new(),
        };
        for (i, (p, ex)) in items.enumerate() {
            let comps: Vec<String> = p.split('/').map(str::to_string).collect();
            let last = comps.last().cloned().unwrap_or_default();
            let dir = (comps.len() >= 2).then(|| comps[comps.len() - 2].clone());
            if last == "*" && dir.as_ref().is_some_and(|d| !d.contains('*')) {
                m.any_in.entry(dir.unwrap_or_default()).or_default().push(i);
            } else if last.contains('*') {
                m.globbed.push(i);
            } else {
                m.exact.entry(last.clone()).or_default().push(i);
            }
            m.last.push(Glob::new(&last));
            m.parent
                .push((comps.len() >= 2).then(|| Glob::new(&comps[comps.len() - 2])));
            m.pats.push(comps);
            m.excludes.push(ex.iter().map(|e| Glob::new(e)).collect());
        }
        m
    }

    /// Patterns without excludes.
    pub fn of<'a>(patterns: impl Iterator<Item = &'a str>) -> PathEnds {
        PathEnds::new(patterns.map(|p| (p, &[][..])))
    }

    /// The first pattern (in the order given) that `name`, in a directory
    /// called `parent`, matches; `comps` gives the whole path when needed.
    pub fn first(
        &self,
        name: &str,
        parent: &str,
        comps: &mut dyn FnMut() -> Vec<String>,
    ) -> Option<usize> {
        let exact = self.exact.get(name).map(Vec::as_slice).unwrap_or(&[]);
        let any_in = self.any_in.get(parent).map(Vec::as_slice).unwrap_or(&[]);
        let globbed = self
            .globbed
            .iter()
            .copied()
            .filter(|i| self.last[*i].matches(name.as_bytes()));
        let mut hits: Vec<usize> = Vec::new();
        for i in exact.iter().chain(any_in).copied().chain(globbed) {
            let parent_ok = self.parent[i]
                .as_ref()
                .is_none_or(|g| g.matches(parent.as_bytes()));
            if parent_ok && !self.excludes[i].iter().any(|e| e.matches(name.as_bytes())) {
                hits.push(i);
            }
        }
        if hits.is_empty() {
            return None;
        }
        crate::util::sort::sort(&mut hits);
        let mut full: Option<Vec<String>> = None;
        for i in hits {
            if self.pats[i].len() <= 2 {
                return Some(i);
            }
            let c = full.get_or_insert_with(&mut *comps);
            let refs: Vec<&str> = c.iter().map(String::as_str).collect();
            if suffix_match(&self.pats[i].join("/"), &refs) {
                return Some(i);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes() {
        assert!(suffix_match(
            ".aws/credentials",
            &["home", "a", ".aws", "credentials"]
        ));
        assert!(!suffix_match(".aws/credentials", &["credentials"]));
        assert!(suffix_match(".ssh/*", &["root", ".ssh", "deploy"]));
        assert!(suffix_match("*.pem", &["x.pem"]));
        for (p, x, want) in [
            ("*TOKEN", "GH_TOKEN", true),
            ("*TOKEN", "TOKENS", false),
            ("*_TOKEN_*", "A_TOKEN_B", true),
            ("*_TOKEN_*", "A_TOKEN", false),
            ("a*b*c", "aXXbYYc", true),
            (".env.*", ".env", false),
            (".env.*", ".env.local", true),
            ("id_*", "id_rsa", true),
            ("x", "x", true),
        ] {
            assert_eq!(matches_component(p, x), want, "{p} {x}");
            assert_eq!(matches_path(p, x), want, "{p} {x}");
        }
    }

    /// `DIR/*` patterns are kept by their directory's name and still take
    /// their place in the order: the first pattern given wins.
    #[test]
    fn path_ends_in_order() {
        let ex = vec!["*.pub".to_string()];
        let none: &[String] = &[];
        let m = PathEnds::new(
            [
                ("id_rsa", none),
                (".ssh/*", ex.as_slice()),
                ("*.pem", none),
                (".cursor/*", none),
                (".local/share/opencode/*", none),
            ]
            .into_iter(),
        );
        let comps = |p: &str| {
            let v: Vec<String> = p.split('/').map(str::to_string).collect();
            move || v.clone()
        };
        let first = |name: &str, parent: &str, path: &str| m.first(name, parent, &mut comps(path));
        assert_eq!(first("id_rsa", ".ssh", "h/.ssh/id_rsa"), Some(0));
        assert_eq!(first("deploy", ".ssh", "h/.ssh/deploy"), Some(1));
        assert_eq!(first("deploy.pub", ".ssh", "h/.ssh/deploy.pub"), None);
        assert_eq!(first("k.pem", ".ssh", "h/.ssh/k.pem"), Some(1));
        assert_eq!(first("k.pem", ".cursor", "h/.cursor/k.pem"), Some(2));
        assert_eq!(first("mcp.json", ".cursor", "h/.cursor/mcp.json"), Some(3));
        assert_eq!(first("mcp.json", "cursor", "h/cursor/mcp.json"), None);
        assert_eq!(
            first("auth.json", "opencode", "h/.local/share/opencode/auth.json"),
            Some(4)
        );
        assert_eq!(first("auth.json", "opencode", "h/opencode/auth.json"), None);
    }
}
