//! One open document: its text as a rope and its syntax tree. A change edits the rope and
//! tells the tree where it moved (`Tree::edit`), nothing more: parsing waits until something
//! reads the tree, and then reparses incrementally whatever changed since the last read. A
//! keystroke costs a rope edit; a read after a burst of edits costs one reparse, and no
//! reader is ever handed a tree older than the text. Pure data: no IO, no LSP transport.

use crate::language::Language;
use crate::position::{self, LineOutOfRange, PositionEncoding};
use lsp_types::Range;
use ropey::Rope;
use tree_sitter::{InputEdit, Parser, Tree};

/// Documents larger than this get no syntax tree by default (configurable). A tree for a
/// 20 MB generated file costs hundreds of MB and seconds per reparse and helps nobody.
pub const DEFAULT_MAX_SYNTAX_BYTES: usize = 8 * 1024 * 1024;

/// The version of a document read from disk rather than opened by the client: it says
/// nothing about the text, so nothing may be cached by it.
pub const DISK_VERSION: i32 = i32::MIN;

/// One content change as the client sent it: a range (None = whole document) and text.
#[derive(Debug, Clone)]
pub struct TextChange {
    pub range: Option<Range>,
    pub text: String,
}

/// Edits since the last parse beyond which a tree full of errors is parsed from nothing:
/// tree-sitter's error recovery over hundreds of accumulated errors makes an incremental
/// reparse slower than a fresh one.
const MAX_EDITS_FOR_INCREMENTAL_WITH_ERRORS: usize = 256;

/// Total size of the documents whose syntax trees are kept, by default. A tree takes about
/// 45 times the bytes of its text (a 5,000-line Rust buffer of 250 KB: 11 MB), so 1 MiB of
/// text is about 45 MB of trees: a hundred ordinary files, or four huge ones.
pub const DEFAULT_TREE_BUDGET_BYTES: usize = 1 << 20;

pub struct Document {
    pub version: i32,
    pub language: Language,
    rope: Rope,
    /// None for plain text, for documents over the syntax size limit, and after a parse
    /// that failed (tree-sitter gives up only on cancellation or missing language).
    tree: Option<Tree>,
    /// Edits applied to `tree` (`Tree::edit`) since it was parsed: while non-zero the tree
    /// is stale and no reader may see it.
    pending_edits: usize,
    /// The tree must be parsed from nothing at the next read (a new document, a whole
    /// replacement, or a tree dropped for memory).
    needs_full_parse: bool,
    /// The tree was dropped for memory: a glance (`snapshot_if_parsed`) does not parse it
    /// back; a read by name does.
    dropped: bool,
    /// Parses done, for `agentls/debug/document` and the keystroke benchmark.
    parses: u64,
    parser: Option<Parser>,
    max_syntax_bytes: usize,
}

/// What a reader gets: cheap to take (a rope clone shares its nodes, a tree clone is a
/// reference count), immutable, usable on any thread.
#[derive(Clone)]
pub struct DocumentSnapshot {
    pub version: i32,
    pub language: Language,
    pub rope: Rope,
    pub tree: Option<Tree>,
    /// Parses the document had when the snapshot was taken (`agentls/debug/document`).
    pub parses: u64,
}

impl Document {
    pub fn new(text: &str, version: i32, language: Language, max_syntax_bytes: usize) -> Self {
        let parser = language.grammar().and_then(|grammar| {
            let mut parser = Parser::new();
            match parser.set_language(&grammar) {
                Ok(()) => Some(parser),
                Err(err) => {
                    tracing::error!("cannot load the {} grammar: {err}", language.id());
                    None
                }
            }
        });
        Document {
            version,
            language,
            rope: Rope::from_str(text),
            tree: None,
            pending_edits: 0,
            needs_full_parse: true,
            dropped: false,
            parses: 0,
            parser,
            max_syntax_bytes,
        }
    }

