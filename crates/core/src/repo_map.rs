//! The repository map: the workspace's most referenced definitions, by file, as one block
//! of the system message (`context.repoMap.maxTokens`; 0 = none). Like Aider's map, but
//! not personalised: it is part of the stable prefix, so it must not follow the cursor.
//!
//! Ranking: files by the PageRank over the symbol index's reference graph (uniform jumps,
//! [`rank_files`](crate::symbol_index::rank_files) with no focus); a definition scores the
//! rank of every other file that uses its name, shared among the files defining that name
//! (names defined in more than 16 files, like `new`, score nothing, as in the file graph).
//! The best definitions are kept as many as the budget holds (counted with the session's
//! tokenizer), grouped by file, the files in order of their best definition, the
//! definitions in line order, each as one signature line.
//!
//! Keeping: [`choose`] decides whether a freshly built map replaces the kept one. It does
//! only when the settings changed or the set of (path, name) entries moved by more than
//! [`REBUILD_SHARE`]: the map sits before the history, and a prompt cache is keyed by the
//! prefix's bytes, so re-rendering it after every small edit (a line number, a signature
//! tweaked, a rank nudged) would make the provider re-read the whole conversation each
//! turn. A map a few entries out of date costs less than that; the model reads files or
//! calls `find_symbol` before relying on a detail.

use std::collections::{HashMap, HashSet};

use crate::symbol_index::{FileRanks, SymbolIndex, SymbolKind, MAX_DEFINERS};
use crate::tokens::TokenizerKind;

/// The largest budget the setting takes.
pub const MAX_TOKENS: usize = 32_768;

/// A fresh map replaces the kept one when more than this share of the entries differ.
pub const REBUILD_SHARE: f64 = 0.2;

/// A signature line is cut here (characters), marked with `…`.
const MAX_LINE_CHARS: usize = 160;

/// What a map is built for; a kept map built for other settings is replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapSettings {
    pub max_tokens: usize,
    pub tokenizer: TokenizerKind,
    /// The text before the entries (`prompts/repo_map.md`).
    pub heading: String,
}

/// One definition the map shows.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MapEntry {
    /// As displayed (relative to the workspace root).
    pub path: String,
    pub name: String,
    /// 0-based line of the name.
    pub line: u32,
}

/// A rendered map and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoMap {
    /// The heading and the entries; empty when nothing fits or nothing is referenced.
    pub text: String,
    pub tokens: usize,
    /// In the map's order.
    pub entries: Vec<MapEntry>,
    /// The index revision the map was last compared with.
    pub revision: u64,
    pub settings: MapSettings,
}

/// A definition worth showing, with its score.
struct Candidate<'a> {
    score: f64,
    path: String,
    name: &'a str,
    container: Option<&'a str>,
    signature: &'a str,
    start_line: u32,
    name_line: u32,
}

/// The map of `index` for `settings`: definitions ranked with `ranks` (a ranking with no
/// focus), cut to the budget. `display` turns an index path into the path shown.
pub fn build(
    index: &SymbolIndex,
    ranks: &FileRanks,
    settings: &MapSettings,
    display: &dyn Fn(&str) -> String,
) -> RepoMap {
    let mut map = RepoMap {
        text: String::new(),
        tokens: 0,
        entries: Vec::new(),
        revision: index.revision(),
        settings: settings.clone(),
    };
    if settings.max_tokens == 0 {
        return map;
    }
    let mut candidates = candidates(index, ranks, display);
    // Every line costs at least a token: more candidates than that can never fit.
    candidates.truncate(settings.max_tokens);
    // The most entries whose rendering fits, by bisection (the count grows with entries).
    let (mut fits, mut over) = (0, candidates.len() + 1);
    let mut best = (String::new(), 0);
    while over - fits > 1 {
        let mid = (fits + over) / 2;
        let text = render(&settings.heading, &candidates[..mid]);
        let tokens = settings.tokenizer.count(&text);
        if tokens <= settings.max_tokens {
            fits = mid;
            best = (text, tokens);
        } else {
            over = mid;
        }
    }
    (map.text, map.tokens) = best;
    map.entries = ordered(&candidates[..fits])
        .into_iter()
        .map(|c| MapEntry {
            path: c.path.clone(),
            name: c.name.to_string(),
            line: c.name_line,
        })
        .collect();
    map
}

/// The map to use: `fresh` when there is no kept map, the settings changed, or the
/// entries moved by more than [`REBUILD_SHARE`]; else the kept one, unchanged but for the
/// revision it was compared with.
pub fn choose(kept: Option<RepoMap>, fresh: RepoMap) -> RepoMap {
    match kept {
        Some(mut kept)
            if kept.settings == fresh.settings
                && drift(&kept.entries, &fresh.entries) <= REBUILD_SHARE =>
        {
            kept.revision = fresh.revision;
            kept
        }
        _ => fresh,
    }
}

/// Whether `kept` still answers for an index at `revision` without looking (nothing
/// changed since it was compared, and the settings are the same).
pub fn is_current(kept: &RepoMap, revision: u64, settings: &MapSettings) -> bool {
    kept.revision == revision && &kept.settings == settings
}

