//! The workspace symbol index at the edges: built in the background over the workspace's
//! source files, kept current (open buffers lazily from their trees, other files on
//! `workspace/didChangeWatchedFiles` and by modification time when a result is read),
//! persisted under the state directory, and queried through [`Symbols`], the one handle
//! the tools, the gather recipe and the front doors share.
//!
//! Invariants: indexing runs on its own threads at a lower priority and never on, or
//! waited for by, the document worker; a query takes a read lock for microseconds (writers
//! insert in small batches); a persisted index is checked (version, checksum, every length)
//! before use, and every file it lists is re-parsed unless its (mtime, size) is unchanged.

pub mod build;
pub mod disk;
pub mod read;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use agentls_core::document::DocumentSnapshot;
use agentls_core::language::Language;
use agentls_core::symbol_index::{
    extract_tags, rank_files, Definition, FileRanks, FileStamp, Query, SymbolIndex, SymbolKind,
};

use agentls_core::repo_map::{self, MapSettings, RepoMap};

use crate::locks::{Locked, ReadWriteLocked};
use build::{key_of, language_of, parse_all, parse_file, plan, walk_sources, SkipCounts, Source};

/// What a build is asked to do.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    pub roots: Vec<PathBuf>,
    /// `syntax.maxDocumentBytes`: larger files are skipped.
    pub max_file_bytes: u64,
    /// Where the index is persisted; None: not persisted.
    pub store: Option<PathBuf>,
    pub threads: usize,
}

impl BuildOptions {
    /// The options of a host's index of `roots` under `config`, persisted in the state
    /// directory.
    pub fn of(roots: &[PathBuf], config: &agentls_core::config::Config) -> BuildOptions {
        let canonical_roots: Vec<PathBuf> = roots.iter().map(|r| canonical(r)).collect();
        let state_dir = crate::store::session_log::state_dir(config.state_dir.as_deref());
        BuildOptions {
            store: disk::store_path(&state_dir, &canonical_roots),
            roots: canonical_roots,
            max_file_bytes: config.syntax_max_document_bytes as u64,
            threads: BuildOptions::default_threads(),
        }
    }

    /// The server's default: every core but one (at least one) for indexing.
    pub fn default_threads() -> usize {
        std::thread::available_parallelism()
            .map(|n| n.get().saturating_sub(1))
            .unwrap_or(1)
            .max(1)
    }
}

/// What became of the persisted index at the start of a build.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Persisted {
    /// Not persisted (no state directory).
    Off,
    Missing,
    Loaded,
    /// Found but not trusted: rebuilt. The reason.
    Rebuilt(String),
    /// The live index of an earlier build was kept and brought up to date.
    Live,
}

/// The state of the index, for `$/progress`, `agentls/debug/workspace` and benchmarks.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SymbolsStatus {
    /// `notstarted`, `indexing` or `ready`.
    pub status: &'static str,
    pub files: usize,
    pub definitions: usize,
    /// Files of the last build whose persisted entry was still current.
    pub reused: usize,
    /// Files of the last build read and parsed.
    pub parsed: usize,
    /// Files dropped by the last build (gone from the workspace).
    pub removed: usize,
    pub skipped: SkipCounts,
    pub skipped_total: usize,
    pub persisted: Persisted,
    pub elapsed_ms: u128,
    /// Files parsed since the server started, by builds and updates (a debug counter).
    pub parses_total: u64,
    /// The last save's error, if it failed.
    pub save_error: Option<String>,
}

impl Default for SymbolsStatus {
    fn default() -> Self {
        SymbolsStatus {
            status: "notstarted",
            files: 0,
            definitions: 0,
            reused: 0,
            parsed: 0,
            removed: 0,
            skipped: SkipCounts::default(),
            skipped_total: 0,
            persisted: Persisted::Off,
            elapsed_ms: 0,
            parses_total: 0,
            save_error: None,
        }
    }
}

impl SymbolsStatus {
    /// The `$/progress` end message.
    pub fn summary(&self) -> String {
        format!(
            "Indexed symbols of {} files ({} reused, {} parsed, {} skipped) in {} ms",
            self.files, self.reused, self.parsed, self.skipped_total, self.elapsed_ms
        )
    }
}

/// A definition found, with its file.
#[derive(Debug, Clone)]
pub struct FoundDefinition {
    pub path: PathBuf,
    pub language: Language,
    pub definition: Definition,
}

/// A line using a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundReference {
    pub path: PathBuf,
    /// 0-based.
    pub line: u32,
}

