//! One sort for the whole binary. `slice::sort_by` is generic: every
//! element type and comparator sorted got its own copy of the standard
//! library's driftsort and quicksort, 0.1 MB of the shipped binary over 17
//! call sites (bench/RESULTS.md, "Size, issue 24"). Here the elements'
//! positions are sorted, once instantiated, through a comparator behind a
//! `dyn`, and the elements then moved into that order: the same stable
//! order `sort_by` gives, for a few comparisons' indirection on lists that
//! are short (a report's findings, a probe's entries).

use std::cmp::Ordering;

/// Sorts `v` stably by `cmp`, as `slice::sort_by` does.
pub fn sort_by<T>(v: &mut [T], mut cmp: impl FnMut(&T, &T) -> Ordering) {
    if v.len() < 2 {
        return;
    }
    let mut order: Vec<usize> = (0..v.len()).collect();
    {
        let v: &[T] = v;
        sort_positions(&mut order, &mut |a, b| cmp(&v[a], &v[b]));
    }
    permute(v, order);
}

/// `slice::sort` (stable, by `Ord`). For integers and strings it is also
/// what `sort_unstable` gives: equal elements are indistinguishable.
pub fn sort<T: Ord>(v: &mut [T]) {
    sort_by(v, T::cmp)
}

/// `slice::sort_by_key`: the key is computed per comparison, as there.
pub fn sort_by_key<T, K: Ord>(v: &mut [T], mut key: impl FnMut(&T) -> K) {
    sort_by(v, |a, b| key(a).cmp(&key(b)))
}

/// The one instantiation of the standard library's stable sort.
#[inline(never)]
fn sort_positions(order: &mut [usize], cmp: &mut dyn FnMut(usize, usize) -> Ordering) {
    order.sort_by(|&a, &b| cmp(a, b));
}

/// Moves the elements so that the new `v[i]` is the old `v[order[i]]`,
/// following each cycle of the permutation with swaps.
fn permute<T>(v: &mut [T], mut order: Vec<usize>) {
    for start in 0..v.len() {
        let mut pos = start;
        loop {
            let from = order[pos];
            order[pos] = pos;
            if from == start {
                break;
            }
            v.swap(pos, from);
            pos = from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_and_the_same_order_as_the_standard_sort() {
        let mut st = 0x2545_f491_u64;
        for n in [0usize, 1, 2, 3, 7, 50, 333] {
            // Pairs sorted by the first only: stability shows in the second.
            let v: Vec<(u8, usize)> = (0..n)
                .map(|i| {
                    st ^= st << 13;
                    st ^= st >> 7;
                    st ^= st << 17;
                    ((st % 5) as u8, i)
                })
                .collect();
            let mut ours = v.clone();
            let mut std = v.clone();
            sort_by(&mut ours, |a, b| a.0.cmp(&b.0));
            std.sort_by_key(|a| a.0);
            assert_eq!(ours, std, "n = {n}");
            let mut ours = v.clone();
            let mut std = v;
            sort_by_key(&mut ours, |p| std::cmp::Reverse(p.0));
            std.sort_by_key(|p| std::cmp::Reverse(p.0));
            assert_eq!(ours, std, "n = {n}");
        }
        let mut words = vec!["b".to_string(), "a".into(), "c".into(), "a".into()];
        sort(&mut words);
        assert_eq!(words, ["a", "a", "b", "c"]);
        let mut tail = [9, 3, 1, 2];
        sort(&mut tail[1..]);
        assert_eq!(tail, [9, 1, 2, 3]);
    }
}
