//! Building the index: the walk (`.gitignore` respected, as the workspace index), the
//! persisted index loaded and checked, each file's stamp compared with it, and only the new
//! or changed files read and parsed, on worker threads at a lower CPU priority than the
//! rest of the server, never on the document worker.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use agentls_core::language::Language;
use agentls_core::symbol_index::{extract_tags, FileStamp, FileTags};

use super::read::{read_source, stamp_of, Skip};

/// Files per write-lock taken on the live index while inserting.
const BATCH: usize = 64;

/// How many files were skipped, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkipCounts {
    pub too_large: usize,
    pub binary: usize,
    pub not_utf8: usize,
    pub generated: usize,
    pub unreadable: usize,
    pub vanished: usize,
    /// Links, FIFOs, sockets and files that lead out of the workspace.
    pub special: usize,
}

impl SkipCounts {
    pub fn add(&mut self, skip: Skip) {
        let count = match skip {
            Skip::TooLarge => &mut self.too_large,
            Skip::Binary => &mut self.binary,
            Skip::NotUtf8 => &mut self.not_utf8,
            Skip::Generated => &mut self.generated,
            Skip::Unreadable => &mut self.unreadable,
            Skip::Vanished => &mut self.vanished,
            Skip::Refused => &mut self.special,
        };
        *count += 1;
    }

    pub fn total(&self) -> usize {
        self.too_large
            + self.binary
            + self.not_utf8
            + self.generated
            + self.unreadable
            + self.vanished
            + self.special
    }
}

/// A source file the walk found: its root and path.
pub struct Source {
    pub root: PathBuf,
    pub path: PathBuf,
}

/// The files of the roots that have a grammar, in path order, and how many entries with a
/// source extension were not regular files (links are not followed) or not readable.
pub fn walk_sources(roots: &[PathBuf]) -> (Vec<Source>, SkipCounts) {
    let mut sources = Vec::new();
    let mut skipped = SkipCounts::default();
    for root in roots {
        let walker = ignore::WalkBuilder::new(root)
            .hidden(true)
            .require_git(false)
            .build();
        for entry in walker {
            let entry = match entry {
                Ok(entry) => entry,
                Err(err) => {
                    tracing::debug!("symbol index walk: {err}");
                    skipped.unreadable += 1;
                    continue;
                }
            };
            let Some(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() || language_of(entry.path()).is_none() {
                continue;
            }
            if kind.is_file() {
                sources.push(Source {
                    root: root.clone(),
                    path: entry.into_path(),
                });
            } else {
                skipped.special += 1;
            }
        }
    }
    sources.sort_by(|a, b| a.path.cmp(&b.path));
    sources.dedup_by(|a, b| a.path == b.path);
    (sources, skipped)
}

pub fn language_of(path: &Path) -> Option<Language> {
    path.extension()
        .and_then(|e| e.to_str())
        .and_then(Language::from_extension)
}

/// The index key of a path: its text (a path that is not UTF-8 is not indexed).
pub fn key_of(path: &Path) -> Option<&str> {
    path.to_str()
}

/// One file read and parsed.
pub struct Parsed {
    pub key: String,
    pub stamp: FileStamp,
    pub tags: FileTags,
}

/// Reads and parses one file (on the calling thread).
pub fn parse_file(
    parsers: &mut HashMap<Language, tree_sitter::Parser>,
    source: &Source,
    max_bytes: u64,
) -> Result<Parsed, Skip> {
    let key = key_of(&source.path).ok_or(Skip::NotUtf8)?.to_string();
    let language = language_of(&source.path).ok_or(Skip::Binary)?;
    let (text, stamp) = read_source(&source.path, &source.root, max_bytes)?;
    let parser = match parsers.entry(language) {
        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::hash_map::Entry::Vacant(e) => {
            let mut parser = tree_sitter::Parser::new();
            let grammar = language.grammar().ok_or(Skip::Binary)?;
            parser.set_language(&grammar).map_err(|_| Skip::Binary)?;
            e.insert(parser)
        }
    };
    let tree = parser.parse(&text, None).ok_or(Skip::Generated)?;
    let tags = extract_tags(language, text.as_bytes(), &tree);
    Ok(Parsed { key, stamp, tags })
}

/// Reads and parses `sources` on `threads` threads (each at a lower priority), handing each
/// result to `collect` on the calling thread, in completion order. `keep_going` is asked
/// between files; false stops the work early.
pub fn parse_all(
    sources: &[Source],
    threads: usize,
    max_bytes: u64,
    keep_going: &(dyn Fn() -> bool + Sync),
    collect: &mut dyn FnMut(&Source, Result<Parsed, Skip>),
) {
    let next = AtomicUsize::new(0);
    let (results, received) = mpsc::sync_channel::<(usize, Result<Parsed, Skip>)>(BATCH * 4);
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            let results = results.clone();
            let next = &next;
            scope.spawn(move || {
                lower_priority();
                let mut parsers = HashMap::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(source) = sources.get(i) else { break };
                    if !keep_going() {
                        break;
                    }
                    if results
                        .send((i, parse_file(&mut parsers, source, max_bytes)))
                        .is_err()
                    {
                        break;
                    }
                }
            });
        }
        drop(results);
        for (i, result) in received {
            collect(&sources[i], result);
        }
    });
}