    /// Frees the syntax tree (memory): the next read parses again.
    pub fn drop_tree(&mut self) {
        self.tree = None;
        self.pending_edits = 0;
        self.needs_full_parse = true;
        self.dropped = true;
    }

    /// Whether the document holds a tree or will at its next read (what memory it costs):
    /// false for plain text and for a tree dropped for memory.
    pub fn holds_tree(&self) -> bool {
        self.parser.is_some() && !self.dropped
    }

    pub fn rope(&self) -> &Rope {
        &self.rope
    }

    /// Parses done so far (a fresh document's first read is one).
    pub fn parses(&self) -> u64 {
        self.parses
    }

    /// The tree of the current text: parsed now if the text changed since the last read.
    pub fn tree(&mut self) -> Option<&Tree> {
        self.refresh();
        self.tree.as_ref()
    }

    /// The document as it is now, with a current tree.
    pub fn snapshot(&mut self) -> DocumentSnapshot {
        self.refresh();
        self.snapshot_as_is()
    }

    /// The document with its tree brought up to date, unless the tree was dropped for
    /// memory (other buffers: what is kept, never stale).
    pub fn snapshot_if_parsed(&mut self) -> DocumentSnapshot {
        if !self.dropped {
            self.refresh();
        }
        self.snapshot_as_is()
    }

    fn snapshot_as_is(&self) -> DocumentSnapshot {
        debug_assert!(self.pending_edits == 0 || self.tree.is_none());
        DocumentSnapshot {
            version: self.version,
            language: self.language,
            rope: self.rope.clone(),
            tree: if self.pending_edits == 0 {
                self.tree.clone()
            } else {
                None
            },
            parses: self.parses,
        }
    }

    /// Brings the tree up to the text: nothing when it is current; a fresh parse when there
    /// is none (or a tree full of errors has many edits waiting); else an incremental
    /// reparse with the edited old tree.
    fn refresh(&mut self) {
        self.dropped = false;
        if self.needs_full_parse || self.tree.is_none() {
            self.reparse(false);
        } else if self.pending_edits > 0 {
            let full = self.pending_edits > MAX_EDITS_FOR_INCREMENTAL_WITH_ERRORS
                && self
                    .tree
                    .as_ref()
                    .is_some_and(|t| t.root_node().has_error());
            self.reparse(!full);
        }
    }

    /// Applies the changes of one didChange in order and tells the tree where the text moved;
    /// the reparse waits for the next read. All ranges are checked against the text they
    /// apply to before anything changes, so a bad change leaves the document exactly as it
    /// was.
    pub fn apply_changes(
        &mut self,
        changes: &[TextChange],
        encoding: PositionEncoding,
    ) -> Result<(), LineOutOfRange> {
        let edits = if let [change] = changes {
            // One change (a keystroke) is checked before it touches the rope: applied in
            // place, without a staged copy of the rope's path to it.
            vec![apply_to_rope(&mut self.rope, change, encoding)?]
        } else {
            let mut staged = self.rope.clone();
            let mut edits = Vec::with_capacity(changes.len());
            for change in changes {
                edits.push(apply_to_rope(&mut staged, change, encoding)?);
            }
            self.rope = staged;
            edits
        };
        if edits.iter().any(Option::is_none) {
            // A whole-document replacement: nothing of the old tree is reusable.
            self.tree = None;
            self.pending_edits = 0;
            self.needs_full_parse = true;
        } else if let Some(tree) = self.tree.as_mut() {
            for edit in edits.iter().flatten() {
                tree.edit(edit);
            }
            self.pending_edits += edits.len();
        }
        Ok(())
    }

