//! A thread's most recently used entries of a cache, found by comparing keys: how a
//! steady-state launch finds its kernel's loaded code without formatting a key, hashing
//! or taking a lock. Each user keeps one per thread (`thread_local!`) in front of its
//! shared cache.

/// How many entries a thread keeps: more kernels than a time step usually alternates.
const KEPT: usize = 8;

/// Up to [`KEPT`] entries, the oldest replaced first.
pub(crate) struct Recent<K, V> {
    entries: [Option<(K, V)>; KEPT],
    next: usize,
}

impl<K: PartialEq, V: Clone> Recent<K, V> {
    pub(crate) const fn new() -> Self {
        Recent {
            entries: [const { None }; KEPT],
            next: 0,
        }
    }

    pub(crate) fn get(&self, key: &K) -> Option<V> {
        self.entries
            .iter()
            .flatten()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }

    pub(crate) fn put(&mut self, key: K, value: V) {
        self.entries[self.next] = Some((key, value));
        self.next = (self.next + 1) % KEPT;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_eight_and_forgets_the_oldest() {
        let mut recent = Recent::new();
        for k in 0..9 {
            recent.put(k, k * 10);
        }
        assert_eq!(recent.get(&0), None);
        assert_eq!(recent.get(&1), Some(10));
        assert_eq!(recent.get(&8), Some(80));
        assert_eq!(recent.get(&9), None);
    }
}
