//! The editor context block of one agent turn: what the model sees of the user's editor
//! (active file, cursor, selection, diagnostics, the symbol around the cursor, the outline,
//! and definitions of the identifiers in play taken from the other open buffers).
//!
//! The block is filled by priority within a token budget: header (always, even over
//! budget) > selection > enclosing symbol > diagnostics > outline > definitions. A small
//! active file (`WHOLE_FILE_MAX_LINES`, `whole_file_tokens`, at most half the budget)
//! is shown whole instead of its enclosing symbol and outline, which it holds:
//! a model that sees the whole file keeps what it does not mean to change, and the turn
//! counts it as read (`EditorContext::shows_whole_file`). A part that
//! fits what remains goes in whole; one that does not is cut to fit, and one that cannot
//! usefully be cut is replaced by a one-line marker. Nothing is ever cut silently: every cut
//! or omission leaves a marker in the text saying what was left out and how big it was, so
//! the model knows its view of the editor is partial. Each part is counted on its own and
//! the total is the sum of the parts, so a caller can reuse cached part counts.
//!
//! Room for the omission markers of the lower-priority parts is reserved before a part is
//! placed, so the total stays within the budget whenever the budget covers the header and
//! those markers; below that, the output is exactly the header and the markers.
//!
//! Pure: no IO, no LSP types. Offsets are bytes into the rope; what is shown to the model is
//! 1-based lines and 1-based columns counted in chars.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::ops::Range;
use std::sync::Arc;

use ropey::Rope;

use crate::document::{DocumentSnapshot, DISK_VERSION};
use crate::position;
use crate::syntax::{self, EnclosingSymbol, Identifier, Symbol, SymbolKind};
use crate::tokens::{CountCache, TokenizerKind};
use crate::truncate::{truncate_middle, TruncationPolicy};

pub struct ActiveFile<'a> {
    /// Relative to the workspace root, e.g. "src/lib.rs".
    pub display_path: &'a str,
    pub snapshot: &'a DocumentSnapshot,
    /// Byte offset into the rope; clamped again here.
    pub cursor: usize,
    /// Byte range; may be reversed, empty (no selection) or out of range.
    pub selection: Option<Range<usize>>,
    /// Byte range of the visible lines.
    pub visible: Option<Range<usize>>,
    pub diagnostics: Vec<EditorDiagnostic>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditorDiagnostic {
    pub severity: Severity,
    /// Bytes; may be reversed or out of range.
    pub range: Range<usize>,
    pub message: String,
    pub source: Option<String>,
    pub code: Option<String>,
}

/// Ordered most severe first, which is the order diagnostics on the same line are shown in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
    Information,
    Hint,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Information => "info",
            Severity::Hint => "hint",
        }
    }
}

/// Another open buffer, searched for definitions of the identifiers in play.
pub struct OpenBuffer<'a> {
    pub display_path: &'a str,
    pub snapshot: &'a DocumentSnapshot,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditorContext {
    pub text: String,
    /// The sum of the parts' tokens.
    pub tokens: usize,
    pub parts: Vec<PartReport>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PartReport {
    /// "header" | "file" | "selection" | "enclosingSymbol" | "diagnostics" | "definitions" |
    /// "outline",
    /// in the order they are placed
    pub name: &'static str,
    /// Tokens this part adds to the text: what was included (after any cut), or the
    /// omission marker's tokens when the part was omitted.
    pub tokens: usize,
    /// Tokens of content removed to fit the budget; the whole part's size when omitted.
    pub cut_tokens: usize,
    /// True when nothing of the part fit and only its marker is in the text.
    pub omitted: bool,
    /// The room the part had: the least of its own cap (definitions 2,048, outline 1,536)
    /// and what the budget left after the parts before it and the room held for the parts
    /// after it (their markers; the definitions' floor).
    pub max_tokens: usize,
    /// Entries shown, for a part made of entries (definitions, outline lines,
    /// diagnostics); absent for the header and the code parts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entries: Option<usize>,
    /// Entries left out to fit (absent as `entries` is).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cut_entries: Option<usize>,
}

pub const DEFAULT_EDITOR_BUDGET: usize = 8_000;

/// A file of at most this many lines is shown whole when it also fits
/// `editorContext.wholeFileMaxTokens` and half the block's budget.
pub const WHOLE_FILE_MAX_LINES: usize = 200;
/// `editorContext.wholeFileMaxTokens`'s default.
pub const WHOLE_FILE_MAX_TOKENS: usize = 2_000;

impl EditorContext {
    /// Whether the block shows the active file whole, uncut: the model has read it.
    pub fn shows_whole_file(&self) -> bool {
        self.parts
            .iter()
            .any(|part| part.name == "file" && !part.omitted && part.cut_tokens == 0)
    }
}

/// Below this many tokens a cut part would be little more than its tags and marker.
const MIN_PART_TOKENS: usize = 32;
/// Room left beside the kept code of a cut selection or symbol for the tags, the cut marker
/// and the lines header `truncate_middle` adds; a shortfall is corrected by refitting.
const CODE_CUT_ALLOWANCE: usize = 24;
/// Token counts of a cut are known only after rendering; a few refits always converge.
const MAX_FIT_ATTEMPTS: usize = 6;
const MAX_DEFINITIONS: usize = 30;
/// The most the definitions take, and what the parts before them leave for them.
pub const DEFINITIONS_MAX_TOKENS: usize = 2_048;
const DEFINITIONS_FLOOR_TOKENS: usize = 1_024;
/// The most the outline takes: a long file's outline shows the cursor's neighbourhood and
/// the top-level items, its test modules last.
pub const OUTLINE_MAX_TOKENS: usize = 1_536;
/// Outline symbols this many lines around the cursor are its neighbourhood.
const OUTLINE_NEIGHBOURHOOD_LINES: usize = 40;
/// A definition up to this many lines is shown whole; a longer one by its head.
const WHOLE_DEFINITION_MAX_LINES: usize = 12;
const DEFINITION_HEAD_LINES: usize = 6;
/// Outline indentation stops growing here: a pathologically deep tree must not turn the
/// outline into megabytes of spaces.
const MAX_OUTLINE_INDENT: usize = 16;

