//! The workspace symbol index, as data: the tags of each file (definitions with kind,
//! container, lines, signature, doc and a small type's fields; references by name and line;
//! import statements), the maps from a name to its definitions and to the files that use it,
//! lookups, and a reference-graph ranking of files personalised toward one file.
//!
//! Pure: the server walks, reads, parses on its threads and persists the bytes of
//! [`persist::encode`]; nothing here touches a file. Paths are the server's keys (relative
//! to the workspace root, `/`-separated), opaque here except for prefix filters.

mod extract;
mod macros;
pub mod persist;
mod rank;
mod usage;

use std::collections::HashMap;

pub use extract::{bounded, MAX_DOC_BYTES, MAX_FIELDS, MAX_SIGNATURE_BYTES};
pub(crate) use rank::MAX_DEFINERS;
pub use rank::{rank_files, FileRanks};
pub use usage::{fits, impl_type, import_strength, qualifier_reaches, Usage};

use crate::language::Language;
pub use crate::syntax::SymbolKind;

/// The tags of a file. Plain text has none. Rust's items written inside macro invocations
/// (`cfg_rt! { pub fn spawn… }`) are read from their bodies, parsed again (`macros`).
pub fn extract_tags(language: Language, source: &[u8], tree: &tree_sitter::Tree) -> FileTags {
    let (mut tags, bodies) = extract::tags_of_tree(language, source, tree);
    if language == Language::Rust && !bodies.is_empty() {
        macros::add_items(source, &bodies, &mut tags);
    }
    tags
}

/// A definition found in a file, as its parts: what [`extract_tags`] and the persisted
/// file's decoder produce, packed into a [`Definition`] for keeping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefinitionParts {
    pub name: String,
    pub kind: SymbolKind,
    pub container: Option<String>,
    pub start_line: u32,
    pub end_line: u32,
    pub name_line: u32,
    pub signature: String,
    pub doc: String,
    pub fields: Vec<String>,
}

/// A definition found in a file.
///
/// Packed: the index keeps ~400 K of these over a large workspace, so the name, container,
/// signature, doc and fields live in one allocation, cut by offsets, instead of up to
/// four `String`s and a `Vec` each (issue 25: ~350 B per definition before; 40 B of struct
/// now, with u16 offsets because every part is bounded).
#[derive(Clone, PartialEq, Eq)]
pub struct Definition {
    pub kind: SymbolKind,
    has_container: bool,
    /// Where the name, container, signature and doc end in `text`.
    ends: [u16; 4],
    /// First and last line of the whole definition (0-based, inclusive; attributes and
    /// decorators outside the outline's range are not counted).
    pub start_line: u32,
    pub end_line: u32,
    /// The line of the name (0-based).
    pub name_line: u32,
    /// Name, container, signature, doc, then each field after a `\n` (a field is one line:
    /// its whitespace is collapsed when extracted), so the fields need no offsets of their own.
    text: Box<str>,
}

/// The longest name or container kept: with the signature's, doc's and fields' own bounds,
/// a definition's text stays under u16's range.
const MAX_NAME_BYTES: usize = 1_000;