/// The share of entries (by path and name) that one map has and the other has not, over
/// the larger map: 0 for the same set, 1 for disjoint sets or one empty and not the other.
pub fn drift(kept: &[MapEntry], fresh: &[MapEntry]) -> f64 {
    let key = |e: &MapEntry| (e.path.clone(), e.name.clone());
    let kept: HashSet<(String, String)> = kept.iter().map(key).collect();
    let fresh: HashSet<(String, String)> = fresh.iter().map(key).collect();
    let larger = kept.len().max(fresh.len());
    if larger == 0 {
        return 0.0;
    }
    let common = kept.intersection(&fresh).count();
    (larger - common) as f64 / larger as f64
}

/// Every definition some other file uses, best first (ties by path, then line).
fn candidates<'a>(
    index: &'a SymbolIndex,
    ranks: &FileRanks,
    display: &dyn Fn(&str) -> String,
) -> Vec<Candidate<'a>> {
    let slots = index.file_slots();
    let file_rank: Vec<f64> = slots
        .iter()
        .map(|slot| slot.as_ref().map_or(0.0, |entry| ranks.rank(&entry.path)))
        .collect();
    // Per name: the ranks of the files using it, summed, and how many files define it
    // (computed once per name: a workspace has far more definitions than distinct names).
    let mut by_name: HashMap<u32, (f64, usize)> = HashMap::new();
    let mut out = Vec::new();
    for (file_id, slot) in slots.iter().enumerate() {
        let Some(entry) = slot else { continue };
        let mut shown: Option<String> = None;
        for definition in &entry.definitions {
            if matches!(definition.kind, SymbolKind::Impl | SymbolKind::Module) {
                continue;
            }
            let Some(name) = index.name_id(definition.name()) else {
                continue;
            };
            let (users, definers) = *by_name.entry(name).or_insert_with(|| {
                let mut definers: Vec<u32> = index
                    .definition_places(name)
                    .iter()
                    .map(|(file, _)| *file)
                    .collect();
                definers.sort_unstable();
                definers.dedup();
                let users = index
                    .referencing_ids(name)
                    .iter()
                    .map(|user| file_rank[*user as usize])
                    .sum();
                (users, definers.len())
            });
            if definers > MAX_DEFINERS {
                continue;
            }
            // Only other files count: a name used where it is defined says nothing.
            let own = if entry.uses(name) {
                file_rank[file_id]
            } else {
                0.0
            };
            // Rounded: sums over hash-ordered ranks differ in their last bits between
            // runs, and the order must not; what rounds to 0 is used nowhere else.
            let score = ((users - own) / definers as f64 * 1e9).round();
            if score <= 0.0 {
                continue;
            }
            let path = shown.get_or_insert_with(|| display(&entry.path)).clone();
            out.push(Candidate {
                score,
                path,
                name: definition.name(),
                container: definition.container(),
                signature: definition.signature(),
                start_line: definition.start_line,
                name_line: definition.name_line,
            });
        }
    }
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.path.cmp(&b.path))
            .then(a.start_line.cmp(&b.start_line))
    });
    out
}

/// The chosen candidates in the map's order: files by their best entry, then by line.
fn ordered<'c, 'a>(chosen: &'c [Candidate<'a>]) -> Vec<&'c Candidate<'a>> {
    let mut file_order: Vec<&str> = Vec::new();
    for candidate in chosen {
        if !file_order.contains(&candidate.path.as_str()) {
            file_order.push(&candidate.path);
        }
    }
    let mut out: Vec<&Candidate> = chosen.iter().collect();
    out.sort_by_key(|c| (file_order.iter().position(|p| *p == c.path), c.start_line));
    out
}

/// The heading, then per file its path and its entries' signatures, indented; a member
/// under its container's line.
fn render(heading: &str, chosen: &[Candidate]) -> String {
    if chosen.is_empty() {
        return String::new();
    }
    let mut text = heading.trim_end().to_string();
    let mut path: Option<&str> = None;
    let mut container: Option<&str> = None;
    for candidate in ordered(chosen) {
        if path != Some(candidate.path.as_str()) {
            text.push_str("\n\n");
            text.push_str(&candidate.path);
            path = Some(&candidate.path);
            container = None;
        }
        let signature = one_line(candidate.signature);
        match candidate.container {
            Some(owner) => {
                if container != Some(owner) {
                    text.push_str("\n  ");
                    text.push_str(&one_line(owner));
                    container = Some(owner);
                }
                text.push_str("\n    ");
            }
            None => {
                // A type's members (container = its name) follow without a repeated line.
                container = Some(candidate.name);
                text.push_str("\n  ");
            }
        }
        text.push_str(&signature);
    }
    text
}

/// The signature on one line, whitespace runs collapsed, cut at [`MAX_LINE_CHARS`].
fn one_line(signature: &str) -> String {
    let joined = signature.split_whitespace().collect::<Vec<_>>().join(" ");
    match joined.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => format!("{}…", &joined[..cut]),
        None => joined,
    }
}

#[cfg(test)]
mod tests;