const OPENING_TAG: &str = "<editor_context>\n";
const CLOSING_TAG: &str = "</editor_context>\n";

/// What is derived from an open buffer's syntax, kept between builds: its outline, its
/// rendered outline lines and its rendered definitions by name. It changes only with the
/// text, and an open buffer's text changes only with its version (the client's, which only
/// grows). A snapshot read from disk (`DISK_VERSION`) is never cached. One entry per path.
#[derive(Default)]
pub struct OutlineCache {
    entries: HashMap<String, BufferSyntax>,
}

struct BufferSyntax {
    version: i32,
    len_bytes: usize,
    symbols: Arc<Vec<Symbol>>,
    outline_lines: Option<Arc<Vec<OutlineLine>>>,
    /// Symbol name → its definitions rendered, in source order.
    definitions: Option<Arc<HashMap<String, Vec<Arc<str>>>>>,
}

/// Paths remembered at most; past it the cache starts over.
const OUTLINE_CACHE_CAPACITY: usize = 1024;

impl OutlineCache {
    /// The buffer's outline, None without a syntax tree.
    pub fn outline(&mut self, buffer: &OpenBuffer) -> Option<Arc<Vec<Symbol>>> {
        self.with_entry(buffer, |entry, _| entry.symbols.clone())
    }

    fn outline_lines(&mut self, buffer: &OpenBuffer) -> Option<Arc<Vec<OutlineLine>>> {
        self.with_entry(buffer, |entry, buffer| {
            entry
                .outline_lines
                .get_or_insert_with(|| {
                    Arc::new(outline_entries(&buffer.snapshot.rope, &entry.symbols))
                })
                .clone()
        })
    }

    fn definitions(&mut self, buffer: &OpenBuffer) -> Option<Arc<HashMap<String, Vec<Arc<str>>>>> {
        self.with_entry(buffer, |entry, buffer| {
            entry
                .definitions
                .get_or_insert_with(|| {
                    let mut by_name: HashMap<String, Vec<Arc<str>>> = HashMap::new();
                    let mut stack: Vec<&Symbol> = entry.symbols.iter().rev().collect();
                    while let Some(symbol) = stack.pop() {
                        by_name
                            .entry(symbol.name.clone())
                            .or_default()
                            .push(Arc::from(render_definition(
                                buffer.display_path,
                                &buffer.snapshot.rope,
                                symbol,
                            )));
                        stack.extend(symbol.children.iter().rev());
                    }
                    Arc::new(by_name)
                })
                .clone()
        })
    }

    /// Runs `f` on the buffer's entry, made fresh first when the buffer changed.
    fn with_entry<R>(
        &mut self,
        buffer: &OpenBuffer,
        f: impl FnOnce(&mut BufferSyntax, &OpenBuffer) -> R,
    ) -> Option<R> {
        let snapshot = buffer.snapshot;
        let tree = snapshot.tree.as_ref()?;
        let len_bytes = snapshot.rope.len_bytes();
        let fresh = || {
            let source = snapshot.rope.to_string();
            BufferSyntax {
                version: snapshot.version,
                len_bytes,
                symbols: Arc::new(syntax::outline(snapshot.language, source.as_bytes(), tree)),
                outline_lines: None,
                definitions: None,
            }
        };
        if snapshot.version == DISK_VERSION {
            return Some(f(&mut fresh(), buffer));
        }
        let current = self
            .entries
            .get(buffer.display_path)
            .is_some_and(|entry| entry.version == snapshot.version && entry.len_bytes == len_bytes);
        if !current {
            if self.entries.len() >= OUTLINE_CACHE_CAPACITY {
                self.entries.clear();
            }
            self.entries
                .insert(buffer.display_path.to_string(), fresh());
        }
        let entry = self.entries.get_mut(buffer.display_path)?;
        Some(f(entry, buffer))
    }
}

/// Renders the editor context block of `active` within `budget` tokens, the file whole
/// when it takes at most `whole_file_tokens` (0: never); see the module documentation for
/// the priority order and the markers.
#[allow(clippy::too_many_arguments)]
pub fn build(
    active: &ActiveFile,
    others: &[OpenBuffer],
    workspace: Option<&WorkspaceDefinitions>,
    boundary: &str,
    budget: usize,
    whole_file_tokens: usize,
    tokenizer: TokenizerKind,
    cache: &mut CountCache,
    outlines: &mut OutlineCache,
) -> EditorContext {
    let rope = &active.snapshot.rope;
    let cursor = position::clamp_byte(rope, active.cursor);
    let selection = active
        .selection
        .as_ref()
        .map(|range| position::clamp_byte_range(rope, range))
        .filter(|range| !range.is_empty());
    let visible = active
        .visible
        .as_ref()
        .map(|range| position::clamp_byte_range(rope, range));

    let header = render_header(
        active,
        cursor,
        selection.as_ref(),
        visible.as_ref(),
        boundary,
    );
    // The closing tag is counted once, with the header it belongs to.
    let header_tokens = cache.count(tokenizer, &format!("{header}{CLOSING_TAG}"));

    // Identifiers are looked up only where a definition could be found.
    let has_definition_sources = workspace.is_some()
        || others.iter().any(|buffer| {
            buffer.display_path != active.display_path && buffer.snapshot.tree.is_some()
        });
    let syntax = ActiveSyntax::of(
        active,
        cursor,
        selection.as_ref(),
        has_definition_sources,
        outlines,
    );
    let room = budget.saturating_sub(header_tokens) / 2;
    let whole_file = whole_file_part(rope, whole_file_tokens.min(room), tokenizer, cache);
    let parts = parts(
        active,
        cursor,
        selection.as_ref(),
        syntax.as_ref(),
        Sources { others, workspace },
        outlines,
        whole_file,
    );
    fill(header, header_tokens, parts, budget, tokenizer, cache)
}

