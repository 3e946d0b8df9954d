//! SSA construction for MIR locals: dominators, dominance frontiers and pruned φ
//! placement, each in time near-linear in the size of the control-flow graph.
//!
//! `mir_to_offload` turns every scalar local into SSA values itself instead of emitting
//! memory slots for upstream `mem2reg`: that pass walks the whole function once per slot,
//! which made lowering quadratic in the number of locals times the number of operations
//! (a `match` of 8000 arms took minutes). Here:
//!
//! - [`dominators`] is Lengauer and Tarjan's algorithm with path compression
//!   (O(E log V)), iterative so that long chains of blocks cannot overflow the stack;
//! - [`frontiers`] is Cooper, Harvey and Kennedy's walk up the dominator tree from each
//!   predecessor of a join, stopping where an earlier walk for the same join already went
//!   (O(E + Σ|DF|));
//! - [`place_phis`] puts a φ for a local at the blocks of the iterated dominance frontier
//!   of its definitions where it is live on entry (Cytron et al., pruned by liveness), so
//!   each local costs time in proportion to its live range and the frontiers it reaches.
//!
//! Node 0 is the entry; nodes not reachable from it have no immediate dominator.

/// A node with no immediate dominator: the entry, or a node the entry does not reach.
pub const NONE: u32 = u32::MAX;

/// The immediate dominator of each node (`NONE` for the entry and unreachable nodes).
pub fn dominators(succs: &[Vec<u32>], preds: &[Vec<u32>]) -> Vec<u32> {
    let n = succs.len();
    // Depth-first numbering from the entry: `order[k]` is the k-th node visited,
    // `number[v]` its number (NONE if unreachable), `parent[k]` the number of its parent
    // in the depth-first tree. Everything below works on numbers.
    let mut number = vec![NONE; n];
    let mut order: Vec<u32> = Vec::with_capacity(n);
    let mut parent: Vec<u32> = Vec::with_capacity(n);
    let mut stack: Vec<(u32, u32, usize)> = vec![(0, NONE, 0)];
    number[0] = 0;
    order.push(0);
    parent.push(NONE);
    while let Some((v, _, next)) = stack.last_mut() {
        let v = *v as usize;
        if let Some(&w) = succs[v].get(*next) {
            *next += 1;
            if number[w as usize] == NONE {
                let k = order.len() as u32;
                number[w as usize] = k;
                order.push(w);
                parent.push(number[v]);
                stack.push((w, number[v], 0));
            }
        } else {
            stack.pop();
        }
    }
    let m = order.len();
    let mut semi: Vec<u32> = (0..m as u32).collect();
    let mut label: Vec<u32> = (0..m as u32).collect();
    let mut ancestor = vec![NONE; m];
    let mut idom = vec![NONE; m];
    let mut bucket: Vec<Vec<u32>> = vec![Vec::new(); m];
    let mut path: Vec<u32> = Vec::new();
    // The node of least semidominator on the compressed path from `v` to its forest root.
    let mut eval = |v: u32, ancestor: &mut Vec<u32>, label: &mut Vec<u32>, semi: &Vec<u32>| {
        if ancestor[v as usize] == NONE {
            return v;
        }
        // Compress iteratively: collect the path up to the node just below the root,
        // then update it from the top down.
        path.clear();
        let mut x = v;
        while ancestor[ancestor[x as usize] as usize] != NONE {
            path.push(x);
            x = ancestor[x as usize];
        }
        for &x in path.iter().rev() {
            let a = ancestor[x as usize] as usize;
            if semi[label[a] as usize] < semi[label[x as usize] as usize] {
                label[x as usize] = label[a];
            }
            ancestor[x as usize] = ancestor[a];
        }
        label[v as usize]
    };
    for w in (1..m).rev() {
        for &p in &preds[order[w] as usize] {
            let v = number[p as usize];
            if v == NONE {
                continue;
            }
            let u = eval(v, &mut ancestor, &mut label, &semi);
            if semi[u as usize] < semi[w] {
                semi[w] = semi[u as usize];
            }
        }
        bucket[semi[w] as usize].push(w as u32);
        let p = parent[w];
        ancestor[w] = p;
        for v in std::mem::take(&mut bucket[p as usize]) {
            let u = eval(v, &mut ancestor, &mut label, &semi);
            idom[v as usize] = if semi[u as usize] < semi[v as usize] {
                u
            } else {
                p
            };
        }
    }
    for w in 1..m {
        if idom[w] != semi[w] {
            idom[w] = idom[idom[w] as usize];
        }
    }
    let mut out = vec![NONE; n];
    for w in 1..m {
        out[order[w] as usize] = order[idom[w] as usize];
    }
    out
}

