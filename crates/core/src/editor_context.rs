//! The editor context block of one agent turn: what the model sees of the user's editor
//! (active file, cursor, selection, diagnostics, the symbol around the cursor, the outline,
//! and definitions of the identifiers in play taken from the other open buffers).
//!
//! The block is filled by priority within a token budget: header (always, even over
//! budget) > selection > enclosing symbol > diagnostics > outline > definitions. A part that
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
    /// "header" | "selection" | "enclosingSymbol" | "diagnostics" | "outline" | "definitions"
    pub name: &'static str,
    /// Tokens this part adds to the text: what was included (after any cut), or the
    /// omission marker's tokens when the part was omitted.
    pub tokens: usize,
    /// Tokens of content removed to fit the budget; the whole part's size when omitted.
    pub cut_tokens: usize,
    /// True when nothing of the part fit and only its marker is in the text.
    pub omitted: bool,
}

pub const DEFAULT_EDITOR_BUDGET: usize = 8_000;

/// Below this many tokens a cut part would be little more than its tags and marker.
const MIN_PART_TOKENS: usize = 32;
/// Room left beside the kept code of a cut selection or symbol for the tags, the cut marker
/// and the lines header `truncate_middle` adds; a shortfall is corrected by refitting.
const CODE_CUT_ALLOWANCE: usize = 24;
/// Token counts of a cut are known only after rendering; a few refits always converge.
const MAX_FIT_ATTEMPTS: usize = 6;
const MAX_DEFINITIONS: usize = 30;
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
    outline_lines: Option<Arc<Vec<String>>>,
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

    fn outline_lines(&mut self, buffer: &OpenBuffer) -> Option<Arc<Vec<String>>> {
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

/// Renders the editor context block of `active` within `budget` tokens (see the module
/// documentation for the priority order and the markers).
pub fn build(
    active: &ActiveFile,
    others: &[OpenBuffer],
    boundary: &str,
    budget: usize,
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
    let has_definition_sources = others
        .iter()
        .any(|buffer| buffer.display_path != active.display_path && buffer.snapshot.tree.is_some());
    let syntax = ActiveSyntax::of(
        active,
        cursor,
        selection.as_ref(),
        has_definition_sources,
        outlines,
    );
    let parts = parts(
        active,
        cursor,
        selection.as_ref(),
        syntax.as_ref(),
        others,
        outlines,
    );
    fill(header, header_tokens, parts, budget, tokenizer, cache)
}

/// The parts the active file has, in priority order: the selection, the enclosing symbol
/// (unless the selection covers it), the diagnostics, the outline, the definitions.
fn parts(
    active: &ActiveFile,
    cursor: usize,
    selection: Option<&Range<usize>>,
    syntax: Option<&ActiveSyntax>,
    others: &[OpenBuffer],
    outlines: &mut OutlineCache,
) -> Vec<Part> {
    let rope = &active.snapshot.rope;
    let mut parts = Vec::new();
    if let Some(selection) = selection {
        parts.push(selection_part(rope, selection));
    }
    if let Some(symbol) = syntax.and_then(|syntax| syntax.enclosing.as_ref()) {
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
        if !syntax.outline_lines.is_empty() {
            parts.push(Part {
                name: "outline",
                body: Body::Entries(EntryBlock {
                    open: "<outline>\n",
                    entries: syntax.outline_lines.to_vec(),
                    close: "</outline>\n",
                    unit: EntryUnit::Lines,
                }),
            });
        }
        let definitions =
            definition_entries(&syntax.identifiers, active.display_path, others, outlines);
        if !definitions.is_empty() {
            parts.push(Part {
                name: "definitions",
                body: Body::Entries(EntryBlock {
                    open: "<definitions>\n",
                    entries: definitions,
                    close: "</definitions>\n",
                    unit: EntryUnit::Definitions,
                }),
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
    }];
    let mut total = header_tokens;
    let mut remaining = budget.saturating_sub(header_tokens);
    // Markers of the parts not placed yet: a part may use only what leaves room for them,
    // so an omission further down can always be announced within the budget.
    let mut reserved: usize = markers.iter().map(|(_, tokens)| tokens).sum();

    for ((part, (whole, whole_tokens)), (marker, marker_tokens)) in
        parts.iter().zip(wholes).zip(markers)
    {
        reserved -= marker_tokens;
        let available = remaining.saturating_sub(reserved);
        let report = match place(part, whole, whole_tokens, available, tokenizer, cache) {
            Some(placed) => {
                text.push_str(&placed.text);
                PartReport {
                    name: part.name,
                    tokens: placed.tokens,
                    cut_tokens: placed.cut_tokens,
                    omitted: false,
                }
            }
            None => {
                text.push_str(&marker);
                PartReport {
                    name: part.name,
                    tokens: marker_tokens,
                    cut_tokens: whole_tokens,
                    omitted: true,
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
    outline_lines: Arc<Vec<String>>,
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
            // The selection's identifiers first, then the rest of the enclosing symbol's:
            // both are what the user is looking at.
            let mut lookups = Vec::new();
            if let Some(selection) = selection {
                lookups.push(selection.clone());
            }
            if let Some(symbol) = &enclosing {
                lookups.push(symbol.range.clone());
            }
            if lookups.is_empty() {
                lookups.push(position::line_content_bytes(
                    &snapshot.rope,
                    position::byte_to_line(&snapshot.rope, cursor),
                ));
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
}

impl Body {
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
        // Estimate with the largest marker the cut can need; the exact count decides below.
        let frame = cache.count(tokenizer, &format!("{}{}", self.open, self.close))
            + cache.count(tokenizer, &self.unit.marker(entries, whole_tokens.max(1)));
        let mut kept = 0;
        let mut used = frame;
        while kept < entries.len() && used + entry_tokens[kept] <= available {
            used += entry_tokens[kept];
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
            let cut_tokens: usize = entry_tokens[kept..].iter().sum();
            let mut text = String::from(self.open);
            entries[..kept]
                .iter()
                .for_each(|entry| text.push_str(entry));
            text.push_str(&self.unit.marker(&entries[kept..], cut_tokens));
            text.push_str(self.close);
            let tokens = cache.count(tokenizer, &text);
            if tokens <= available {
                return Some(Placed {
                    text,
                    tokens,
                    cut_tokens,
                });
            }
            // Drop kept entries worth at least the overshoot.
            let mut dropped = 0;
            while kept > 0 && dropped < tokens - available {
                kept -= 1;
                dropped += entry_tokens[kept];
            }
        }
        None
    }
}

impl EntryUnit {
    /// The marker line standing for the `cut` entries, worth `tokens` tokens.
    fn marker(self, cut: &[String], tokens: usize) -> String {
        match self {
            EntryUnit::Lines => {
                // An entry may span lines (a multi-line diagnostic message): count lines.
                let lines: usize = cut.iter().map(|entry| entry.matches('\n').count()).sum();
                format!(
                    "[… {lines} more lines ({tokens} tokens) cut to fit the editor-context budget]\n"
                )
            }
            EntryUnit::Definitions => format!(
                "[… {} more definitions ({tokens} tokens) omitted to fit the editor-context budget]\n",
                cut.len()
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
            close: "</diagnostics>\n",
            unit: EntryUnit::Lines,
        }),
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

/// One line per symbol in source order, nested by two spaces per level.
fn outline_entries(rope: &Rope, symbols: &[Symbol]) -> Vec<String> {
    let mut entries = Vec::new();
    // An explicit stack: the outline of a pathologically deep tree must not recurse.
    let mut stack: Vec<(&Symbol, usize)> = symbols.iter().rev().map(|s| (s, 0)).collect();
    while let Some((symbol, depth)) = stack.pop() {
        let lines =
            position::byte_range_to_lines(rope, &position::clamp_byte_range(rope, &symbol.range));
        entries.push(format!(
            "{}{} {}\n",
            "  ".repeat(depth.min(MAX_OUTLINE_INDENT)),
            symbol_label(symbol),
            position::display_lines(&lines)
        ));
        stack.extend(symbol.children.iter().rev().map(|child| (child, depth + 1)));
    }
    entries
}

/// "struct Foo"; an impl's name already says what it is ("impl Display for Foo").
fn symbol_label(symbol: &Symbol) -> String {
    match symbol.kind {
        SymbolKind::Impl => symbol.name.clone(),
        kind => format!("{} {}", kind_name(kind), symbol.name),
    }
}

/// Definitions, in the other open buffers, of `identifiers` in their order: a repo map in
/// miniature of what the code in view uses.
fn definition_entries(
    identifiers: &[Identifier],
    active_path: &str,
    others: &[OpenBuffer],
    outlines: &mut OutlineCache,
) -> Vec<String> {
    if identifiers.is_empty() {
        return Vec::new();
    }
    let indexes: Vec<_> = others
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
    entries
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

#[cfg(test)]
mod tests;
