//! Meets of persistent maps and sets, the states of the forward analyses
//! ([`crate::simplify`], [`crate::safety`]). A join keeps what every arriving state has;
//! that is found by visiting the cheaper of the smaller state's entries (each looked up
//! in the other) or only where the two states' structure differs: a state made from
//! another by a few changes shares the rest of its tree with it. Either way a join costs
//! what the states do not share, not their size, so the analyses stay near-linear in
//! kernel size.

use imbl::{OrdMap, OrdSet, ordmap, ordset};

/// A state this many times larger than the other is looked up into, not walked.
const LOOKUP_RATIO: usize = 4;

/// The keys of `a` that `b` lacks or maps to another value.
pub fn lost_keys<K: Ord + Clone, V: PartialEq + Clone>(
    a: &OrdMap<K, V>,
    b: &OrdMap<K, V>,
) -> Vec<K> {
    if a.len().saturating_mul(LOOKUP_RATIO) < b.len() {
        return a
            .iter()
            .filter(|(k, v)| b.get(*k) != Some(*v))
            .map(|(k, _)| k.clone())
            .collect();
    }
    a.diff(b)
        .filter_map(|d| match d {
            ordmap::DiffItem::Add(..) => None,
            ordmap::DiffItem::Update { old: (k, _), .. } | ordmap::DiffItem::Remove(k, _) => {
                Some(k.clone())
            }
        })
        .collect()
}

/// The members of `a` that `b` lacks.
pub fn lost_members<A: Ord + Clone>(a: &OrdSet<A>, b: &OrdSet<A>) -> Vec<A> {
    if a.len().saturating_mul(LOOKUP_RATIO) < b.len() {
        return a.iter().filter(|x| !b.contains(*x)).cloned().collect();
    }
    a.diff(b)
        .filter_map(|d| match d {
            ordset::DiffItem::Add(..) => None,
            ordset::DiffItem::Remove(x) => Some(x.clone()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(entries: &[(u32, i32)]) -> OrdMap<u32, i32> {
        entries.iter().copied().collect()
    }

    #[test]
    fn lost_keys_are_those_missing_or_changed_whichever_way_is_walked() {
        let a = map(&[(1, 10), (2, 20), (3, 30)]);
        let mut b = a.clone();
        b.insert(2, 21);
        b.remove(&3);
        b.insert(4, 40);
        assert_eq!(lost_keys(&a, &b), vec![2, 3]);
        // A state much larger than the other is looked up into, with the same answer.
        let mut big = b.clone();
        big.extend((100u32..200).map(|k| (k, 0)));
        assert_eq!(lost_keys(&a, &big), vec![2, 3]);
        assert_eq!(lost_keys(&a, &a.clone()), Vec::<u32>::new());
    }

    #[test]
    fn lost_members_are_those_the_other_lacks() {
        let a: OrdSet<u32> = [1u32, 2, 3].into_iter().collect();
        let b: OrdSet<u32> = [2u32, 5].into_iter().collect();
        assert_eq!(lost_members(&a, &b), vec![1, 3]);
        let big: OrdSet<u32> = (2u32..100).collect();
        assert_eq!(lost_members(&a, &big), vec![1]);
    }
}