impl From<DefinitionParts> for Definition {
    fn from(parts: DefinitionParts) -> Definition {
        // Extraction bounds them already; a decoded or hand-made one is bounded here.
        fn cut(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
            if text.len() <= max && !text.contains('\n') {
                std::borrow::Cow::Borrowed(text)
            } else {
                std::borrow::Cow::Owned(bounded(&text.replace('\n', " "), max))
            }
        }
        let name = cut(&parts.name, MAX_NAME_BYTES);
        let container = cut(parts.container.as_deref().unwrap_or(""), MAX_NAME_BYTES);
        let signature = cut(&parts.signature, MAX_SIGNATURE_BYTES);
        let doc = if parts.doc.len() <= MAX_DOC_BYTES {
            std::borrow::Cow::Borrowed(&parts.doc[..])
        } else {
            std::borrow::Cow::Owned(bounded(&parts.doc, MAX_DOC_BYTES))
        };
        let fields: Vec<_> = parts
            .fields
            .iter()
            .take(MAX_FIELDS)
            .map(|field| cut(field, extract::MAX_FIELD_BYTES))
            .collect();
        let fields_len: usize = fields.iter().map(|f| f.len() + 1).sum();
        let mut text = String::with_capacity(
            name.len() + container.len() + signature.len() + doc.len() + fields_len,
        );
        let mut ends = [0u16; 4];
        for (end, part) in ends
            .iter_mut()
            .zip([&*name, &*container, &*signature, &*doc])
        {
            text.push_str(part);
            *end = text.len() as u16;
        }
        for field in &fields {
            text.push('\n');
            text.push_str(field);
        }
        Definition {
            kind: parts.kind,
            has_container: parts.container.is_some(),
            ends,
            start_line: parts.start_line,
            end_line: parts.end_line,
            name_line: parts.name_line,
            text: text.into_boxed_str(),
        }
    }
}

impl Definition {
    fn part(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.text[start..self.ends[i] as usize]
    }

    pub fn name(&self) -> &str {
        self.part(0)
    }

    /// The enclosing definition's name ("impl Foo", "Config"); None at the top level.
    pub fn container(&self) -> Option<&str> {
        self.has_container.then(|| self.part(1))
    }

    /// The header up to its body, on one line, at most [`MAX_SIGNATURE_BYTES`].
    pub fn signature(&self) -> &str {
        self.part(2)
    }

    /// Doc comments, attributes, decorators and Python's docstring, at most [`MAX_DOC_BYTES`].
    pub fn doc(&self) -> &str {
        self.part(3)
    }

    /// A small struct's, enum's, class's or interface's fields or variants, one per entry;
    /// empty when it has more than [`MAX_FIELDS`].
    pub fn fields(&self) -> impl Iterator<Item = &str> + '_ {
        self.text[self.ends[3] as usize..].split('\n').skip(1)
    }

    pub fn field_count(&self) -> usize {
        self.text[self.ends[3] as usize..].matches('\n').count()
    }

    /// The parts, owned again.
    pub fn to_parts(&self) -> DefinitionParts {
        DefinitionParts {
            name: self.name().to_string(),
            kind: self.kind,
            container: self.container().map(str::to_string),
            start_line: self.start_line,
            end_line: self.end_line,
            name_line: self.name_line,
            signature: self.signature().to_string(),
            doc: self.doc().to_string(),
            fields: self.fields().map(str::to_string).collect(),
        }
    }
}

impl std::fmt::Debug for Definition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.to_parts().fmt(f)
    }
}

/// A name used in a file, once per line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Reference {
    pub name: String,
    /// 0-based.
    pub line: u32,
}

/// An import statement (`use`, `import`, `from … import`, a Go import spec).
///
/// Packed like [`Definition`]: the statement and its names in one allocation.
#[derive(Clone, PartialEq, Eq)]
pub struct Import {
    /// 0-based.
    pub line: u32,
    /// The statement, then every name, one after the other.
    text: Box<str>,
    /// Where the statement and then each name end in `text`.
    ends: Box<[u32]>,
}

impl Import {
    /// `text`: the statement on one line, bounded; `names`: every name the statement spells
    /// (path segments, imported names, aliases).
    pub fn new<S: AsRef<str>>(line: u32, text: &str, names: &[S]) -> Import {
        let mut packed = String::with_capacity(
            text.len() + names.iter().map(|n| n.as_ref().len()).sum::<usize>(),
        );
        let mut ends = Vec::with_capacity(names.len() + 1);
        for part in std::iter::once(text).chain(names.iter().map(AsRef::as_ref)) {
            packed.push_str(part);
            ends.push(packed.len() as u32);
        }
        Import {
            line,
            text: packed.into_boxed_str(),
            ends: ends.into_boxed_slice(),
        }
    }

    /// The statement on one line, bounded.
    pub fn text(&self) -> &str {
        &self.text[..self.ends[0] as usize]
    }