    fn reparse(&mut self, incremental: bool) {
        self.pending_edits = 0;
        self.needs_full_parse = false;
        let Some(parser) = self.parser.as_mut() else {
            return;
        };
        if self.rope.len_bytes() > self.max_syntax_bytes {
            if self.tree.take().is_some() || !incremental {
                tracing::info!(
                    "document of {} bytes is over the syntax limit of {} bytes: no syntax tree",
                    self.rope.len_bytes(),
                    self.max_syntax_bytes
                );
            }
            return;
        }
        let rope = &self.rope;
        let old_tree = if incremental {
            self.tree.as_ref()
        } else {
            None
        };
        let tree = parser.parse_with_options(&mut |byte, _| read_chunk(rope, byte), old_tree, None);
        self.parses += 1;
        if tree.is_none() {
            tracing::warn!("tree-sitter could not parse the document; syntax is off for it");
        }
        self.tree = tree;
    }
}

/// The rope's bytes from `byte` to the end of the chunk holding it: tree-sitter reads the
/// text in pieces, so the rope never has to be flattened into one string.
pub fn read_chunk(rope: &Rope, byte: usize) -> &[u8] {
    if byte >= rope.len_bytes() {
        return &[];
    }
    let (chunk, chunk_start, _, _) = rope.chunk_at_byte(byte);
    &chunk.as_bytes()[byte - chunk_start..]
}