/// The dominance frontier of each node, given the immediate dominators.
pub fn frontiers(preds: &[Vec<u32>], idom: &[u32]) -> Vec<Vec<u32>> {
    let n = preds.len();
    let reachable = |v: u32| v == 0 || idom[v as usize] != NONE;
    let mut df: Vec<Vec<u32>> = vec![Vec::new(); n];
    for b in 0..n as u32 {
        // A join: two predecessors, or one for the entry (which is entered from outside).
        let joins = if b == 0 { 1 } else { 2 };
        if !reachable(b) || preds[b as usize].len() < joins {
            continue;
        }
        let stop = idom[b as usize];
        for &p in &preds[b as usize] {
            let mut runner = p;
            // A walk for `b` that reaches a node already given `b` (its last entry, as
            // walks for one join run back to back) follows an earlier walk from there.
            while runner != stop && reachable(runner) && df[runner as usize].last() != Some(&b) {
                df[runner as usize].push(b);
                runner = idom[runner as usize];
                if runner == NONE {
                    break;
                }
            }
        }
    }
    df
}

/// For each node, the variables that need a φ there, in increasing order.
///
/// `defs[x]` lists the nodes assigning variable `x`, `uses[x]` the nodes reading it before
/// any assignment in the node (upward-exposed uses).
pub fn place_phis(
    preds: &[Vec<u32>],
    df: &[Vec<u32>],
    defs: &[Vec<u32>],
    uses: &[Vec<u32>],
) -> Vec<Vec<u32>> {
    let n = preds.len();
    let mut phis: Vec<Vec<u32>> = vec![Vec::new(); n];
    // Per-variable marks, told apart by a stamp so they need no clearing.
    let mut defined = vec![0u32; n];
    let mut live = vec![0u32; n];
    let mut placed = vec![0u32; n];
    let mut queued = vec![0u32; n];
    let mut work: Vec<u32> = Vec::new();
    for (x, (defs, uses)) in defs.iter().zip(uses).enumerate() {
        if uses.is_empty() || defs.is_empty() {
            continue;
        }
        let stamp = x as u32 + 1;
        for &d in defs {
            defined[d as usize] = stamp;
        }
        // Live on entry: backwards from the upward-exposed uses, through nodes that do not
        // assign the variable.
        work.clear();
        for &u in uses {
            if live[u as usize] != stamp {
                live[u as usize] = stamp;
                work.push(u);
            }
        }
        while let Some(b) = work.pop() {
            for &p in &preds[b as usize] {
                if live[p as usize] != stamp && defined[p as usize] != stamp {
                    live[p as usize] = stamp;
                    work.push(p);
                }
            }
        }
        // The iterated dominance frontier of the definitions, restricted to where the
        // variable is live: a φ elsewhere would be dead.
        work.clear();
        for &d in defs {
            if queued[d as usize] != stamp {
                queued[d as usize] = stamp;
                work.push(d);
            }
        }
        while let Some(b) = work.pop() {
            for &y in &df[b as usize] {
                if placed[y as usize] == stamp || live[y as usize] != stamp {
                    continue;
                }
                placed[y as usize] = stamp;
                phis[y as usize].push(x as u32);
                if queued[y as usize] != stamp {
                    queued[y as usize] = stamp;
                    work.push(y);
                }
            }
        }
    }
    phis
}

// `offload-lowering` builds no test harness (see its Cargo.toml); this module has no
// dependencies, so run these with `rustc --edition 2024 --test lowering/src/ssa.rs`.
#[cfg(test)]
mod tests {
    use super::*;