    /// Every name the statement spells (path segments, imported names, aliases).
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.ends
            .windows(2)
            .map(|w| &self.text[w[0] as usize..w[1] as usize])
    }
}

impl std::fmt::Debug for Import {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Import")
            .field("line", &self.line)
            .field("text", &self.text())
            .field("names", &self.names().collect::<Vec<_>>())
            .finish()
    }
}

/// Everything the index keeps of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileTags {
    pub language: Language,
    pub definitions: Vec<Definition>,
    pub references: Vec<Reference>,
    pub imports: Vec<Import>,
}

/// What the file was when it was read: a persisted entry is reused only while the file on
/// disk still has the same stamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileStamp {
    pub mtime_ns: u64,
    pub size: u64,
}

/// One file in the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    pub path: String,
    pub stamp: FileStamp,
    pub language: Language,
    pub definitions: Vec<Definition>,
    pub imports: Vec<Import>,
    /// (name id, line), sorted, unique.
    references: Vec<(u32, u32)>,
}

impl FileEntry {
    /// The lines (0-based, ascending) where the file uses `name`.
    pub fn reference_lines(&self, index: &SymbolIndex, name: &str) -> Vec<u32> {
        let Some(id) = index.name_id(name) else {
            return Vec::new();
        };
        // Sorted by (name, line): the lines of one name are contiguous.
        let start = self.references.partition_point(|(n, _)| *n < id);
        self.references[start..]
            .iter()
            .take_while(|(n, _)| *n == id)
            .map(|(_, line)| *line)
            .collect()
    }

    /// Every (name, line) the file uses, names as the index spells them.
    pub fn reference_names<'a>(
        &'a self,
        index: &'a SymbolIndex,
    ) -> impl Iterator<Item = (&'a str, u32)> + 'a {
        self.references
            .iter()
            .map(|(id, line)| (index.name(*id), *line))
    }

    /// Distinct names referenced, with how many lines use each.
    fn reference_counts(&self) -> impl Iterator<Item = (u32, usize)> + '_ {
        let mut i = 0;
        std::iter::from_fn(move || {
            let (id, _) = *self.references.get(i)?;
            let start = i;
            while self.references.get(i).is_some_and(|(n, _)| *n == id) {
                i += 1;
            }
            Some((id, i - start))
        })
    }

    pub fn reference_count(&self) -> usize {
        self.references.len()
    }

    /// Whether the file uses the name of id `name`.
    pub(crate) fn uses(&self, name: u32) -> bool {
        let start = self.references.partition_point(|(n, _)| *n < name);
        self.references.get(start).is_some_and(|(n, _)| *n == name)
    }
}

/// A definition and where it is.
#[derive(Debug, Clone, Copy)]
pub struct DefinitionHit<'a> {
    pub path: &'a str,
    pub language: Language,
    pub definition: &'a Definition,
}

/// A line that uses a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReferenceHit<'a> {
    pub path: &'a str,
    /// 0-based.
    pub line: u32,
}

/// A page of a name's references: the first hits, and how many there are in all.
#[derive(Debug, Clone)]
pub struct ReferencePage<'a> {
    pub hits: Vec<ReferenceHit<'a>>,
    /// Every line that uses the name (under the prefix).
    pub total: usize,
    /// The files those lines are in.
    pub files: usize,
}

/// A lookup by name: `kind` and `path_prefix` narrow it.
#[derive(Debug, Clone, Default)]
pub struct Query<'a> {
    pub name: &'a str,
    pub kind: Option<SymbolKind>,
    pub path_prefix: Option<&'a str>,
}

impl Query<'_> {
    fn admits(&self, path: &str, definition: &Definition) -> bool {
        self.kind.is_none_or(|kind| kind == definition.kind)
            && self
                .path_prefix
                .is_none_or(|prefix| path.starts_with(prefix))
    }
}