#[derive(Default)]
struct Inner {
    index: RwLock<SymbolIndex>,
    status: RwLock<SymbolsStatus>,
    options: RwLock<Option<BuildOptions>>,
    /// Bumped by each build: an older one stops.
    generation: AtomicU64,
    parses: AtomicU64,
    /// Open buffers indexed from their text, by the version indexed.
    open_versions: Mutex<HashMap<PathBuf, i32>>,
    /// The ranking last computed, reused while its focus is asked again and the index has
    /// not changed much.
    ranks: Mutex<Option<Arc<FileRanks>>>,
    /// The ranking with no focus (the repository map's), apart: asking for it must not
    /// throw away the ranking of the file being edited, and the other way round.
    unfocused_ranks: Mutex<Option<Arc<FileRanks>>>,
    /// The repository map last handed out (see `repo_map`).
    repo_map: Mutex<Option<Arc<RepoMap>>>,
    /// One save at a time.
    saving: Mutex<()>,
}

/// The handle on the workspace symbol index (cheap to clone; every clone is the same index).
#[derive(Clone, Default)]
pub struct Symbols {
    inner: Arc<Inner>,
}

impl Symbols {
    /// The index of `roots` for a host without an editor (`agentls ask`, `agentls
    /// context`): the persisted one brought up to date, or built on the spot, blocking.
    pub fn open(roots: &[PathBuf], config: &agentls_core::config::Config) -> Symbols {
        let symbols = Symbols::default();
        let status = symbols.build(BuildOptions::of(roots, config), &|_, _| {});
        tracing::info!("{}", status.summary());
        symbols
    }

    /// The index of `roots` for a host that must not wait for it (an ACP session): the
    /// persisted one brought up to date, or built, on a thread of its own; until then
    /// queries see what is indexed so far.
    pub fn open_in_background(roots: &[PathBuf], config: &agentls_core::config::Config) -> Symbols {
        let symbols = Symbols::default();
        let options = BuildOptions::of(roots, config);
        let building = symbols.clone();
        let spawned = std::thread::Builder::new()
            .name("agentls-symbols".into())
            .spawn(move || {
                let status = building.build(options, &|_, _| {});
                tracing::info!("{}", status.summary());
            });
        if let Err(err) = spawned {
            tracing::error!("cannot start the symbol indexer: {err}");
        }
        symbols
    }

    pub fn status(&self) -> SymbolsStatus {
        let mut status = self.inner.status.read_locked().clone();
        let index = self.inner.index.read_locked();
        status.files = index.file_count();
        status.definitions = index.definition_count();
        status.parses_total = self.inner.parses.load(Ordering::Relaxed);
        status
    }

    /// Runs `f` over the index under its read lock (keep it short).
    pub fn read<R>(&self, f: impl FnOnce(&SymbolIndex) -> R) -> R {
        f(&self.inner.index.read_locked())
    }

    /// Builds (or brings up to date) the index for `options`, blocking; `progress` gets
    /// (files done, files to parse) now and then. A build started later stops this one.
    pub fn build(
        &self,
        mut options: BuildOptions,
        progress: &dyn Fn(usize, usize),
    ) -> SymbolsStatus {
        let started = Instant::now();
        options.roots = options.roots.iter().map(|r| canonical(r)).collect();
        let generation = self.inner.generation.fetch_add(1, Ordering::SeqCst) + 1;
        *self.inner.options.write_locked() = Some(options.clone());
        self.inner.status.write_locked().status = "indexing";
        self.inner.open_versions.lock().map(|mut v| v.clear()).ok();

        let persisted = self.load_persisted(&options);
        let (sources, mut skipped) = walk_sources(&options.roots);
        let indexed: HashMap<String, FileStamp> =
            self.read(|index| index.files().map(|f| (f.path.clone(), f.stamp)).collect());
        let (to_parse, reused, gone) = plan(sources, &indexed, &mut skipped);
        {
            let mut index = self.inner.index.write_locked();
            for key in &gone {
                index.remove(key);
            }
        }
        let total = to_parse.len();
        let mut done = 0usize;
        let mut parsed = 0usize;
        let mut batch = Vec::new();
        let mut last_report = Instant::now();
        let current = || self.inner.generation.load(Ordering::SeqCst) == generation;
        parse_all(
            &to_parse,
            options.threads,
            options.max_file_bytes,
            &current,
            &mut |source: &Source, result| {
                done += 1;
                match result {
                    Ok(file) => {
                        parsed += 1;
                        batch.push(Ok(file));
                    }
                    Err(skip) => {
                        skipped.add(skip);
                        if let Some(key) = key_of(&source.path) {
                            batch.push(Err(key.to_string()));
                        }
                    }
                }
                if batch.len() >= 64 || done == total {
                    self.apply(&mut batch);
                }
                if last_report.elapsed().as_millis() >= 200 {
                    progress(done, total);
                    last_report = Instant::now();
                }
            },
        );
        self.apply(&mut batch);
        self.inner
            .parses
            .fetch_add(parsed as u64, Ordering::Relaxed);
        if !current() {
            return self.status();
        }
        if parsed > 0 {
            self.inner.index.write_locked().shrink_to_fit();
        }
        let changed = parsed > 0 || !gone.is_empty() || persisted != Persisted::Loaded;
        let save_error = if changed { self.save().err() } else { None };
        {
            let mut status = self.inner.status.write_locked();
            *status = SymbolsStatus {
                status: "ready",
                reused,
                parsed,
                removed: gone.len(),
                skipped_total: skipped.total(),
                skipped,
                persisted,
                elapsed_ms: started.elapsed().as_millis(),
                save_error,
                ..SymbolsStatus::default()
            };
        }
        self.status()
    }