/// The identifiers the editor block looks definitions up for: those of the cursor's line,
/// the selection and the enclosing symbol, in that order (what a host fetches from the
/// workspace's symbol index before [`build`]).
pub fn identifiers_in_play(active: &ActiveFile, outlines: &mut OutlineCache) -> Vec<Identifier> {
    let rope = &active.snapshot.rope;
    let cursor = position::clamp_byte(rope, active.cursor);
    let selection = active
        .selection
        .as_ref()
        .map(|range| position::clamp_byte_range(rope, range))
        .filter(|range| !range.is_empty());
    ActiveSyntax::of(active, cursor, selection.as_ref(), true, outlines)
        .map(|syntax| syntax.identifiers)
        .unwrap_or_default()
}

/// The parts the active file has, in priority order: the selection, the enclosing symbol
/// (unless the selection covers it), the diagnostics, the outline, the definitions; or,
/// for a file shown whole, the selection, the file, the diagnostics, the definitions.
fn parts(
    active: &ActiveFile,
    cursor: usize,
    selection: Option<&Range<usize>>,
    syntax: Option<&ActiveSyntax>,
    sources: Sources,
    outlines: &mut OutlineCache,
    whole_file: Option<Part>,
) -> Vec<Part> {
    let rope = &active.snapshot.rope;
    let mut parts = Vec::new();
    let whole = whole_file.is_some();
    // What the user pointed at stays first, even in a file shown whole.
    if let Some(selection) = selection {
        parts.push(selection_part(rope, selection));
    }
    parts.extend(whole_file);
    if let Some(symbol) = syntax
        .and_then(|syntax| syntax.enclosing.as_ref())
        .filter(|_| !whole)
    {
        let covered = selection.is_some_and(|selection| {
            selection.start <= symbol.range.start && symbol.range.end <= selection.end
        });
        if !covered {
            parts.push(enclosing_symbol_part(rope, symbol));
        }
    }
    if !active.diagnostics.is_empty() {
        parts.push(diagnostics_part(rope, cursor, &active.diagnostics));
    }
    if let Some(syntax) = syntax {
        let definitions =
            definition_entries(&syntax.identifiers, active.display_path, sources, outlines);
        if !definitions.is_empty() {
            parts.push(Part {
                name: "definitions",
                body: Body::Entries(EntryBlock {
                    open: "<definitions>\n",
                    entries: definitions,
                    keep_order: None,
                    close: "</definitions>\n",
                    unit: EntryUnit::Definitions,
                }),
                cap: DEFINITIONS_MAX_TOKENS,
                floor: DEFINITIONS_FLOOR_TOKENS,
            });
        }
        if !syntax.outline_lines.is_empty() && !whole {
            let cursor_line = position::byte_to_line(rope, cursor);
            parts.push(Part {
                name: "outline",
                body: Body::Entries(EntryBlock {
                    open: "<outline>\n",
                    entries: syntax
                        .outline_lines
                        .iter()
                        .map(|l| l.text.clone())
                        .collect(),
                    keep_order: Some(outline_keep_order(&syntax.outline_lines, cursor_line)),
                    close: "</outline>\n",
                    unit: EntryUnit::Lines,
                }),
                cap: OUTLINE_MAX_TOKENS,
                floor: 0,
            });
        }
    }
    parts
}

/// Places the parts in priority order within what the header leaves of the budget.
fn fill(
    header: String,
    header_tokens: usize,
    parts: Vec<Part>,
    budget: usize,
    tokenizer: TokenizerKind,
    cache: &mut CountCache,
) -> EditorContext {
    let wholes = whole_texts(&parts, tokenizer, cache);
    let markers = omission_markers(&parts, &wholes, tokenizer, cache);
    let mut text = header;
    let mut reports = vec![PartReport {
        name: "header",
        tokens: header_tokens,
        cut_tokens: 0,
        omitted: false,
        max_tokens: header_tokens,
        entries: None,
        cut_entries: None,
    }];
    let mut total = header_tokens;
    let mut remaining = budget.saturating_sub(header_tokens);
    // Markers of the parts not placed yet: a part may use only what leaves room for them,
    // so an omission further down can always be announced within the budget.
    // A part with a floor keeps that much (up to its whole) from the parts before it.
    // A floor is at most a quarter of the budget: a small budget goes to the code first.
    let holds: Vec<usize> = parts
        .iter()
        .zip(&wholes)
        .zip(&markers)
        .map(|((part, (_, whole)), (_, marker))| {
            (*marker).max(part.floor.min(*whole).min(budget / 4))
        })
        .collect();
    let mut reserved_markers: usize = markers.iter().map(|(_, tokens)| tokens).sum();
    let mut reserved: usize = holds.iter().sum();

    for (((part, (whole, whole_tokens)), (marker, marker_tokens)), hold) in
        parts.iter().zip(wholes).zip(markers).zip(holds)
    {
        reserved -= hold;
        reserved_markers -= marker_tokens;
        // The selection is what the user pointed at, and a whole file is shown whole or
        // not at all: they yield to the markers only.
        let held = if part.name == "selection" || part.name == "file" {
            reserved_markers
        } else {
            reserved
        };
        let available = remaining.saturating_sub(held).min(part.cap);
        let report = match place(part, whole, whole_tokens, available, tokenizer, cache) {
            Some(placed) => {
                text.push_str(&placed.text);
                let total_entries = part.body.entry_count();
                let kept = placed.kept_entries.or(total_entries);
                PartReport {
                    name: part.name,
                    tokens: placed.tokens,
                    cut_tokens: placed.cut_tokens,
                    omitted: false,
                    max_tokens: available,
                    entries: kept,
                    cut_entries: total_entries.zip(kept).map(|(all, kept)| all - kept),
                }
            }
            None => {
                text.push_str(&marker);
                PartReport {
                    name: part.name,
                    tokens: marker_tokens,
                    cut_tokens: whole_tokens,
                    omitted: true,
                    max_tokens: available,
                    entries: part.body.entry_count().map(|_| 0),
                    cut_entries: part.body.entry_count(),
                }
            }
        };
        remaining = remaining.saturating_sub(report.tokens);
        total += report.tokens;
        reports.push(report);
    }
    text.push_str(CLOSING_TAG);
    EditorContext {
        text,
        tokens: total,
        parts: reports,
    }
}