/// The index: files by path, names interned, and the two maps that make lookups cheap.
#[derive(Debug, Default, Clone)]
pub struct SymbolIndex {
    files: Vec<Option<FileEntry>>,
    file_ids: HashMap<String, u32>,
    free_files: Vec<u32>,
    /// Every interned name, one after the other; `name_ends[id]` is where name `id` ends.
    /// One arena rather than a `Box<str>` per name: the map's key is the only other copy.
    name_text: String,
    name_ends: Vec<u32>,
    name_ids: NameIds,
    /// name id → (file id, definition index in the file).
    definitions: HashMap<u32, Places<(u32, u32)>>,
    /// name id → files that use it.
    referencing: HashMap<u32, Places<u32>>,
    /// Bumped by every insert and removal: a cached ranking is stale once it differs.
    revision: u64,
}

impl SymbolIndex {
    pub fn new() -> SymbolIndex {
        SymbolIndex::default()
    }

    /// Replaces the file's tags (or adds the file).
    pub fn insert(&mut self, path: &str, stamp: FileStamp, tags: FileTags) {
        self.remove(path);
        let mut references: Vec<(u32, u32)> = tags
            .references
            .iter()
            .map(|r| (self.intern(&r.name), r.line))
            .collect();
        references.sort_unstable();
        references.dedup();
        let mut definitions = tags.definitions;
        definitions.shrink_to_fit();
        let entry = FileEntry {
            path: path.to_string(),
            stamp,
            language: tags.language,
            definitions,
            imports: tags.imports,
            references,
        };
        self.insert_entry(entry);
    }

    fn insert_entry(&mut self, entry: FileEntry) {
        let id = match self.free_files.pop() {
            Some(id) => id,
            None => {
                self.files.push(None);
                (self.files.len() - 1) as u32
            }
        };
        for (i, definition) in entry.definitions.iter().enumerate() {
            let name = self.intern(definition.name());
            self.definitions
                .entry(name)
                .or_default()
                .push((id, i as u32));
        }
        let names: Vec<u32> = entry.reference_counts().map(|(name, _)| name).collect();
        for name in names {
            self.referencing.entry(name).or_default().push(id);
        }
        self.file_ids.insert(entry.path.clone(), id);
        self.files[id as usize] = Some(entry);
        self.revision += 1;
    }

    /// Forgets the file; true when it was there.
    pub fn remove(&mut self, path: &str) -> bool {
        let Some(id) = self.file_ids.remove(path) else {
            return false;
        };
        let Some(entry) = self.files[id as usize].take() else {
            return false;
        };
        // Each name once: a file that defines one name 20,000 times (nested modules) must
        // not go through that name's places 20,000 times.
        let mut names: Vec<u32> = entry
            .definitions
            .iter()
            .filter_map(|definition| self.name_id(definition.name()))
            .collect();
        names.sort_unstable();
        names.dedup();
        for name in names {
            if let Some(places) = self.definitions.get_mut(&name) {
                places.retain(|(file, _)| *file != id);
                if places.is_empty() {
                    self.definitions.remove(&name);
                }
            }
        }
        for (name, _) in entry.reference_counts() {
            if let Some(files) = self.referencing.get_mut(&name) {
                files.retain(|file| *file != id);
                if files.is_empty() {
                    self.referencing.remove(&name);
                }
            }
        }
        self.free_files.push(id);
        self.revision += 1;
        true
    }

    fn intern(&mut self, name: &str) -> u32 {
        let hash = self.name_ids.hash(name);
        if let Some(id) = self.name_id_hashed(name, hash) {
            return id;
        }
        let id = self.name_ends.len() as u32;
        self.name_text.push_str(name);
        self.name_ends.push(self.name_text.len() as u32);
        self.name_ids.insert(name, hash, id);
        id
    }

    /// The id of an interned name.
    pub(crate) fn name_id(&self, name: &str) -> Option<u32> {
        self.name_id_hashed(name, self.name_ids.hash(name))
    }

    fn name_id_hashed(&self, name: &str, hash: u64) -> Option<u32> {
        match self.name_ids.by_hash.get(&hash) {
            Some(&id) if self.name(id) == name => Some(id),
            Some(_) => self.name_ids.collisions.get(name).copied(),
            None => None,
        }
    }

