//! Which files matter, by the reference graph: a file that uses a name points at the files
//! that define it, and a PageRank over those edges, with its random jumps landing on a
//! chosen file, ranks the files that file (and what it uses, and so on) depends on.
//!
//! The edges go through names rather than being built file to file, and names defined in
//! many files (`new`, `get`, `__init__`) are left out: they say little about which file is
//! meant and would make the graph quadratic.

use std::collections::HashMap;

use super::SymbolIndex;

/// Names with more defining files than this carry no edge.
pub(crate) const MAX_DEFINERS: usize = 16;
const DAMPING: f64 = 0.85;
const ITERATIONS: usize = 30;

/// A rank per file (summing to 1 over the ranked files), for the index revision it was
/// computed from.
#[derive(Debug, Clone, Default)]
pub struct FileRanks {
    ranks: HashMap<String, f64>,
    pub revision: u64,
    pub focus: Option<String>,
}

impl FileRanks {
    /// 0 for a file not ranked.
    pub fn rank(&self, path: &str) -> f64 {
        self.ranks.get(path).copied().unwrap_or(0.0)
    }

    /// The files ranked highest first (ties by path), at most `limit`.
    pub fn top(&self, limit: usize) -> Vec<(&str, f64)> {
        let mut all: Vec<(&str, f64)> = self.ranks.iter().map(|(p, r)| (p.as_str(), *r)).collect();
        all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
        all.truncate(limit);
        all
    }

    pub fn len(&self) -> usize {
        self.ranks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ranks.is_empty()
    }
}

/// PageRank over the index's files, personalised toward `focus` when it is in the index
/// (uniform otherwise).
pub fn rank_files(index: &SymbolIndex, focus: Option<&str>) -> FileRanks {
    let slots = index.file_slots();
    let n = slots.len();
    let mut ranks = FileRanks {
        ranks: HashMap::new(),
        revision: index.revision(),
        focus: focus.map(str::to_string),
    };
    let live = slots.iter().filter(|s| s.is_some()).count();
    if live == 0 {
        return ranks;
    }
    // Out-edges of each file: (target file, weight), weights summing to 1 per file.
    let mut edges: Vec<Vec<(u32, f64)>> = vec![Vec::new(); n];
    for (from, slot) in slots.iter().enumerate() {
        let Some(entry) = slot else { continue };
        let mut out: HashMap<u32, f64> = HashMap::new();
        for (name, uses) in entry.reference_counts() {
            let places = index.definition_places(name);
            if places.is_empty() {
                continue;
            }
            let mut definers: Vec<u32> = places.iter().map(|(file, _)| *file).collect();
            definers.sort_unstable();
            definers.dedup();
            if definers.len() > MAX_DEFINERS {
                continue;
            }
            // A long, specific name says more than a short one; using it often, a little more.
            let specific = if index.name(name).len() >= 8 {
                2.0
            } else {
                1.0
            };
            let weight = specific * (uses as f64).sqrt() / definers.len() as f64;
            for file in definers {
                if file as usize != from {
                    *out.entry(file).or_default() += weight;
                }
            }
        }
        let total: f64 = out.values().sum();
        if total > 0.0 {
            let mut list: Vec<(u32, f64)> = out.into_iter().map(|(f, w)| (f, w / total)).collect();
            list.sort_unstable_by_key(|(f, _)| *f);
            edges[from] = list;
        }
    }
    let focus_id = focus.and_then(|path| {
        slots
            .iter()
            .position(|s| s.as_ref().is_some_and(|e| e.path == path))
    });
    let jump: Vec<f64> = (0..n)
        .map(|i| match focus_id {
            Some(f) => (i == f) as u8 as f64,
            None => slots[i].is_some() as u8 as f64 / live as f64,
        })
        .collect();
    let mut rank = jump.clone();
    let mut next = vec![0.0; n];
    for _ in 0..ITERATIONS {
        next.iter_mut().for_each(|r| *r = 0.0);
        let mut dangling = 0.0;
        for (from, out) in edges.iter().enumerate() {
            if out.is_empty() {
                dangling += rank[from];
                continue;
            }
            for &(to, weight) in out {
                next[to as usize] += DAMPING * rank[from] * weight;
            }
        }
        // Random jumps and the rank of files that point nowhere go back to the jump vector.
        let spread = (1.0 - DAMPING) + DAMPING * dangling;
        for (r, j) in next.iter_mut().zip(&jump) {
            *r += spread * j;
        }
        std::mem::swap(&mut rank, &mut next);
    }
    for (slot, r) in slots.iter().zip(rank) {
        if let Some(entry) = slot {
            ranks.ranks.insert(entry.path.clone(), r);
        }
    }
    ranks
}