/// Each part rendered whole, with its tokens.
fn whole_texts(
    parts: &[Part],
    tokenizer: TokenizerKind,
    cache: &mut CountCache,
) -> Vec<(String, usize)> {
    parts
        .iter()
        .map(|part| {
            let text = part.body.whole();
            let tokens = cache.count(tokenizer, &text);
            (text, tokens)
        })
        .collect()
}

/// Each part's line announcing it did not fit (with the tokens of its whole), with its
/// tokens.
fn omission_markers(
    parts: &[Part],
    wholes: &[(String, usize)],
    tokenizer: TokenizerKind,
    cache: &mut CountCache,
) -> Vec<(String, usize)> {
    parts
        .iter()
        .zip(wholes)
        .map(|(part, (_, tokens))| {
            let marker = format!(
                "[{} omitted: {tokens} tokens did not fit the editor-context budget]\n",
                part.name
            );
            let marker_tokens = cache.count(tokenizer, &marker);
            (marker, marker_tokens)
        })
        .collect()
}

/// A part within `available` tokens: whole when it fits, else cut when at least
/// MIN_PART_TOKENS are left, else None (omitted).
fn place(
    part: &Part,
    whole: String,
    whole_tokens: usize,
    available: usize,
    tokenizer: TokenizerKind,
    cache: &mut CountCache,
) -> Option<Placed> {
    if whole_tokens <= available {
        Some(Placed {
            text: whole,
            tokens: whole_tokens,
            cut_tokens: 0,
            kept_entries: None,
        })
    } else if available >= MIN_PART_TOKENS {
        part.body.cut_to(available, whole_tokens, tokenizer, cache)
    } else {
        None
    }
}

/// What the active document's syntax tree says; None without a tree.
struct ActiveSyntax {
    enclosing: Option<EnclosingSymbol>,
    /// The outline rendered one line per symbol.
    outline_lines: Arc<Vec<OutlineLine>>,
    /// Referenced in the selection and the enclosing symbol, else on the cursor's line.
    identifiers: Vec<Identifier>,
}

impl ActiveSyntax {
    fn of(
        active: &ActiveFile,
        cursor: usize,
        selection: Option<&Range<usize>>,
        look_up_identifiers: bool,
        outlines: &mut OutlineCache,
    ) -> Option<ActiveSyntax> {
        let snapshot = active.snapshot;
        let tree = snapshot.tree.as_ref()?;
        let language = snapshot.language;
        // The outline comes from the cache (unchanged text, unchanged outline); the other
        // syntax functions read one contiguous copy of the text.
        let buffer = OpenBuffer {
            display_path: active.display_path,
            snapshot,
        };
        let outline = outlines.outline(&buffer)?;
        let source = snapshot.rope.to_string();
        let source = source.as_bytes();
        let enclosing = syntax::enclosing_in_outline(&outline, source, cursor);
        let identifiers = if look_up_identifiers {
            // The cursor's line first, then the selection's identifiers, then the rest of
            // the enclosing symbol's: all are what the user is looking at.
            let mut lookups = vec![position::line_content_bytes(
                &snapshot.rope,
                position::byte_to_line(&snapshot.rope, cursor),
            )];
            if let Some(selection) = selection {
                lookups.push(selection.clone());
            }
            if let Some(symbol) = &enclosing {
                lookups.push(symbol.range.clone());
            }
            let mut identifiers: Vec<syntax::Identifier> = Vec::new();
            for range in lookups {
                for identifier in syntax::referenced_identifiers(language, source, tree, range) {
                    if !identifiers.contains(&identifier) {
                        identifiers.push(identifier);
                    }
                }
            }
            identifiers
        } else {
            Vec::new()
        };
        Some(ActiveSyntax {
            enclosing,
            outline_lines: outlines.outline_lines(&buffer)?,
            identifiers,
        })
    }
}

// ---------------------------------------------------------------------------------------
// Parts
// ---------------------------------------------------------------------------------------

struct Part {
    name: &'static str,
    body: Body,
    /// The most this part may take, whatever the budget leaves.
    cap: usize,
    /// Tokens the parts before this one leave for it (up to its whole size), so a long
    /// enclosing symbol cannot crowd it out.
    floor: usize,
}