    pub fn file(&self, path: &str) -> Option<&FileEntry> {
        let id = *self.file_ids.get(path)?;
        self.files[id as usize].as_ref()
    }

    /// Every file in the index, in no particular order.
    pub fn files(&self) -> impl Iterator<Item = &FileEntry> {
        self.files.iter().flatten()
    }

    pub fn file_count(&self) -> usize {
        self.file_ids.len()
    }

    pub fn definition_count(&self) -> usize {
        self.files().map(|f| f.definitions.len()).sum()
    }

    pub fn reference_count(&self) -> usize {
        self.files().map(|f| f.references.len()).sum()
    }

    /// Gives back the memory the maps and lists grew into while files were inserted (a
    /// large index is built by many small pushes); worth it after a build.
    pub fn shrink_to_fit(&mut self) {
        for entry in self.files.iter_mut().flatten() {
            entry.definitions.shrink_to_fit();
            entry.imports.shrink_to_fit();
            entry.references.shrink_to_fit();
        }
        self.files.shrink_to_fit();
        self.name_text.shrink_to_fit();
        self.name_ends.shrink_to_fit();
        self.name_ids.by_hash.shrink_to_fit();
        self.file_ids.shrink_to_fit();
        for places in self.definitions.values_mut() {
            places.shrink_to_fit();
        }
        self.definitions.shrink_to_fit();
        for files in self.referencing.values_mut() {
            files.shrink_to_fit();
        }
        self.referencing.shrink_to_fit();
    }