    /// The persisted index becomes the live one when the live one is empty (the first
    /// build); otherwise the live one is kept and brought up to date.
    fn load_persisted(&self, options: &BuildOptions) -> Persisted {
        if self.read(|index| index.file_count()) > 0 {
            return Persisted::Live;
        }
        let Some(path) = &options.store else {
            return Persisted::Off;
        };
        match disk::load(path) {
            disk::Loaded::Missing => Persisted::Missing,
            disk::Loaded::Index(index) => {
                *self.inner.index.write_locked() = *index;
                Persisted::Loaded
            }
            disk::Loaded::Damaged(why) => {
                tracing::warn!(
                    "symbol index {} not used ({why}): rebuilding",
                    path.display()
                );
                Persisted::Rebuilt(why)
            }
        }
    }

    /// Inserts parsed files and removes skipped ones, under one write lock.
    fn apply(&self, batch: &mut Vec<Result<build::Parsed, String>>) {
        if batch.is_empty() {
            return;
        }
        let mut index = self.inner.index.write_locked();
        for item in batch.drain(..) {
            match item {
                Ok(file) => index.insert(&file.key, file.stamp, file.tags),
                Err(key) => {
                    index.remove(&key);
                }
            }
        }
    }

    /// Writes the index to its store (when it has one).
    pub fn save(&self) -> Result<(), String> {
        let Some(path) = self.options().and_then(|o| o.store) else {
            return Ok(());
        };
        let _one = self.inner.saving.lock().map_err(|e| e.to_string())?;
        let result = self.read(|index| disk::save(&path, index));
        result.map_err(|err| {
            tracing::warn!("cannot save the symbol index to {}: {err}", path.display());
            err.to_string()
        })
    }

    fn options(&self) -> Option<BuildOptions> {
        self.inner.options.read_locked().clone()
    }

    /// Re-reads `paths` from disk (created or changed: indexed again; deleted or now
    /// skipped: removed), blocking. Open buffers are left to their text. Returns how many
    /// files were parsed.
    pub fn refresh(&self, paths: &[PathBuf]) -> usize {
        let Some(options) = self.options() else {
            return 0;
        };
        let open = self.open_paths();
        let mut parsers = HashMap::new();
        let mut batch = Vec::new();
        let mut parsed = 0;
        for path in paths {
            let path = &canonical(path);
            if open.contains(path) || language_of(path).is_none() {
                continue;
            }
            let Some(root) = root_of(&options.roots, path) else {
                continue;
            };
            let Some(key) = key_of(path) else { continue };
            let source = Source {
                root: root.to_path_buf(),
                path: path.clone(),
            };
            match parse_file(&mut parsers, &source, options.max_file_bytes) {
                Ok(file) => {
                    parsed += 1;
                    batch.push(Ok(file));
                }
                Err(_) => batch.push(Err(key.to_string())),
            }
        }
        self.apply(&mut batch);
        self.inner
            .parses
            .fetch_add(parsed as u64, Ordering::Relaxed);
        parsed
    }

    /// Re-reads those of `paths` whose (mtime, size) on disk differs from the index's.
    pub fn refresh_stale(&self, paths: &[PathBuf]) -> usize {
        let stale: Vec<PathBuf> = self.read(|index| {
            paths
                .iter()
                .filter(|path| {
                    let Some(entry) = key_of(path).and_then(|k| index.file(k)) else {
                        return false;
                    };
                    let on_disk = std::fs::metadata(path).map(|m| read::stamp_of(&m)).ok();
                    on_disk != Some(entry.stamp)
                })
                .cloned()
                .collect()
        });
        if stale.is_empty() {
            return 0;
        }
        self.refresh(&stale)
    }