enum Body {
    Code(CodeBlock),
    Entries(EntryBlock),
}

/// Numbered code lines: when cut, the head and the tail stay and the middle goes.
struct CodeBlock {
    open: String,
    code: String,
    close: &'static str,
}

/// Whole entries (diagnostic lines, outline lines, definitions): when cut, the first ones
/// stay.
struct EntryBlock {
    open: &'static str,
    entries: Vec<String>,
    /// The order in which entries are kept when the block is cut (indexes into
    /// `entries`); None keeps the first ones. Kept entries are shown in their own order,
    /// a gap between two of them as a "…" line.
    keep_order: Option<Vec<usize>>,
    close: &'static str,
    unit: EntryUnit,
}

#[derive(Clone, Copy)]
enum EntryUnit {
    Lines,
    Definitions,
}

/// A part as it goes into the text.
struct Placed {
    text: String,
    tokens: usize,
    cut_tokens: usize,
    /// Entries kept by a cut; None when whole or not made of entries.
    kept_entries: Option<usize>,
}

impl Body {
    fn entry_count(&self) -> Option<usize> {
        match self {
            Body::Code(_) => None,
            Body::Entries(block) => Some(block.entries.len()),
        }
    }

    fn whole(&self) -> String {
        match self {
            Body::Code(block) => format!("{}{}{}", block.open, block.code, block.close),
            Body::Entries(block) => {
                let mut text = String::from(block.open);
                block.entries.iter().for_each(|entry| text.push_str(entry));
                text.push_str(block.close);
                text
            }
        }
    }

    /// The part cut to at most `available` tokens, with its cut marker; None when nothing
    /// useful fits.
    fn cut_to(
        &self,
        available: usize,
        whole_tokens: usize,
        tokenizer: TokenizerKind,
        cache: &mut CountCache,
    ) -> Option<Placed> {
        match self {
            Body::Code(block) => block.cut_to(available, tokenizer, cache),
            Body::Entries(block) => block.cut_to(available, whole_tokens, tokenizer, cache),
        }
    }
}

impl CodeBlock {
    fn cut_to(
        &self,
        available: usize,
        tokenizer: TokenizerKind,
        cache: &mut CountCache,
    ) -> Option<Placed> {
        let mut code_budget = available.saturating_sub(CODE_CUT_ALLOWANCE);
        for _ in 0..MAX_FIT_ATTEMPTS {
            let truncated =
                truncate_middle(&self.code, TruncationPolicy::Tokens(code_budget), tokenizer);
            let overshoot = if truncated.removed == 0 {
                // The code alone is within this budget but the block was not: keep less.
                CODE_CUT_ALLOWANCE
            } else {
                let mut text = format!(
                    "{}[cut to fit the editor-context budget: {} tokens omitted]\n{}",
                    self.open, truncated.removed, truncated.text
                );
                // With a tiny budget the kept tail may be empty and the text ends in the
                // middle marker.
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(self.close);
                let tokens = cache.count(tokenizer, &text);
                if tokens <= available {
                    return Some(Placed {
                        text,
                        tokens,
                        cut_tokens: truncated.removed,
                        kept_entries: None,
                    });
                }
                tokens - available
            };
            if code_budget == 0 {
                return None;
            }
            code_budget = code_budget.saturating_sub(overshoot);
        }
        None
    }
}

impl EntryBlock {
    fn cut_to(
        &self,
        available: usize,
        whole_tokens: usize,
        tokenizer: TokenizerKind,
        cache: &mut CountCache,
    ) -> Option<Placed> {
        let entries = &self.entries;
        let entry_tokens: Vec<usize> = entries
            .iter()
            .map(|entry| cache.count(tokenizer, entry))
            .collect();
        let order: Vec<usize> = match &self.keep_order {
            Some(order) => order.clone(),
            None => (0..entries.len()).collect(),
        };
        // Estimate with the largest marker the cut can need; the exact count decides below.
        let all_lines = entries.iter().map(|e| e.matches('\n').count()).sum();
        let frame = cache.count(tokenizer, &format!("{}{}", self.open, self.close))
            + cache.count(
                tokenizer,
                &self
                    .unit
                    .marker(entries.len(), all_lines, whole_tokens.max(1)),
            );
        let mut kept = 0;
        let mut used = frame;
        while kept < order.len() && used + entry_tokens[order[kept]] <= available {
            used += entry_tokens[order[kept]];
            kept += 1;
        }
        // The whole part did not fit, so at least one entry goes even if the per-entry
        // estimate says otherwise.
        kept = kept.min(entries.len().saturating_sub(1));
        for _ in 0..MAX_FIT_ATTEMPTS {
            // A block holding only its marker says no more than the omission marker does.
            if kept == 0 {
                return None;
            }
            let mut keep = vec![false; entries.len()];
            order[..kept].iter().for_each(|&i| keep[i] = true);
            let (text, cut_tokens) = self.render_kept(&keep, &entry_tokens);
            let tokens = cache.count(tokenizer, &text);
            if tokens <= available {
                return Some(Placed {
                    text,
                    tokens,
                    cut_tokens,
                    kept_entries: Some(kept),
                });
            }
            // Drop kept entries worth at least the overshoot.
            let mut dropped = 0;
            while kept > 0 && dropped < tokens - available {
                kept -= 1;
                dropped += entry_tokens[order[kept]];
            }
        }
        None
    }

