//! One open document: its text as a rope and its syntax tree. A change edits the rope and
//! tells the tree where it moved (`Tree::edit`), nothing more: parsing waits until something
//! reads the tree, and then reparses incrementally whatever changed since the last read. A
//! keystroke costs a rope edit; a read after a burst of edits costs one reparse, and no
//! reader is ever handed a tree older than the text. Pure data: no IO, no LSP transport.

use crate::language::Language;
use crate::position::{self, LineOutOfRange, PositionEncoding};
use lsp_types::Range;
use ropey::Rope;
use tree_sitter::{InputEdit, Parser, Point, Tree};

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
    /// Changes applied to the text since the tree was parsed: while non-zero the tree is
    /// stale and no reader may see it.
    pending_edits: usize,
    /// The latest changes not yet told to the tree, merged into one edit while each
    /// touches the text of the one before (typing on, backspacing, retyping: see
    /// `merge_edits`). Told to the tree (`Tree::edit`) when a change elsewhere comes and
    /// before a reparse: `Tree::edit` walks the tree, once per merged run instead of once
    /// per keystroke.
    unsent_edit: Option<InputEdit>,
    /// Whether the tree was told of an edit (`Tree::edit`) since it was parsed. While not,
    /// and no edit waits (`unsent_edit`), every change since the parse was taken back and
    /// the text is byte for byte the one parsed: a read needs no reparse.
    tree_edited: bool,
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
            unsent_edit: None,
            tree_edited: false,
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
        self.unsent_edit = None;
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
        } else if self.pending_edits > 0 && !self.tree_edited && self.unsent_edit.is_none() {
            // Typed and taken back: the tree is the text's already.
            self.pending_edits = 0;
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
            self.unsent_edit = None;
            self.needs_full_parse = true;
        } else if self.tree.is_some() {
            for edit in edits.iter().flatten() {
                self.note_edit(edit);
            }
            self.pending_edits += edits.len();
        }
        Ok(())
    }

    /// Merges `edit` into the edit not yet told to the tree, or tells the tree that one and
    /// keeps `edit` back in its place.
    fn note_edit(&mut self, edit: &InputEdit) {
        let merged = match &self.unsent_edit {
            None => Some(*edit),
            Some(unsent) => merge_edits(unsent, edit),
        };
        match merged {
            // Typed and taken back: the text is byte for byte what the tree was edited
            // for, so there is nothing to tell it.
            Some(m) if m.start_byte == m.old_end_byte && m.start_byte == m.new_end_byte => {
                self.unsent_edit = None;
            }
            Some(merged) => self.unsent_edit = Some(merged),
            None => {
                self.send_unsent_edit();
                self.unsent_edit = Some(*edit);
            }
        }
    }

    /// Tells the tree the edit kept back, if any.
    fn send_unsent_edit(&mut self) {
        if let (Some(edit), Some(tree)) = (self.unsent_edit.take(), self.tree.as_mut()) {
            tree.edit(&edit);
            self.tree_edited = true;
        }
    }

    fn reparse(&mut self, incremental: bool) {
        self.send_unsent_edit();
        self.pending_edits = 0;
        self.tree_edited = false;
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

/// One edit that does what `first` then `second` did, when `second` touches or overlaps
/// the text `first` wrote (typing on, backspacing, retyping): the region either changed,
/// in the coordinates of the text before `first` (old end) and after `second` (new end).
/// None when the edits are apart: merging them would make the tree re-read the text
/// between.
fn merge_edits(first: &InputEdit, second: &InputEdit) -> Option<InputEdit> {
    if second.start_byte > first.new_end_byte || second.old_end_byte < first.start_byte {
        return None;
    }
    let (start_byte, start_position) = if second.start_byte < first.start_byte {
        (second.start_byte, second.start_position)
    } else {
        (first.start_byte, first.start_position)
    };
    // The old end: `second`'s, mapped back through `first` when it reaches past what
    // `first` wrote; else `first`'s.
    let (old_end_byte, old_end_position) = if second.old_end_byte >= first.new_end_byte {
        (
            second.old_end_byte - first.new_end_byte + first.old_end_byte,
            shift_point(
                second.old_end_position,
                first.new_end_position,
                first.old_end_position,
            ),
        )
    } else {
        (first.old_end_byte, first.old_end_position)
    };
    // The new end: `first`'s, moved by `second` when it lies past what `second` replaced;
    // else `second`'s.
    let (new_end_byte, new_end_position) = if first.new_end_byte > second.old_end_byte {
        (
            first.new_end_byte - second.old_end_byte + second.new_end_byte,
            shift_point(
                first.new_end_position,
                second.old_end_position,
                second.new_end_position,
            ),
        )
    } else {
        (second.new_end_byte, second.new_end_position)
    };
    Some(InputEdit {
        start_byte,
        old_end_byte,
        new_end_byte,
        start_position,
        old_end_position,
        new_end_position,
    })
}

/// Where `point`, at or after an edit's old end, is after the edit (as `Tree::edit` moves
/// it). Saturating: with a lone `\r` our rows and tree-sitter's differ (see position.rs).
fn shift_point(point: Point, old_end: Point, new_end: Point) -> Point {
    if point.row == old_end.row {
        Point::new(
            new_end.row,
            (new_end.column + point.column).saturating_sub(old_end.column),
        )
    } else {
        Point::new(
            (point.row + new_end.row).saturating_sub(old_end.row),
            point.column,
        )
    }
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
    // One walk of the line finds both ends in every unit (most edits lie on one line).
    let (start, end) = position::locate_range(rope, range, encoding)?;
    let bytes = start.byte..end.byte;
    let (start_char, end_char) = (start.char, end.char);
    let (start_position, old_end_position) = (start.point, end.point);
    // Whether the edit leaves every line break where it was, shifted: no break in the new
    // text and no `\r` just before the edit (which could pair with a `\n` after it, or lose
    // one). Then the new end is on the start's row, without asking the rope. Only an edit at
    // the start of a line can follow a `\r`.
    let same_lines = !change.text.contains(['\n', '\r'])
        && (start.point.column > 0 || bytes.start == 0 || rope.byte(bytes.start - 1) != b'\r');
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

    /// Every node of a tree: its kind, bytes and points, depth first.
    fn nodes(tree: &Tree) -> Vec<(String, std::ops::Range<usize>, Point, Point)> {
        let mut out = Vec::new();
        let mut cursor = tree.walk();
        loop {
            let node = cursor.node();
            out.push((
                node.kind().to_string(),
                node.byte_range(),
                node.start_position(),
                node.end_position(),
            ));
            if cursor.goto_first_child() || cursor.goto_next_sibling() {
                continue;
            }
            loop {
                if !cursor.goto_parent() {
                    return out;
                }
                if cursor.goto_next_sibling() {
                    break;
                }
            }
        }
    }

    /// The document as it was before edits were merged: every change told to the tree on
    /// its own, at once.
    struct OneByOne {
        rope: Rope,
        tree: Tree,
        parser: Parser,
    }

    impl OneByOne {
        fn new(text: &str) -> Self {
            let mut parser = Parser::new();
            parser
                .set_language(&Language::Rust.grammar().unwrap())
                .unwrap();
            let tree = parser.parse(text, None).unwrap();
            OneByOne {
                rope: Rope::from_str(text),
                tree,
                parser,
            }
        }

        fn apply(&mut self, changes: &[TextChange]) -> Result<(), LineOutOfRange> {
            let mut staged = self.rope.clone();
            let mut edits = Vec::new();
            for change in changes {
                edits.push(apply_to_rope(&mut staged, change, PositionEncoding::Utf16)?.unwrap());
            }
            self.rope = staged;
            for edit in &edits {
                self.tree.edit(edit);
            }
            Ok(())
        }

        fn reparse(&mut self) -> &Tree {
            let rope = &self.rope;
            self.tree = self
                .parser
                .parse_with_options(&mut |b, _| read_chunk(rope, b), Some(&self.tree), None)
                .unwrap();
            &self.tree
        }
    }

    /// A xorshift generator: the same edits on every run.
    struct Random(u64);

    impl Random {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 11) as usize % n.max(1)
        }
    }

    /// Random editing the way people type: runs of characters at a cursor, backspaces,
    /// deletes, pasted lines, jumps elsewhere, now and then a didChange of several
    /// changes, some of them past the end (refused). `typed` is what may be typed.
    fn random_changes(
        rope: &Rope,
        cursor: &mut usize,
        random: &mut Random,
        typed: &[&str],
    ) -> Vec<TextChange> {
        let len = rope.len_bytes();
        *cursor = position::clamp_byte(rope, (*cursor).min(len));
        let at = |byte: usize| position::byte_to_position(rope, byte, PositionEncoding::Utf16);
        let prev_char = |byte: usize| position::clamp_byte(rope, byte.saturating_sub(1));
        let next_char = |byte: usize| {
            let c = rope.byte_to_char(byte);
            rope.char_to_byte((c + 1).min(rope.len_chars()))
        };
        let edit = |from: usize, to: usize, text: &str| TextChange {
            range: Some(Range::new(at(from), at(to))),
            text: text.to_string(),
        };
        match random.below(100) {
            0..=44 => {
                let text = typed[random.below(typed.len())];
                let change = edit(*cursor, *cursor, text);
                *cursor += text.len();
                vec![change]
            }
            45..=64 => {
                let from = prev_char(*cursor);
                let change = edit(from, *cursor, "");
                *cursor = from;
                vec![change]
            }
            65..=72 => vec![edit(*cursor, next_char(*cursor), "")],
            73..=80 => {
                *cursor = random.below(len + 1);
                vec![]
            }
            81..=88 => {
                let text = ["\n    ", "fn x() {}\n", "let é = \"😀\";", "}\n\n"][random.below(4)];
                let change = edit(*cursor, *cursor, text);
                *cursor += text.len();
                vec![change]
            }
            89..=93 => {
                let from = cursor.saturating_sub(random.below(30));
                let from = position::clamp_byte(rope, from);
                let change = edit(from, *cursor, "");
                *cursor = from;
                vec![change]
            }
            94..=97 => {
                // Several changes in one didChange, each in the text the one before left.
                let a = random.below(len + 1);
                let b = random.below(len + 1);
                let a = position::clamp_byte(rope, a);
                let b = position::clamp_byte(rope, b);
                vec![
                    edit(a, a, "x"),
                    edit(b.min(a), b.min(a), "{"),
                    edit(a, a, ""),
                ]
            }
            _ => {
                let past = Position::new(rope.len_lines() as u32 + 3, 0);
                vec![
                    edit(*cursor, *cursor, "y"),
                    TextChange {
                        range: Some(Range::new(past, past)),
                        text: "never".into(),
                    },
                ]
            }
        }
    }

    /// Edits merged before `Tree::edit` give, after the reparse, the tree that telling the
    /// tree each edit on its own gives: the same text, the same nodes at the same bytes and
    /// points, and the tree of a fresh parse when the text has no syntax error.
    fn merged_edits_give_the_same_tree(
        typed: &[&str],
        seeds: std::ops::Range<u64>,
        check_points: bool,
    ) {
        let start = "fn main() {\n    let a = 1;\n}\n\nstruct S {\n    x: u8,\n}\n";
        for seed in seeds {
            let mut random =
                Random(0x9e37_79b9_7f4a_7c15 ^ seed.wrapping_mul(0x2545_f491_4f6c_dd1d));
            let mut doc = Document::new(start, 1, Language::Rust, DEFAULT_MAX_SYNTAX_BYTES);
            doc.snapshot();
            let mut one_by_one = OneByOne::new(start);
            let mut cursor = 0;
            for step in 0..400 {
                let changes = random_changes(&one_by_one.rope, &mut cursor, &mut random, typed);
                let merged = doc.apply_changes(&changes, PositionEncoding::Utf16);
                let alone = one_by_one.apply(&changes);
                assert_eq!(merged.is_ok(), alone.is_ok(), "seed {seed} step {step}");
                assert_eq!(
                    doc.rope.to_string(),
                    one_by_one.rope.to_string(),
                    "seed {seed} step {step}"
                );
                if random.below(20) == 0 || step == 399 {
                    let tree = doc.tree().unwrap().clone();
                    let expected = one_by_one.reparse();
                    let (got, want) = (nodes(&tree), nodes(expected));
                    if check_points {
                        assert_eq!(
                            got,
                            want,
                            "seed {seed} step {step}: {:?}",
                            doc.rope.to_string()
                        );
                    } else {
                        let bytes = |n: &[(String, std::ops::Range<usize>, Point, Point)]| {
                            n.iter()
                                .map(|(k, r, _, _)| (k.clone(), r.clone()))
                                .collect::<Vec<_>>()
                        };
                        assert_eq!(bytes(&got), bytes(&want), "seed {seed} step {step}");
                    }
                    if !tree.root_node().has_error() {
                        assert_eq!(
                            tree.root_node().to_sexp(),
                            fresh_sexp(&doc),
                            "seed {seed} step {step}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn merged_edits_give_the_tree_of_edits_told_one_by_one() {
        merged_edits_give_the_same_tree(
            &["a", "_", "1", " ", ";", "{", "}", "(", ")", "é", "😀", "\n"],
            0..40,
            true,
        );
    }

    #[test]
    fn merged_edits_give_the_same_tree_around_carriage_returns() {
        // A lone `\r` is a line break to LSP and not to tree-sitter: points may differ from
        // a fresh parse's (position.rs), bytes may not.
        merged_edits_give_the_same_tree(
            &["a", " ", ";", "{", "}", "\r", "\n", "\r\n"],
            0..40,
            false,
        );
    }

    /// A merged edit says exactly where the text changed: outside it, the text before the
    /// first edit and after the last are the same bytes, and its points are where the rope
    /// puts its bytes (before the first edit for the old end, after the last for the new).
    #[test]
    fn a_merged_edit_covers_what_its_edits_changed_at_the_right_points() {
        let start = "fn main() {\n    let a = 1;\n}\n\nstruct S {\n    x: u8,\n}\n";
        let typed = ["a", " ", "é", "😀", "\n", "}"];
        let mut random = Random(0x1234_5678_9abc_def1);
        let mut rope = Rope::from_str(start);
        let mut cursor = 0;
        let mut merged_runs = 0;
        for _ in 0..3000 {
            let before = rope.clone();
            let mut after = rope.clone();
            let mut merged: Option<InputEdit> = None;
            for _ in 0..1 + random.below(6) {
                let changes = random_changes(&rope, &mut cursor, &mut random, &typed);
                let [change] = changes.as_slice() else {
                    continue;
                };
                let Ok(Some(edit)) = apply_to_rope(&mut rope, change, PositionEncoding::Utf16)
                else {
                    continue;
                };
                merged = match merged {
                    None => Some(edit),
                    Some(m) => match merge_edits(&m, &edit) {
                        Some(m) => Some(m),
                        // Apart: the run ends before this edit.
                        None => break,
                    },
                };
                after = rope.clone();
            }
            let Some(m) = merged else {
                continue;
            };
            merged_runs += 1;
            let (old, new) = (before.to_string(), after.to_string());
            assert_eq!(old[..m.start_byte], new[..m.start_byte]);
            assert_eq!(old[m.old_end_byte..], new[m.new_end_byte..]);
            assert_eq!(
                m.start_position,
                position::byte_to_point(&before, m.start_byte)
            );
            assert_eq!(
                m.old_end_position,
                position::byte_to_point(&before, m.old_end_byte)
            );
            assert_eq!(
                m.new_end_position,
                position::byte_to_point(&after, m.new_end_byte)
            );
        }
        assert!(merged_runs > 1000, "{merged_runs}");
    }

    #[test]
    fn typos_taken_back_leave_nothing_to_reparse() {
        let mut doc = Document::new(
            "fn a() {}\nfn b() {}\n",
            1,
            Language::Rust,
            DEFAULT_MAX_SYNTAX_BYTES,
        );
        doc.snapshot();
        for (line, col) in [(0, 3), (1, 9), (0, 0), (1, 4)] {
            doc.apply_changes(
                &[change(line, col, line, col, "é")],
                PositionEncoding::Utf16,
            )
            .unwrap();
            doc.apply_changes(
                &[change(line, col, line, col + 1, "")],
                PositionEncoding::Utf16,
            )
            .unwrap();
        }
        let snapshot = doc.snapshot();
        assert_eq!(doc.parses(), 1, "the text is the one parsed");
        assert_eq!(
            snapshot.tree.unwrap().root_node().to_sexp(),
            fresh_sexp(&doc)
        );
        // One that stays is parsed.
        doc.apply_changes(&[change(1, 4, 1, 4, "c")], PositionEncoding::Utf16)
            .unwrap();
        doc.apply_changes(&[change(0, 3, 0, 3, "x")], PositionEncoding::Utf16)
            .unwrap();
        doc.apply_changes(&[change(0, 3, 0, 4, "")], PositionEncoding::Utf16)
            .unwrap();
        let snapshot = doc.snapshot();
        assert_eq!(doc.parses(), 2);
        assert_eq!(
            snapshot.tree.unwrap().root_node().to_sexp(),
            fresh_sexp(&doc)
        );
        assert_eq!(doc.rope.to_string(), "fn a() {}\nfn bc() {}\n");
    }

    #[test]
    fn a_run_of_typing_is_one_edit_for_the_tree_and_a_typo_taken_back_is_none() {
        let mut doc = Document::new("fn a() {}\n", 1, Language::Rust, DEFAULT_MAX_SYNTAX_BYTES);
        doc.snapshot();
        for (col, ch) in (0u32..).zip("fn bc".chars()) {
            doc.apply_changes(
                &[change(1, col, 1, col, &ch.to_string())],
                PositionEncoding::Utf8,
            )
            .unwrap();
        }
        // Backspace the `c`, then type `() {}`.
        doc.apply_changes(&[change(1, 4, 1, 5, "")], PositionEncoding::Utf8)
            .unwrap();
        doc.apply_changes(&[change(1, 4, 1, 4, "() {}")], PositionEncoding::Utf8)
            .unwrap();
        let unsent = doc.unsent_edit.expect("one edit kept back");
        assert_eq!(
            (unsent.start_byte, unsent.old_end_byte, unsent.new_end_byte),
            (10, 10, 19)
        );
        assert_eq!(unsent.new_end_position, Point::new(1, 9));
        // An edit elsewhere sends it; a character typed there and taken back leaves nothing.
        doc.apply_changes(&[change(0, 3, 0, 3, "x")], PositionEncoding::Utf8)
            .unwrap();
        doc.apply_changes(&[change(0, 3, 0, 4, "")], PositionEncoding::Utf8)
            .unwrap();
        assert!(doc.unsent_edit.is_none());
        assert_eq!(doc.pending_edits, 9);
        assert_eq!(doc.tree().unwrap().root_node().to_sexp(), fresh_sexp(&doc));
        assert_eq!(doc.rope.to_string(), "fn a() {}\nfn b() {}");
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