    fn open_paths(&self) -> Vec<PathBuf> {
        self.inner
            .open_versions
            .lock()
            .map(|v| v.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Indexes the open buffers whose version changed since they were last indexed, from
    /// their text and tree (no parse); buffers closed since are read from disk again.
    /// Called before a query, never per keystroke.
    pub fn sync_buffers(&self, buffers: &[(PathBuf, DocumentSnapshot)]) {
        let Some(options) = self.options() else {
            return;
        };
        let buffers: Vec<(PathBuf, &DocumentSnapshot)> = buffers
            .iter()
            .filter(|(_, snapshot)| snapshot.tree.is_some())
            .map(|(path, snapshot)| (canonical(path), snapshot))
            .filter(|(path, _)| root_of(&options.roots, path).is_some())
            .collect();
        let mut closed = Vec::new();
        let mut changed = Vec::new();
        if let Ok(mut versions) = self.inner.open_versions.lock() {
            versions.retain(|path, _| {
                let open = buffers.iter().any(|(p, _)| p == path);
                if !open {
                    closed.push(path.clone());
                }
                open
            });
            for (path, snapshot) in &buffers {
                let (Some(key), Some(tree)) = (key_of(path), snapshot.tree.as_ref()) else {
                    continue;
                };
                if versions.get(path) == Some(&snapshot.version) {
                    continue;
                }
                versions.insert(path.clone(), snapshot.version);
                let text = snapshot.rope.to_string();
                let tags = extract_tags(snapshot.language, text.as_bytes(), tree);
                // A stamp no file has: the disk's text is read again once the buffer closes
                // and on the next start.
                let stamp = FileStamp {
                    mtime_ns: 0,
                    size: text.len() as u64,
                };
                changed.push((key.to_string(), stamp, tags));
            }
        }
        if !changed.is_empty() {
            let mut index = self.inner.index.write_locked();
            for (key, stamp, tags) in changed {
                index.insert(&key, stamp, tags);
            }
        }
        if !closed.is_empty() {
            self.refresh(&closed);
        }
    }

    /// The definitions of `name` (narrowed by kind and a path prefix), by path and line;
    /// files changed on disk since they were indexed are re-read first.
    pub fn definitions(
        &self,
        name: &str,
        kind: Option<SymbolKind>,
        path_prefix: Option<&Path>,
    ) -> Vec<FoundDefinition> {
        self.definitions_limited(name, kind, path_prefix, usize::MAX)
            .0
    }

    /// The first `limit` of `definitions`, and how many there are in all. Only the files of
    /// those returned are checked for changes on disk.
    pub fn definitions_limited(
        &self,
        name: &str,
        kind: Option<SymbolKind>,
        path_prefix: Option<&Path>,
        limit: usize,
    ) -> (Vec<FoundDefinition>, usize) {
        let prefix = path_prefix.and_then(Path::to_str);
        let lookup = || {
            self.read(|index| {
                let hits = index.definitions(&Query {
                    name,
                    kind,
                    path_prefix: prefix,
                });
                let found: Vec<FoundDefinition> = hits
                    .iter()
                    .take(limit)
                    .map(|hit| FoundDefinition {
                        path: PathBuf::from(hit.path),
                        language: hit.language,
                        definition: hit.definition.clone(),
                    })
                    .collect();
                (found, hits.len())
            })
        };
        let found = lookup();
        let mut files: Vec<PathBuf> = found.0.iter().map(|f| f.path.clone()).collect();
        files.dedup();
        if self.refresh_stale(&files) > 0 {
            return lookup();
        }
        found
    }

    /// Every line that uses `name` (under a path prefix), by path and line; files changed
    /// on disk are re-read first.
    pub fn references(&self, name: &str, path_prefix: Option<&Path>) -> Vec<FoundReference> {
        self.references_limited(name, path_prefix, usize::MAX).0
    }

    /// The first `limit` of `references`, how many there are in all, and in how many files.
    /// Only the files of those returned are checked for changes on disk.
    pub fn references_limited(
        &self,
        name: &str,
        path_prefix: Option<&Path>,
        limit: usize,
    ) -> (Vec<FoundReference>, usize, usize) {
        let prefix = path_prefix.and_then(Path::to_str);
        let lookup = || {
            self.read(|index| {
                let page = index.references_limited(name, prefix, limit);
                let found: Vec<FoundReference> = page
                    .hits
                    .iter()
                    .map(|hit| FoundReference {
                        path: PathBuf::from(hit.path),
                        line: hit.line,
                    })
                    .collect();
                (found, page.total, page.files)
            })
        };
        let found = lookup();
        let mut files: Vec<PathBuf> = found.0.iter().map(|f| f.path.clone()).collect();
        files.dedup();
        if self.refresh_stale(&files) > 0 {
            return lookup();
        }
        found
    }

    /// The definitions of `name` ranked for a reader of `from` (see
    /// `SymbolIndex::resolve`): its own file, what it imports, then the reference graph's
    /// rank toward it.
    pub fn resolve(&self, name: &str, from: &Path) -> Vec<FoundDefinition> {
        let Some(from_key) = key_of(from) else {
            return Vec::new();
        };
        let ranks = self.ranks_for(from_key);
        self.read(|index| {
            index
                .resolve(name, from_key, Some(&ranks))
                .iter()
                .map(|hit| FoundDefinition {
                    path: PathBuf::from(hit.path),
                    language: hit.language,
                    definition: hit.definition.clone(),
                })
                .collect()
        })
    }

    /// The files ranked by the reference graph toward `from` (None: the whole workspace).
    pub fn ranked_files(&self, from: Option<&Path>, limit: usize) -> Vec<(PathBuf, f64)> {
        let ranks = self.ranks_for(from.and_then(key_of).unwrap_or(""));
        ranks
            .top(limit)
            .into_iter()
            .map(|(path, rank)| (PathBuf::from(path), rank))
            .collect()
    }

    /// The ranking toward `focus` ("" = none), recomputed when the focus changes or the
    /// index changed by more than a few files since.
    pub fn ranks_for(&self, focus: &str) -> Arc<FileRanks> {
        let (revision, files) = self.read(|index| (index.revision(), index.file_count()));
        let slack = (files as u64 / 50).max(20);
        let slot = match focus {
            "" => &self.inner.unfocused_ranks,
            _ => &self.inner.ranks,
        };
        if let Ok(cached) = slot.lock() {
            if let Some(ranks) = cached.as_ref() {
                let same_focus = ranks.focus.as_deref().unwrap_or("") == focus;
                if same_focus && revision.saturating_sub(ranks.revision) <= slack {
                    return ranks.clone();
                }
            }
        }
        let focus = (!focus.is_empty()).then_some(focus);
        let ranks = Arc::new(self.read(|index| rank_files(index, focus)));
        if let Ok(mut cached) = slot.lock() {
            *cached = Some(ranks.clone());
        }
        ranks
    }

    /// The repository map for `settings`: the kept one while the index has not changed;
    /// else a fresh one, which replaces the kept one only when its entries moved by more
    /// than `repo_map::REBUILD_SHARE` (so that small edits leave the prompt's cached prefix
    /// byte-identical; why, in `repo_map`). `display` turns an index path into the path
    /// shown.
    pub fn repo_map(
        &self,
        settings: &MapSettings,
        display: &dyn Fn(&str) -> String,
    ) -> Arc<RepoMap> {
        let revision = self.read(SymbolIndex::revision);
        let kept = self.inner.repo_map.locked().clone();
        if let Some(kept) = &kept {
            if repo_map::is_current(kept, revision, settings) {
                return kept.clone();
            }
        }
        let ranks = self.ranks_for("");
        let fresh = self.read(|index| repo_map::build(index, &ranks, settings, display));
        let chosen = Arc::new(repo_map::choose(kept.map(Arc::unwrap_or_clone), fresh));
        *self.inner.repo_map.locked() = Some(chosen.clone());
        chosen
    }
}

/// The path with its links resolved (its directory's, for a file that is gone), so it
/// matches the index's keys, which come from a walk of the canonical roots.
pub fn canonical(path: &Path) -> PathBuf {
    if let Ok(real) = path.canonicalize() {
        return real;
    }
    match (path.parent().map(Path::canonicalize), path.file_name()) {
        (Some(Ok(dir)), Some(name)) => dir.join(name),
        _ => path.to_path_buf(),
    }
}

fn root_of<'a>(roots: &'a [PathBuf], path: &Path) -> Option<&'a Path> {
    roots
        .iter()
        .filter(|root| path.starts_with(root))
        .max_by_key(|root| root.as_os_str().len())
        .map(PathBuf::as_path)
}