    /// The kept entries in their order, a "…" line for each run left out before a kept
    /// one, and the marker for all left out; with the tokens left out.
    fn render_kept(&self, keep: &[bool], entry_tokens: &[usize]) -> (String, usize) {
        let mut text = String::from(self.open);
        let (mut cut_tokens, mut cut_entries, mut cut_lines) = (0, 0, 0);
        let mut in_gap = false;
        for (index, entry) in self.entries.iter().enumerate() {
            if keep[index] {
                if in_gap {
                    text.push_str("…\n");
                    in_gap = false;
                }
                text.push_str(entry);
            } else {
                in_gap = true;
                cut_tokens += entry_tokens[index];
                cut_entries += 1;
                cut_lines += entry.matches('\n').count();
            }
        }
        text.push_str(&self.unit.marker(cut_entries, cut_lines, cut_tokens));
        text.push_str(self.close);
        (text, cut_tokens)
    }
}

impl EntryUnit {
    /// The marker line standing for `entries` cut entries of `lines` lines, worth `tokens`
    /// tokens.
    fn marker(self, entries: usize, lines: usize, tokens: usize) -> String {
        match self {
            // An entry may span lines (a multi-line diagnostic message): count lines.
            EntryUnit::Lines => format!(
                "[… {lines} more lines ({tokens} tokens) cut to fit the editor-context budget]\n"
            ),
            EntryUnit::Definitions => format!(
                "[… {entries} more definitions ({tokens} tokens) omitted to fit the editor-context budget]\n"
            ),
        }
    }
}

fn render_header(
    active: &ActiveFile,
    cursor: usize,
    selection: Option<&Range<usize>>,
    visible: Option<&Range<usize>>,
    boundary: &str,
) -> String {
    let rope = &active.snapshot.rope;
    let mut header = String::from(OPENING_TAG);
    // Prompt files end with a newline; the statement is one line block either way.
    let boundary = boundary.trim();
    if !boundary.is_empty() {
        header.push_str(boundary);
        header.push('\n');
    }
    let (line, column) = position::byte_to_line_column(rope, cursor);
    let _ = write!(
        header,
        "<active_file path=\"{}\" language=\"{}\" cursor=\"{line}:{column}\"",
        attribute(active.display_path),
        active.snapshot.language.id()
    );
    if let Some(selection) = selection {
        let (l1, c1) = position::byte_to_line_column(rope, selection.start);
        let (l2, c2) = position::byte_to_line_column(rope, selection.end);
        let _ = write!(header, " selection=\"{l1}:{c1}-{l2}:{c2}\"");
    }
    if let Some(visible) = visible {
        let lines = position::byte_range_to_lines(rope, visible);
        let _ = write!(header, " visible=\"{}\"", position::display_lines(&lines));
    }
    header.push_str("/>\n");
    header
}

/// The whole file as numbered lines, when it has at most `WHOLE_FILE_MAX_LINES` lines and
/// `max_tokens` tokens (and is not empty).
fn whole_file_part(
    rope: &Rope,
    max_tokens: usize,
    tokenizer: TokenizerKind,
    cache: &mut CountCache,
) -> Option<Part> {
    if rope.len_bytes() == 0 || max_tokens == 0 {
        return None;
    }
    // A final line break does not start another line.
    let lines = rope.len_lines() - usize::from(rope.line(rope.len_lines() - 1).len_chars() == 0);
    if lines > WHOLE_FILE_MAX_LINES {
        return None;
    }
    let block = CodeBlock {
        open: format!("<file lines=\"1-{lines}\">\n"),
        code: numbered_lines(rope, 0..lines),
        close: "</file>\n",
    };
    let text = format!("{}{}{}", block.open, block.code, block.close);
    if cache.count(tokenizer, &text) > max_tokens {
        return None;
    }
    Some(Part {
        name: "file",
        body: Body::Code(block),
        cap: usize::MAX,
        floor: 0,
    })
}

fn selection_part(rope: &Rope, selection: &Range<usize>) -> Part {
    let lines = position::byte_range_to_lines(rope, selection);
    Part {
        name: "selection",
        body: Body::Code(CodeBlock {
            open: format!(
                "<selection lines=\"{}\">\n",
                position::display_lines(&lines)
            ),
            code: numbered_lines(rope, lines),
            close: "</selection>\n",
        }),
        cap: usize::MAX,
        floor: 0,
    }
}

fn enclosing_symbol_part(rope: &Rope, symbol: &EnclosingSymbol) -> Part {
    let lines =
        position::byte_range_to_lines(rope, &position::clamp_byte_range(rope, &symbol.range));
    Part {
        name: "enclosingSymbol",
        body: Body::Code(CodeBlock {
            open: format!(
                "<enclosing_symbol kind=\"{}\" name=\"{}\" path=\"{}\" lines=\"{}\">\n",
                kind_name(symbol.kind),
                attribute(&symbol.name),
                attribute(&symbol.path.join(" > ")),
                position::display_lines(&lines)
            ),
            code: numbered_lines(rope, lines),
            close: "</enclosing_symbol>\n",
        }),
        cap: usize::MAX,
        floor: 0,
    }
}

/// Nearest to the cursor first: line distance, then severity, then position.
fn diagnostics_part(rope: &Rope, cursor: usize, diagnostics: &[EditorDiagnostic]) -> Part {
    let cursor_line = position::byte_to_line(rope, cursor);
    let mut ordered: Vec<((usize, Severity, usize), String)> = diagnostics
        .iter()
        .map(|diagnostic| {
            let range = position::clamp_byte_range(rope, &diagnostic.range);
            let first = position::byte_to_line(rope, range.start);
            let last = position::byte_to_line(rope, range.end);
            let distance = if cursor_line < first {
                first - cursor_line
            } else {
                cursor_line.saturating_sub(last)
            };
            let key = (distance, diagnostic.severity, range.start);
            (key, diagnostic_line(rope, diagnostic, range))
        })
        .collect();
    // Stable: diagnostics with equal keys keep the order the client sent them in.
    ordered.sort_by_key(|(key, _)| *key);
    Part {
        name: "diagnostics",
        body: Body::Entries(EntryBlock {
            open: "<diagnostics>\n",
            entries: ordered.into_iter().map(|(_, line)| line).collect(),
            keep_order: None,
            close: "</diagnostics>\n",
            unit: EntryUnit::Lines,
        }),
        cap: usize::MAX,
        floor: 0,
    }
}