    /// Changes with every insert and removal.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The definitions of `query.name`, sorted by path then line.
    pub fn definitions(&self, query: &Query) -> Vec<DefinitionHit<'_>> {
        let Some(name) = self.name_id(query.name) else {
            return Vec::new();
        };
        let mut hits: Vec<DefinitionHit> = self
            .definitions
            .get(&name)
            .map_or(&[][..], Places::as_slice)
            .iter()
            .filter_map(|&(file, i)| {
                let entry = self.files[file as usize].as_ref()?;
                let definition = entry.definitions.get(i as usize)?;
                query
                    .admits(&entry.path, definition)
                    .then_some(DefinitionHit {
                        path: &entry.path,
                        language: entry.language,
                        definition,
                    })
            })
            .collect();
        hits.sort_by(|a, b| {
            (a.path, a.definition.start_line).cmp(&(b.path, b.definition.start_line))
        });
        hits
    }

    /// The files that use `name` (optionally under a path prefix), sorted by path.
    pub fn referencing_files(&self, name: &str, path_prefix: Option<&str>) -> Vec<&FileEntry> {
        let Some(id) = self.name_id(name) else {
            return Vec::new();
        };
        let mut files: Vec<&FileEntry> = self
            .referencing
            .get(&id)
            .map_or(&[][..], Places::as_slice)
            .iter()
            .filter_map(|&file| self.files[file as usize].as_ref())
            .filter(|entry| path_prefix.is_none_or(|prefix| entry.path.starts_with(prefix)))
            .collect();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        files
    }

    /// Every line that uses `name`, sorted by path then line.
    pub fn references(&self, name: &str, path_prefix: Option<&str>) -> Vec<ReferenceHit<'_>> {
        self.references_limited(name, path_prefix, usize::MAX).hits
    }

    /// The first `limit` lines that use `name` (sorted by path then line), with how many
    /// there are and in how many files: a common name's tens of thousands of uses are
    /// counted, not gathered, when a page of them is shown.
    pub fn references_limited(
        &self,
        name: &str,
        path_prefix: Option<&str>,
        limit: usize,
    ) -> ReferencePage<'_> {
        let mut page = ReferencePage {
            hits: Vec::new(),
            total: 0,
            files: 0,
        };
        let Some(id) = self.name_id(name) else {
            return page;
        };
        for entry in self.referencing_files(name, path_prefix) {
            // Sorted by (name, line): the lines of one name are contiguous.
            let start = entry.references.partition_point(|(n, _)| *n < id);
            let end = start + entry.references[start..].partition_point(|(n, _)| *n == id);
            page.total += end - start;
            page.files += usize::from(end > start);
            let room = limit.saturating_sub(page.hits.len());
            page.hits.extend(
                entry.references[start..end]
                    .iter()
                    .take(room)
                    .map(|&(_, line)| ReferenceHit {
                        path: &entry.path,
                        line,
                    }),
            );
        }
        page
    }

    /// The definitions of `name` ranked for a reader in `from_path`: a definition in the
    /// file itself first, then those the file imports (its import statements name the name
    /// or the defining file's module), then by the files' rank toward `from_path`, then by
    /// how close the paths are.
    pub fn resolve<'a>(
        &'a self,
        name: &str,
        from_path: &str,
        ranks: Option<&FileRanks>,
    ) -> Vec<DefinitionHit<'a>> {
        self.resolve_used(name, Usage::default(), from_path, ranks)
    }

    /// `resolve` for a use of the name: after the reader's own file, the definitions its
    /// qualifier names (`errors.X`: in the module `errors`; `Runtime::new`: in `impl
    /// Runtime`), then those of a kind the use can name, then by how strongly the reader's
    /// imports name them, then the files' rank and the paths' distance.
    pub fn resolve_used<'a>(
        &'a self,
        name: &str,
        usage: Usage,
        from_path: &str,
        ranks: Option<&FileRanks>,
    ) -> Vec<DefinitionHit<'a>> {
        let hits = self.definitions(&Query {
            name,
            ..Query::default()
        });
        let imports = self
            .file(from_path)
            .map_or(&[][..], |f| f.imports.as_slice());
        let mut scored: Vec<(ResolveScore, DefinitionHit)> = hits
            .into_iter()
            .map(|hit| {
                let qualified = usage
                    .qualifier
                    .is_some_and(|q| qualifier_reaches(q, imports, hit.path, hit.definition));
                let fitting = usage.kind.is_none_or(|k| fits(k, hit.definition.kind));
                let score = ResolveScore {
                    elsewhere: hit.path != from_path,
                    unqualified: !qualified,
                    unfitting: !fitting,
                    imported: std::cmp::Reverse(import_strength(imports, name, hit.path)),
                    rank: -ranks.map_or(0.0, |r| r.rank(hit.path)),
                    distance: path_distance(from_path, hit.path),
                };
                (score, hit)
            })
            .collect();
        scored.sort_by(|(a, hit_a), (b, hit_b)| {
            a.key()
                .cmp(&b.key())
                .then(a.rank.total_cmp(&b.rank))
                .then(a.distance.cmp(&b.distance))
                .then(hit_a.path.cmp(hit_b.path))
                .then(
                    hit_a
                        .definition
                        .start_line
                        .cmp(&hit_b.definition.start_line),
                )
        });
        scored.into_iter().map(|(_, hit)| hit).collect()
    }

    pub(crate) fn name(&self, id: u32) -> &str {
        let start = match id {
            0 => 0,
            _ => self.name_ends[id as usize - 1] as usize,
        };
        &self.name_text[start..self.name_ends[id as usize] as usize]
    }

    pub(crate) fn name_count(&self) -> usize {
        self.name_ends.len()
    }

    pub(crate) fn file_slots(&self) -> &[Option<FileEntry>] {
        &self.files
    }

    pub(crate) fn definition_places(&self, name: u32) -> &[(u32, u32)] {
        self.definitions.get(&name).map_or(&[], Places::as_slice)
    }

    /// The ids (in `file_slots`) of the files that use name `name`.
    pub(crate) fn referencing_ids(&self, name: u32) -> &[u32] {
        self.referencing.get(&name).map_or(&[], Places::as_slice)
    }
}

/// How a definition ranks for a reader; lower first, field by field.
struct ResolveScore {
    elsewhere: bool,
    unqualified: bool,
    unfitting: bool,
    imported: std::cmp::Reverse<u8>,
    rank: f64,
    distance: usize,
}