    fn graph(n: usize, edges: &[(u32, u32)]) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
        let mut succs = vec![Vec::new(); n];
        let mut preds = vec![Vec::new(); n];
        for &(a, b) in edges {
            succs[a as usize].push(b);
            preds[b as usize].push(a);
        }
        (succs, preds)
    }

    /// Dominators by the definition: `d` dominates `v` iff `v` is unreachable from the
    /// entry once `d` is removed.
    fn naive_idom(succs: &[Vec<u32>]) -> Vec<u32> {
        let n = succs.len();
        let reach = |removed: Option<u32>| {
            let mut seen = vec![false; n];
            let mut stack = vec![];
            if removed != Some(0) {
                seen[0] = true;
                stack.push(0u32);
            }
            while let Some(v) = stack.pop() {
                for &w in &succs[v as usize] {
                    if Some(w) != removed && !seen[w as usize] {
                        seen[w as usize] = true;
                        stack.push(w);
                    }
                }
            }
            seen
        };
        let all = reach(None);
        let doms: Vec<Vec<bool>> = (0..n as u32)
            .map(|d| {
                let r = reach(Some(d));
                (0..n)
                    .map(|v| all[v] && (v == d as usize || !r[v]))
                    .collect()
            })
            .collect();
        (0..n)
            .map(|v| {
                if v == 0 || !all[v] {
                    return NONE;
                }
                // The strict dominator dominated by every other strict dominator.
                let strict: Vec<usize> = (0..n).filter(|&d| d != v && doms[d][v]).collect();
                strict
                    .iter()
                    .copied()
                    .find(|&d| strict.iter().all(|&e| doms[e][d]))
                    .map_or(NONE, |d| d as u32)
            })
            .collect()
    }

    #[test]
    fn dominators_match_the_definition_on_small_graphs() {
        // A deterministic pseudo-random family of graphs, with loops, joins, irreducible
        // parts and unreachable nodes.
        let mut seed = 12345u64;
        let mut next = |k: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % k
        };
        for _ in 0..500 {
            let n = 1 + next(12) as usize;
            let mut edges = vec![];
            for a in 0..n as u32 {
                for _ in 0..next(3) {
                    edges.push((a, next(n as u64) as u32));
                }
            }
            let (succs, preds) = graph(n, &edges);
            let idom = dominators(&succs, &preds);
            assert_eq!(idom, naive_idom(&succs), "{edges:?}");
            // Frontiers by the definition: `y` is in DF(x) iff x dominates a predecessor
            // of `y` and does not strictly dominate `y`.
            let dominates = |a: u32, mut b: u32| loop {
                if a == b {
                    return true;
                }
                if b == 0 || idom[b as usize] == NONE {
                    return false;
                }
                b = idom[b as usize];
            };
            let reachable = |v: u32| v == 0 || idom[v as usize] != NONE;
            let mut df = frontiers(&preds, &idom);
            for (x, f) in df.iter_mut().enumerate() {
                f.sort();
                let x = x as u32;
                let want: Vec<u32> = (0..n as u32)
                    .filter(|&y| {
                        reachable(x)
                            && reachable(y)
                            && (x == y || !dominates(x, y))
                            && preds[y as usize]
                                .iter()
                                .any(|&p| reachable(p) && dominates(x, p))
                    })
                    .collect();
                assert_eq!(*f, want, "DF({x}) of {edges:?}");
            }
            // φs: the iterated frontier of the definitions, where the variable is live.
            let defs: Vec<u32> = (0..n as u32).filter(|_| next(3) == 0).collect();
            let uses: Vec<u32> = (0..n as u32).filter(|_| next(3) == 0).collect();
            let mut live = vec![false; n];
            let mut work = uses.clone();
            for &u in &uses {
                live[u as usize] = true;
            }
            while let Some(b) = work.pop() {
                for &p in &preds[b as usize] {
                    if !live[p as usize] && !defs.contains(&p) {
                        live[p as usize] = true;
                        work.push(p);
                    }
                }
            }
            let mut idf = vec![false; n];
            loop {
                let mut changed = false;
                for x in 0..n {
                    if defs.contains(&(x as u32)) || idf[x] {
                        for &y in &df[x] {
                            changed |= !idf[y as usize];
                            idf[y as usize] = true;
                        }
                    }
                }
                if !changed {
                    break;
                }
            }
            let want: Vec<Vec<u32>> = (0..n)
                .map(|y| {
                    if idf[y] && live[y] && !defs.is_empty() {
                        vec![0]
                    } else {
                        vec![]
                    }
                })
                .collect();
            let got = place_phis(
                &preds,
                &df,
                std::slice::from_ref(&defs),
                std::slice::from_ref(&uses),
            );
            assert_eq!(got, want, "{edges:?} defs {defs:?} uses {uses:?}");
        }
    }

    #[test]
    fn a_long_chain_does_not_recurse() {
        let n = 200_000u32;
        let edges: Vec<(u32, u32)> = (0..n - 1).map(|i| (i, i + 1)).collect();
        let (succs, preds) = graph(n as usize, &edges);
        let idom = dominators(&succs, &preds);
        assert_eq!(idom[n as usize - 1], n - 2);
        let df = frontiers(&preds, &idom);
        assert!(df.iter().all(Vec::is_empty));
    }

    #[test]
    fn phis_go_only_where_the_variable_is_live() {
        // 0 → 1, 0 → 2, 1 → 3, 2 → 3, 3 → 4; x defined in 1 and 2, read in 4;
        // y defined in 1 and 2, never read after.
        let (succs, preds) = graph(5, &[(0, 1), (0, 2), (1, 3), (2, 3), (3, 4)]);
        let idom = dominators(&succs, &preds);
        assert_eq!(idom, vec![NONE, 0, 0, 0, 3]);
        let df = frontiers(&preds, &idom);
        let phis = place_phis(&preds, &df, &[vec![1, 2], vec![1, 2]], &[vec![4], vec![]]);
        assert_eq!(phis, vec![vec![], vec![], vec![], vec![0], vec![]]);
    }

    #[test]
    fn a_loop_variable_gets_a_phi_at_the_header() {
        // 0 → 1 (header) → 2 (body) → 1, 1 → 3; i defined in 0 and 2, read in 1.
        let (succs, preds) = graph(4, &[(0, 1), (1, 2), (2, 1), (1, 3)]);
        let idom = dominators(&succs, &preds);
        let df = frontiers(&preds, &idom);
        let phis = place_phis(&preds, &df, &[vec![0, 2]], &[vec![1]]);
        assert_eq!(phis, vec![vec![], vec![0], vec![], vec![]]);
    }
}