/// `{severity} {l1}:{c1}-{l2}:{c2} {source} {code}: {message}`, continuation lines of the
/// message indented so that no line of it can pass for a line of the block's own format.
fn diagnostic_line(rope: &Rope, diagnostic: &EditorDiagnostic, range: Range<usize>) -> String {
    let (l1, c1) = position::byte_to_line_column(rope, range.start);
    let (l2, c2) = position::byte_to_line_column(rope, range.end);
    let mut line = format!("{} {l1}:{c1}-{l2}:{c2}", diagnostic.severity.name());
    for label in [&diagnostic.source, &diagnostic.code].into_iter().flatten() {
        let label = label.split_whitespace().collect::<Vec<_>>().join(" ");
        if !label.is_empty() {
            line.push(' ');
            line.push_str(&label);
        }
    }
    // Clients send "\r\n" and lone "\r" too; each break becomes an indented continuation.
    let message = diagnostic.message.replace("\r\n", "\n").replace('\r', "\n");
    let message = message.trim_end();
    if !message.is_empty() {
        line.push_str(": ");
        line.push_str(&message.replace('\n', "\n  "));
    }
    line.push('\n');
    line
}

/// One line of the outline: a symbol, nested by two spaces per level.
#[derive(Debug, Clone)]
struct OutlineLine {
    text: String,
    depth: usize,
    /// 0-based lines of the symbol.
    lines: Range<usize>,
    /// Inside (or itself) a test module or test class: the first to go when the outline is
    /// long.
    in_tests: bool,
}

/// One line per symbol in source order, nested by two spaces per level.
fn outline_entries(rope: &Rope, symbols: &[Symbol]) -> Vec<OutlineLine> {
    let mut entries = Vec::new();
    // An explicit stack: the outline of a pathologically deep tree must not recurse.
    let mut stack: Vec<(&Symbol, usize, bool)> =
        symbols.iter().rev().map(|s| (s, 0, false)).collect();
    while let Some((symbol, depth, in_tests)) = stack.pop() {
        let lines =
            position::byte_range_to_lines(rope, &position::clamp_byte_range(rope, &symbol.range));
        let in_tests = in_tests || is_test_container(symbol);
        entries.push(OutlineLine {
            text: format!(
                "{}{} {}\n",
                "  ".repeat(depth.min(MAX_OUTLINE_INDENT)),
                symbol_label(symbol),
                position::display_lines(&lines)
            ),
            depth,
            lines,
            in_tests,
        });
        stack.extend(
            symbol
                .children
                .iter()
                .rev()
                .map(|child| (child, depth + 1, in_tests)),
        );
    }
    entries
}

/// `mod tests`, `mod test_foo`, `class TestFoo`: a container of tests.
fn is_test_container(symbol: &Symbol) -> bool {
    let name = symbol.name.as_str();
    match symbol.kind {
        SymbolKind::Module => name == "tests" || name == "test" || name.starts_with("test_"),
        SymbolKind::Class => name.starts_with("Test"),
        _ => false,
    }
}

/// The order in which outline lines are kept when the outline must be cut: the symbols
/// around the cursor (those enclosing it and its neighbours), then the top-level items,
/// then their members, then deeper symbols; test modules last. Ties go to the nearer line.
fn outline_keep_order(entries: &[OutlineLine], cursor_line: usize) -> Vec<usize> {
    let distance = |entry: &OutlineLine| {
        if entry.lines.contains(&cursor_line) {
            0
        } else if cursor_line < entry.lines.start {
            entry.lines.start - cursor_line
        } else {
            cursor_line + 1 - entry.lines.end
        }
    };
    let mut order: Vec<(usize, usize, usize)> = entries
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            let near = distance(entry) <= OUTLINE_NEIGHBOURHOOD_LINES;
            let tier = match (entry.in_tests, near, entry.depth) {
                (_, true, _) if distance(entry) == 0 => 0,
                (false, true, _) => 1,
                (false, false, 0) => 2,
                (false, false, 1) => 3,
                (false, false, _) => 4,
                (true, true, _) => 5,
                (true, false, _) => 6,
            };
            (tier, distance(entry), index)
        })
        .collect();
    order.sort_unstable();
    order.into_iter().map(|(_, _, index)| index).collect()
}

/// "struct Foo"; an impl's name already says what it is ("impl Display for Foo").
fn symbol_label(symbol: &Symbol) -> String {
    match symbol.kind {
        SymbolKind::Impl => symbol.name.clone(),
        kind => format!("{} {}", kind_name(kind), symbol.name),
    }
}

/// Where definitions are looked up: the other open buffers first (their text is the
/// user's, saved or not), then the workspace's symbol index.
#[derive(Clone, Copy)]
struct Sources<'s, 'a> {
    others: &'s [OpenBuffer<'a>],
    workspace: Option<&'s WorkspaceDefinitions>,
}

