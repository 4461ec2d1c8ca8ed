//! The one glob: `*` matches any run of characters within one path
//! component, and nothing else is special. The catalogs (devices, kernel
//! interfaces, sockets, credentials, artifacts) and the policy all use it.

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
