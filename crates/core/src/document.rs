//! One open document: its text as a rope and its syntax tree, kept in step by incremental
//! edits (`InputEdit` + reparse with the old tree). Pure data: no IO, no LSP transport.

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
        let mut doc = Document {
            version,
            language,
            rope: Rope::from_str(text),
            tree: None,
            parser,
            max_syntax_bytes,
        };
        doc.reparse(false);
        doc
    }

    /// Frees the syntax tree (memory): the next change or `ensure_tree` parses again.
    pub fn drop_tree(&mut self) {
        self.tree = None;
    }

    /// Parses from scratch when the tree was dropped (or never made).
    pub fn ensure_tree(&mut self) {
        if self.tree.is_none() {
            self.reparse(false);
        }
    }

    pub fn rope(&self) -> &Rope {
        &self.rope
    }

    pub fn tree(&self) -> Option<&Tree> {
        self.tree.as_ref()
    }

    pub fn snapshot(&self) -> DocumentSnapshot {
        DocumentSnapshot {
            version: self.version,
            language: self.language,
            rope: self.rope.clone(),
            tree: self.tree.clone(),
        }
    }

    /// Applies the changes of one didChange in order, then reparses once. All ranges are
    /// checked against the text they apply to before anything changes, so a bad change
    /// leaves the document exactly as it was.
    pub fn apply_changes(
        &mut self,
        changes: &[TextChange],
        encoding: PositionEncoding,
    ) -> Result<(), LineOutOfRange> {
        let mut staged = self.rope.clone();
        let mut edits = Vec::with_capacity(changes.len());
        for change in changes {
            edits.push(apply_to_rope(&mut staged, change, encoding)?);
        }
        self.rope = staged;
        if edits.iter().any(Option::is_none) {
            // A whole-document replacement: nothing of the old tree is reusable.
            self.tree = None;
        } else if let Some(tree) = self.tree.as_mut() {
            for edit in edits.iter().flatten() {
                tree.edit(edit);
            }
        }
        self.reparse(true);
        Ok(())
    }

    fn reparse(&mut self, incremental: bool) {
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
    let bytes = position::range_to_bytes(rope, range, encoding)?;
    let start_char = rope.byte_to_char(bytes.start);
    let end_char = rope.byte_to_char(bytes.end);
    let start_position = position::byte_to_point(rope, bytes.start);
    let old_end_position = position::byte_to_point(rope, bytes.end);
    rope.remove(start_char..end_char);
    rope.insert(start_char, &change.text);
    let new_end_byte = bytes.start + change.text.len();
    Ok(Some(InputEdit {
        start_byte: bytes.start,
        old_end_byte: bytes.end,
        new_end_byte,
        start_position,
        old_end_position,
        new_end_position: position::byte_to_point(rope, new_end_byte),
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
        let tree = doc.tree().unwrap();
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
        let doc = Document::new("hello", 1, Language::PlainText, DEFAULT_MAX_SYNTAX_BYTES);
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
