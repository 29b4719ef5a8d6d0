//! Which workspace definitions the identifiers in play refer to. [`fetch`] looks each name
//! up in the symbol index, ranked for the active file ([`SymbolIndex::resolve`]: a
//! definition the file imports or its module path reaches first, then the reference
//! graph's rank toward the file, then the nearest path) and keeps an owned copy, so the
//! host holds the index's lock only for that. [`pick`] then chooses what the
//! `definitions` part shows, in the order it keeps them when cut: names with one definition
//! first, then the best guess of each ambiguous name, then their alternatives, each tier in
//! the order the identifiers were met (the cursor's line, the selection, the enclosing
//! symbol). Ambiguous names are ranked, not dropped.
//!
//! Pure: over the index's data, no IO.

use std::collections::{HashMap, HashSet};

use crate::language::Language;
use crate::symbol_index::{Definition, FileRanks, SymbolIndex, Usage};
use crate::syntax::{Identifier, SymbolKind};

/// Alternatives shown for an ambiguous name beyond its best guess.
const MAX_ALTERNATIVES: usize = 2;
/// A name with more definitions than this (`new`, `get`, `__init__`) is a weak guess: only
/// its best one is shown, after every other name's.
const MAX_SPECIFIC_DEFINITIONS: usize = 8;
/// Definitions kept per name by [`fetch`]: enough for the best and its alternatives, and to
/// know a name is common.
const FETCHED_PER_NAME: usize = MAX_SPECIFIC_DEFINITIONS + 1;

/// A definition of the workspace, as the index has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceDefinition {
    /// As shown to the model (relative to its workspace root).
    pub display_path: String,
    pub language: Language,
    pub definition: Definition,
}

/// The definitions of the identifiers in play, fetched from the index for one build.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkspaceDefinitions {
    /// Name → its definitions outside the active file, best first for the active file
    /// (at most a few; `total` says how many there are).
    pub by_name: HashMap<String, Found>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    pub definitions: Vec<WorkspaceDefinition>,
    /// All the definitions of the name outside the active file.
    pub total: usize,
}

/// The definitions of `identifiers` in the index, ranked for the reader of `active_key`
/// (the active file's index key); `display` turns an index key into the path shown. A name
/// the active file defines itself is left out: the enclosing symbol and the outline show
/// that file, and the name most likely means its own definition.
pub fn fetch(
    index: &SymbolIndex,
    ranks: Option<&FileRanks>,
    identifiers: &[Identifier],
    active_key: &str,
    display: impl Fn(&str) -> String,
) -> WorkspaceDefinitions {
    let mut by_name = HashMap::new();
    for identifier in identifiers {
        let name = identifier.name.as_str();
        if by_name.contains_key(name) {
            continue;
        }
        // The first use of a name met says what it is used as and through what.
        let usage = Usage {
            kind: Some(identifier.kind),
            qualifier: identifier.qualifier.as_deref(),
        };
        let hits = index.resolve_used(name, usage, active_key, ranks);
        if hits.first().is_none_or(|hit| hit.path == active_key) {
            continue;
        }
        let elsewhere: Vec<_> = hits
            .into_iter()
            .filter(|hit| hit.path != active_key && hit.definition.kind != SymbolKind::Impl)
            .collect();
        if elsewhere.is_empty() {
            continue;
        }
        let found = Found {
            total: elsewhere.len(),
            definitions: elsewhere
                .iter()
                .take(FETCHED_PER_NAME)
                .map(|hit| WorkspaceDefinition {
                    display_path: display(hit.path),
                    language: hit.language,
                    definition: hit.definition.clone(),
                })
                .collect(),
        };
        by_name.insert(name.to_string(), found);
    }
    WorkspaceDefinitions { by_name }
}

/// How sure a pick is; lower is kept first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// The only definition of the name outside the active file.
    Unique,
    /// The best-ranked of a few.
    Best,
    /// An alternative of an ambiguous name, or the best guess of a very common one.
    Alternative,
}

/// What the `definitions` part shows of `workspace` for `identifiers`, in the order to keep
/// them; `skip` names the identifiers already answered (by an open buffer).
pub fn pick<'a>(
    identifiers: &[Identifier],
    workspace: &'a WorkspaceDefinitions,
    skip: impl Fn(&str) -> bool,
) -> Vec<(Tier, &'a WorkspaceDefinition)> {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut picked: Vec<(Tier, usize, &WorkspaceDefinition)> = Vec::new();
    for (order, identifier) in identifiers.iter().enumerate() {
        let name = identifier.name.as_str();
        if !seen.insert(name) || skip(name) {
            continue;
        }
        let Some(found) = workspace.by_name.get(name) else {
            continue;
        };
        // Ranked by `fetch` for the first use of the name, its kind and qualifier included.
        let ranked: Vec<&WorkspaceDefinition> = found.definitions.iter().collect();
        let Some(best) = ranked.first() else {
            continue;
        };
        match found.total {
            1 => picked.push((Tier::Unique, order, best)),
            n if n > MAX_SPECIFIC_DEFINITIONS => picked.push((Tier::Alternative, order, best)),
            _ => {
                picked.push((Tier::Best, order, best));
                for alternative in ranked.iter().skip(1).take(MAX_ALTERNATIVES) {
                    picked.push((Tier::Alternative, order, alternative));
                }
            }
        }
    }
    // Stable: within a tier, identifiers in the order they were met, a name's
    // alternatives in rank order.
    picked.sort_by_key(|(tier, order, _)| (*tier, *order));
    picked
        .into_iter()
        .map(|(tier, _, definition)| (tier, definition))
        .collect()
}
