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