/// Applies one change to the rope and returns the tree-sitter edit describing it
/// (None for a whole-document replacement).
fn apply_to_rope(
    rope: &mut Rope,
    change: &TextChange,
    encoding: PositionEncoding,
) -> Result<Option<InputEdit>, LineOutOfRange> {
    let Some(range) = change.range else {
        *rope = Rope::from_str(&change.text);
        return Ok(None);
    };
    let bytes = if range.start == range.end {
        // An insertion (most keystrokes): one position to convert.
        let at = position::position_to_byte(rope, range.start, encoding)?;
        at..at
    } else {
        position::range_to_bytes(rope, range, encoding)?
    };
    let start_char = position::byte_to_char(rope, bytes.start);
    let start_position = position::byte_to_point(rope, bytes.start);
    let (end_char, old_end_position) = if bytes.is_empty() {
        (start_char, start_position)
    } else {
        (
            position::byte_to_char(rope, bytes.end),
            position::byte_to_point(rope, bytes.end),
        )
    };
    // Whether the edit leaves every line break where it was, shifted: no break in the new
    // text and no `\r` just before the edit (which could pair with a `\n` after it, or lose
    // one). Then the new end is on the start's row, without asking the rope.
    let same_lines = !change.text.contains(['\n', '\r'])
        && (bytes.start == 0 || rope.byte(bytes.start - 1) != b'\r');
    if end_char > start_char {
        rope.remove(start_char..end_char);
    }
    if !change.text.is_empty() {
        rope.insert(start_char, &change.text);
    }
    let new_end_byte = bytes.start + change.text.len();
    let new_end_position = if same_lines {
        position::point_after_on_row(start_position, change.text.len())
    } else {
        position::byte_to_point(rope, new_end_byte)
    };
    debug_assert_eq!(
        new_end_position,
        position::byte_to_point(rope, new_end_byte)
    );
    Ok(Some(InputEdit {
        start_byte: bytes.start,
        old_end_byte: bytes.end,
        new_end_byte,
        start_position,
        old_end_position,
        new_end_position,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_types::Position;

    fn change(l1: u32, c1: u32, l2: u32, c2: u32, text: &str) -> TextChange {
        TextChange {
            range: Some(Range::new(Position::new(l1, c1), Position::new(l2, c2))),
            text: text.into(),
        }
    }

    fn fresh_sexp(doc: &Document) -> String {
        let mut parser = Parser::new();
        parser
            .set_language(&doc.language.grammar().unwrap())
            .unwrap();
        parser
            .parse(doc.rope.to_string(), None)
            .unwrap()
            .root_node()
            .to_sexp()
    }

    /// The edit tree-sitter is told about: the new end found without the rope (an edit on
    /// one line) must be where the rope puts it, around every kind of line break.
    #[test]
    fn the_new_end_of_an_edit_is_where_the_rope_puts_it() {
        let text = "a\r\nb\rc\nd";
        for line in 0..4u32 {
            for col in 0..3u32 {
                for (end_col, typed) in [(col, "x"), (col + 1, ""), (col + 1, "yz"), (col, "\n")] {
                    let mut rope = Rope::from_str(text);
                    let change = change(line, col, line, end_col, typed);
                    let Ok(Some(edit)) = apply_to_rope(&mut rope, &change, PositionEncoding::Utf8)
                    else {
                        continue;
                    };
                    assert_eq!(
                        edit.new_end_position,
                        position::byte_to_point(&rope, edit.new_end_byte),
                        "{line}:{col}-{end_col} {typed:?}"
                    );
                    assert!(edit.old_end_position >= edit.start_position);
                }
            }
        }
    }

    #[test]
    fn incremental_edits_match_a_fresh_parse() {
        let mut doc = Document::new(
            "fn main() {\r\n    let s = \"😀\";\r\n}\r\n",
            1,
            Language::Rust,
            DEFAULT_MAX_SYNTAX_BYTES,
        );
        // Insert after the emoji: utf-16 columns 13 and 14 are its surrogate pair.
        doc.apply_changes(&[change(1, 15, 1, 15, "x")], PositionEncoding::Utf16)
            .unwrap();
        assert_eq!(doc.rope.line(1).to_string(), "    let s = \"😀x\";\r\n");
        doc.apply_changes(
            &[
                change(2, 1, 2, 1, "\r\nfn two() -> u8 { 2 }"),
                change(0, 3, 0, 7, "start"),
            ],
            PositionEncoding::Utf16,
        )
        .unwrap();
        assert!(doc.rope.to_string().starts_with("fn start() {"));
        let tree = doc.tree().unwrap().clone();
        assert!(!tree.root_node().has_error());
        assert_eq!(tree.root_node().to_sexp(), fresh_sexp(&doc));
        assert_eq!(tree.root_node().named_child_count(), 2);
    }

    #[test]
    fn a_bad_change_in_a_batch_changes_nothing() {
        let mut doc = Document::new("a\nb\n", 1, Language::Rust, DEFAULT_MAX_SYNTAX_BYTES);
        let before = doc.rope.to_string();
        let err = doc
            .apply_changes(
                &[change(0, 0, 0, 0, "x"), change(9, 0, 9, 0, "y")],
                PositionEncoding::Utf8,
            )
            .unwrap_err();
        assert_eq!(err.position, Position::new(9, 0));
        assert_eq!(doc.rope.to_string(), before);
    }

    #[test]
    fn full_replacement_reparses_from_scratch() {
        let mut doc = Document::new("fn a() {}", 1, Language::Rust, DEFAULT_MAX_SYNTAX_BYTES);
        doc.apply_changes(
            &[TextChange {
                range: None,
                text: "struct S;".into(),
            }],
            PositionEncoding::Utf16,
        )
        .unwrap();
        assert_eq!(
            doc.tree().unwrap().root_node().to_sexp(),
            "(source_file (struct_item name: (type_identifier)))"
        );
    }

    #[test]
    fn plain_text_and_oversized_documents_have_no_tree() {
        let mut doc = Document::new("hello", 1, Language::PlainText, DEFAULT_MAX_SYNTAX_BYTES);
        assert!(doc.tree().is_none());
        let mut doc = Document::new("fn a() {}", 1, Language::Rust, 16);
        assert!(doc.tree().is_some());
        doc.apply_changes(&[change(0, 9, 0, 9, "\nfn b() {}")], PositionEncoding::Utf8)
            .unwrap();
        assert!(doc.tree().is_none(), "over the limit drops the tree");
        assert_eq!(doc.rope.to_string(), "fn a() {}\nfn b() {}");
    }

    #[test]
    fn past_the_end_of_a_line_clamps_to_the_line_end() {
        let mut doc = Document::new("ab\r\ncd", 1, Language::PlainText, 0);
        doc.apply_changes(&[change(0, 50, 0, 80, "!")], PositionEncoding::Utf16)
            .unwrap();
        assert_eq!(doc.rope.to_string(), "ab!\r\ncd");
    }

    #[test]
    fn changes_parse_nothing_until_a_read_and_a_read_sees_the_current_text() {
        let mut doc = Document::new("fn a() {}\n", 1, Language::Rust, DEFAULT_MAX_SYNTAX_BYTES);
        assert_eq!(doc.parses(), 0, "nothing is parsed before a read");
        assert!(doc.tree().is_some());
        assert_eq!(doc.parses(), 1);
        // Type `fn b() {}` one character at a time, then delete a character and retype it.
        for (col, ch) in (0u32..).zip("fn b() {}".chars()) {
            doc.apply_changes(
                &[change(1, col, 1, col, &ch.to_string())],
                PositionEncoding::Utf8,
            )
            .unwrap();
        }
        doc.apply_changes(&[change(1, 3, 1, 4, "")], PositionEncoding::Utf8)
            .unwrap();
        doc.apply_changes(&[change(1, 3, 1, 3, "c")], PositionEncoding::Utf8)
            .unwrap();
        assert_eq!(doc.parses(), 1, "eleven keystrokes, no parse");
        let snapshot = doc.snapshot();
        assert_eq!(doc.parses(), 2, "one reparse for the read");
        assert_eq!(
            snapshot.tree.unwrap().root_node().to_sexp(),
            fresh_sexp(&doc),
            "the read sees a tree of the current text"
        );
        assert_eq!(doc.rope.to_string(), "fn a() {}\nfn c() {}");
        doc.snapshot();
        assert_eq!(doc.parses(), 2, "a second read parses nothing");
    }

    #[test]
    fn other_buffers_get_no_stale_tree_and_no_parse_of_a_dropped_one() {
        let mut doc = Document::new("fn a() {}", 1, Language::Rust, DEFAULT_MAX_SYNTAX_BYTES);
        doc.snapshot();
        doc.apply_changes(&[change(0, 9, 0, 9, " fn b() {}")], PositionEncoding::Utf8)
            .unwrap();
        let edited = doc.snapshot_if_parsed();
        assert_eq!(
            edited.tree.unwrap().root_node().to_sexp(),
            fresh_sexp(&doc),
            "an edited tree is brought up to date"
        );
        doc.drop_tree();
        doc.apply_changes(&[change(0, 0, 0, 0, "// x\n")], PositionEncoding::Utf8)
            .unwrap();
        let parses = doc.parses();
        assert!(doc.snapshot_if_parsed().tree.is_none());
        assert_eq!(
            doc.parses(),
            parses,
            "a dropped tree is not parsed back for a glance"
        );
        assert!(
            doc.snapshot().tree.is_some(),
            "but a read by name parses it"
        );
    }

    #[test]
    fn many_edits_in_a_broken_file_parse_from_nothing() {
        let mut doc = Document::new("fn a() {\n", 1, Language::Rust, DEFAULT_MAX_SYNTAX_BYTES);
        doc.snapshot();
        for i in 0..(MAX_EDITS_FOR_INCREMENTAL_WITH_ERRORS as u32 + 1) {
            doc.apply_changes(&[change(1, i, 1, i, "(")], PositionEncoding::Utf8)
                .unwrap();
        }
        let tree = doc.snapshot().tree.unwrap();
        assert!(tree.root_node().has_error());
        assert_eq!(tree.root_node().to_sexp(), fresh_sexp(&doc));
    }

    #[test]
    fn read_chunk_walks_the_whole_rope() {
        let text = "x".repeat(100_000) + "😀";
        let rope = Rope::from_str(&text);
        let mut out = Vec::new();
        while out.len() < rope.len_bytes() {
            out.extend_from_slice(read_chunk(&rope, out.len()));
        }
        assert_eq!(out, text.as_bytes());
        assert!(read_chunk(&rope, rope.len_bytes()).is_empty());
    }
}