/// Definitions of `identifiers`: those in the other open buffers, in the identifiers'
/// order, then those the workspace index resolves (see [`resolve`]) for the names no open
/// buffer defines. A repo map in miniature of what the code in view uses.
fn definition_entries(
    identifiers: &[Identifier],
    active_path: &str,
    sources: Sources,
    outlines: &mut OutlineCache,
) -> Vec<String> {
    if identifiers.is_empty() {
        return Vec::new();
    }
    let indexes: Vec<_> = sources
        .others
        .iter()
        .filter(|buffer| buffer.display_path != active_path)
        .filter_map(|buffer| outlines.definitions(buffer))
        .collect();
    // One name, one lookup: an identifier used as a value and as a type finds the same
    // definitions.
    let mut looked_up: HashSet<&str> = HashSet::new();
    let mut entries = Vec::new();
    for identifier in identifiers {
        if !looked_up.insert(identifier.name.as_str()) {
            continue;
        }
        for index in &indexes {
            for definition in index.get(identifier.name.as_str()).into_iter().flatten() {
                if entries.len() == MAX_DEFINITIONS {
                    return entries;
                }
                entries.push(definition.to_string());
            }
        }
    }
    let Some(workspace) = sources.workspace else {
        return entries;
    };
    let in_buffers = |name: &str| indexes.iter().any(|index| index.contains_key(name));
    // An open buffer's own text wins over what the index read of it from disk.
    let open: HashSet<&str> = sources.others.iter().map(|b| b.display_path).collect();
    for (_, found) in resolve::pick(identifiers, workspace, in_buffers) {
        if entries.len() == MAX_DEFINITIONS {
            break;
        }
        if !open.contains(found.display_path.as_str()) && found.display_path != active_path {
            entries.push(render_indexed_definition(found));
        }
    }
    entries
}

/// A definition from the index: its doc comment or attributes, its signature on the line
/// of its name, a small type's fields.
fn render_indexed_definition(found: &WorkspaceDefinition) -> String {
    let definition = &found.definition;
    let lines = definition.start_line as usize..definition.end_line as usize + 1;
    let mut text = format!(
        "<definition name=\"{}\" kind=\"{}\" path=\"{}\" lines=\"{}\"",
        attribute(definition.name()),
        kind_name(definition.kind),
        attribute(&found.display_path),
        position::display_lines(&lines)
    );
    if let Some(container) = definition.container() {
        let _ = write!(text, " in=\"{}\"", attribute(container));
    }
    text.push_str(">\n");
    let doc = definition.doc().trim_end();
    // Python's docstring follows the signature; everywhere else the doc comment and the
    // attributes come before it.
    let doc_after = found.language == crate::language::Language::Python;
    if !doc.is_empty() && !doc_after {
        text.push_str(doc);
        text.push('\n');
    }
    let _ = writeln!(
        text,
        "L{}: {}",
        definition.name_line as usize + 1,
        definition.signature().trim_end()
    );
    if !doc.is_empty() && doc_after {
        text.push_str(doc);
        text.push('\n');
    }
    for field in definition.fields() {
        let _ = writeln!(text, "    {}", field.trim());
    }
    text.push_str("</definition>\n");
    text
}

fn render_definition(path: &str, rope: &Rope, symbol: &Symbol) -> String {
    let lines =
        position::byte_range_to_lines(rope, &position::clamp_byte_range(rope, &symbol.range));
    let shown = if lines.len() <= WHOLE_DEFINITION_MAX_LINES {
        lines.clone()
    } else {
        lines.start..lines.start + DEFINITION_HEAD_LINES
    };
    let mut text = format!(
        "<definition name=\"{}\" kind=\"{}\" path=\"{}\" lines=\"{}\">\n",
        attribute(&symbol.name),
        kind_name(symbol.kind),
        attribute(path),
        position::display_lines(&lines)
    );
    text.push_str(&numbered_lines(rope, shown.clone()));
    if shown.len() < lines.len() {
        let _ = writeln!(text, "… {} more lines", lines.len() - shown.len());
    }
    text.push_str("</definition>\n");
    text
}

/// The serde name of the kind (lowercase), as the rest of agentls reports it.
fn kind_name(kind: SymbolKind) -> &'static str {
    match kind {
        SymbolKind::Function => "function",
        SymbolKind::Method => "method",
        SymbolKind::Struct => "struct",
        SymbolKind::Class => "class",
        SymbolKind::Enum => "enum",
        SymbolKind::Trait => "trait",
        SymbolKind::Interface => "interface",
        SymbolKind::Impl => "impl",
        SymbolKind::Module => "module",
        SymbolKind::Constant => "constant",
        SymbolKind::TypeAlias => "typealias",
        SymbolKind::Macro => "macro",
    }
}

/// An attribute value that cannot close its quotes or span lines (`declare module "m"` is a
/// symbol name with quotes in it).
fn attribute(value: &str) -> String {
    value.replace('"', "&quot;").replace(['\n', '\r'], " ")
}

// ---------------------------------------------------------------------------------------
// Rope helpers (unit conversions are in `position`)
// ---------------------------------------------------------------------------------------

/// `L{n}: {line}` for each line, without the lines' own line breaks.
fn numbered_lines(rope: &Rope, lines: Range<usize>) -> String {
    let mut text = String::new();
    for line in lines {
        let _ = write!(text, "L{}: ", position::display_line(line));
        rope.line(line)
            .chunks()
            .for_each(|chunk| text.push_str(chunk));
        // "L{n}: " ends in a space, so only the line's own break can be popped here.
        if text.ends_with('\n') {
            text.pop();
        }
        if text.ends_with('\r') {
            text.pop();
        }
        text.push('\n');
    }
    text
}

pub mod resolve;

pub use resolve::{WorkspaceDefinition, WorkspaceDefinitions};

#[cfg(test)]
mod tests;