impl ResolveScore {
    fn key(&self) -> (bool, bool, bool, std::cmp::Reverse<u8>) {
        (
            self.elsewhere,
            self.unqualified,
            self.unfitting,
            self.imported,
        )
    }
}

/// The places of one name: most names are defined once, or used in one file, so the one
/// place is kept inline and only a name with more has a heap list (a `Vec` each cost
/// ~30 B of heap per name over ~300 K names).
#[derive(Debug, Clone)]
enum Places<T> {
    One(T),
    Many(Vec<T>),
}

impl<T> Default for Places<T> {
    fn default() -> Places<T> {
        Places::Many(Vec::new())
    }
}

impl<T: Copy> Places<T> {
    fn push(&mut self, place: T) {
        match self {
            Places::Many(list) if list.is_empty() => *self = Places::One(place),
            Places::Many(list) => list.push(place),
            Places::One(first) => *self = Places::Many(vec![*first, place]),
        }
    }

    fn retain(&mut self, keep: impl Fn(&T) -> bool) {
        match self {
            Places::One(place) if !keep(place) => *self = Places::Many(Vec::new()),
            Places::One(_) => {}
            Places::Many(list) => {
                list.retain(keep);
                if let [only] = list[..] {
                    *self = Places::One(only);
                }
            }
        }
    }

    fn is_empty(&self) -> bool {
        matches!(self, Places::Many(list) if list.is_empty())
    }

    fn as_slice(&self) -> &[T] {
        match self {
            Places::One(place) => std::slice::from_ref(place),
            Places::Many(list) => list,
        }
    }

    fn shrink_to_fit(&mut self) {
        if let Places::Many(list) = self {
            list.shrink_to_fit();
        }
    }
}

/// Name → id without a second copy of each name: keyed by the name's 64-bit hash (keyed
/// SipHash, so a repository cannot choose colliding names), the arena's text confirming the
/// match; a different name with the same hash goes to `collisions`.
#[derive(Debug, Clone, Default)]
struct NameIds {
    hasher: std::collections::hash_map::RandomState,
    by_hash: HashMap<u64, u32, std::hash::BuildHasherDefault<HashIsKey>>,
    collisions: HashMap<Box<str>, u32>,
}

impl NameIds {
    fn hash(&self, name: &str) -> u64 {
        std::hash::BuildHasher::hash_one(&self.hasher, name)
    }

    fn insert(&mut self, name: &str, hash: u64, id: u32) {
        if let std::collections::hash_map::Entry::Vacant(slot) = self.by_hash.entry(hash) {
            slot.insert(id);
        } else {
            self.collisions.insert(name.into(), id);
        }
    }
}

/// The hasher of a map whose keys are already hashes.
#[derive(Default)]
struct HashIsKey(u64);

impl std::hash::Hasher for HashIsKey {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed; fold anything else rather than panic.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// The name other files import `path` by.
pub fn module_name(path: &str) -> Option<&str> {
    let mut parts = path.rsplit('/');
    let file = parts.next()?;
    let stem = file.split('.').next()?;
    if matches!(stem, "mod" | "__init__" | "index" | "lib" | "main") {
        parts.next()
    } else {
        Some(stem)
    }
}

/// Directory steps between two paths: 0 in the same directory.
fn path_distance(a: &str, b: &str) -> usize {
    let a: Vec<&str> = a.split('/').collect();
    let b: Vec<&str> = b.split('/').collect();
    let (a_dirs, b_dirs) = (&a[..a.len() - 1], &b[..b.len() - 1]);
    let common = a_dirs
        .iter()
        .zip(b_dirs)
        .take_while(|(x, y)| x == y)
        .count();
    (a_dirs.len() - common) + (b_dirs.len() - common)
}

/// The tags of `source`, parsed on the spot: for the tests of the index and of what reads it.
#[cfg(test)]
pub(crate) fn tags_of(language: Language, source: &str) -> FileTags {
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&language.grammar().expect("grammar"))
        .expect("grammar loads");
    let tree = parser.parse(source, None).expect("tree");
    extract_tags(language, source.as_bytes(), &tree)
}

#[cfg(test)]
mod tests;