/// Indexing is background work: the kernel runs the editor's requests first.
fn lower_priority() {
    // SAFETY: setpriority with who = 0 changes only the calling thread's nice value on Linux.
    let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 10) };
}

/// The sources whose stamp differs from the index's (or that it lacks); the keys of
/// indexed files the walk no longer found are returned to be removed.
pub fn plan(
    sources: Vec<Source>,
    indexed: &HashMap<String, FileStamp>,
    skipped: &mut SkipCounts,
) -> (Vec<Source>, usize, Vec<String>) {
    let mut to_parse = Vec::new();
    let mut reused = 0;
    let mut seen = HashSet::new();
    for source in sources {
        let Some(key) = key_of(&source.path) else {
            skipped.not_utf8 += 1;
            continue;
        };
        seen.insert(key.to_string());
        let stamp = match std::fs::metadata(&source.path) {
            Ok(metadata) => stamp_of(&metadata),
            // Read (and counted) as the read finds it.
            Err(_) => FileStamp::default(),
        };
        match indexed.get(key) {
            Some(known) if *known == stamp && stamp != FileStamp::default() => reused += 1,
            _ => to_parse.push(source),
        }
    }
    let gone = indexed
        .keys()
        .filter(|key| !seen.contains(key.as_str()))
        .cloned()
        .collect();
    (to_parse, reused, gone)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_deleted_between_the_walk_and_its_read_is_counted_as_vanished() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for name in ["a.rs", "b.py", "c.go"] {
            std::fs::write(root.join(name), "x = 1\n").unwrap();
        }
        std::fs::write(root.join("notes.txt"), "not a source").unwrap();
        let (sources, skipped) = walk_sources(std::slice::from_ref(&root));
        assert_eq!(sources.len(), 3, "only files with a grammar");
        assert_eq!(skipped.total(), 0);
        std::fs::remove_file(root.join("b.py")).unwrap();
        let mut parsed = Vec::new();
        let mut counts = SkipCounts::default();
        parse_all(
            &sources,
            2,
            1 << 20,
            &|| true,
            &mut |source, result| match result {
                Ok(file) => parsed.push(file.key),
                Err(skip) => {
                    assert!(source.path.ends_with("b.py"));
                    counts.add(skip);
                }
            },
        );
        parsed.sort();
        assert_eq!(parsed.len(), 2);
        assert_eq!(counts.vanished, 1);
        assert_eq!(counts.total(), 1);
    }

    #[test]
    fn plan_reuses_unchanged_files_and_drops_the_gone() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a.rs"), "fn a() {}\n").unwrap();
        std::fs::write(root.join("b.rs"), "fn b() {}\n").unwrap();
        let stamp = |name: &str| stamp_of(&std::fs::metadata(root.join(name)).unwrap());
        let key = |name: &str| root.join(name).to_str().unwrap().to_string();
        let indexed: HashMap<String, FileStamp> = [
            (key("a.rs"), stamp("a.rs")),
            (
                key("b.rs"),
                FileStamp {
                    mtime_ns: 1,
                    size: 1,
                },
            ),
            (key("gone.rs"), FileStamp::default()),
        ]
        .into_iter()
        .collect();
        let (sources, _) = walk_sources(std::slice::from_ref(&root));
        let mut skipped = SkipCounts::default();
        let (to_parse, reused, gone) = plan(sources, &indexed, &mut skipped);
        assert_eq!(reused, 1);
        assert_eq!(to_parse.len(), 1);
        assert!(to_parse[0].path.ends_with("b.rs"));
        assert_eq!(gone, [key("gone.rs")]);
    }
}
