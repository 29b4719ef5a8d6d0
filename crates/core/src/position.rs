//! The one place where positions change units: LSP positions (line + offset in the
//! negotiated encoding), ropey char indices, byte offsets and tree-sitter points.
//!
//! Lines follow the LSP spec: `\n`, `\r\n` and a lone `\r` end a line (ropey is built
//! with `cr_lines` and without `unicode_lines`, so U+2028 and friends do not).
//!
//! Tree-sitter counts rows on `\n` only; the points we hand it are (LSP line, byte column)
//! and differ from its own only in documents with a lone `\r`. agentls never reads a
//! tree-sitter point back: every syntax answer is in bytes and converted here.
//!
//! Besides LSP positions, the units shown to people and the model live here too: 1-based
//! line and char column ([`byte_to_line_column`]), 1-based line numbers ([`display_line`],
//! [`display_lines`]), the lines a byte range covers, a line's bytes, and byte offsets
//! rounded to char boundaries in a rope or a `str`.
//!
//! Nothing here panics: a column past the end of a line clamps to the line end, a column
//! inside a multi-unit character rounds down to the character's start, a line past the
//! end of the document is an error the caller turns into InvalidParams (or, for hints such
//! as an editor state, the end of the document: the `_clamped` functions).
//!
//! A range whose end comes before its start is read two ways, each by its own function: an
//! edit's range ([`range_to_bytes`]) collapses to an empty range at its start, a hint's
//! range ([`range_to_bytes_clamped`], [`clamp_byte_range`]) is turned round, since a
//! selection made backwards covers the same text.

use lsp_types::{Position, PositionEncodingKind, Range};
use ropey::Rope;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PositionEncoding {
    Utf8,
    /// The LSP default when the client offers nothing.
    #[default]
    Utf16,
    Utf32,
}

impl PositionEncoding {
    /// Picks from the client's `general.positionEncodings`: utf-8 when offered (no
    /// conversion cost), else utf-16 (mandatory for every client), utf-32 only when it is
    /// the sole offer besides nothing we know.
    pub fn negotiate(offered: Option<&[PositionEncodingKind]>) -> PositionEncoding {
        let Some(offered) = offered else {
            return PositionEncoding::Utf16;
        };
        let has = |kind: &PositionEncodingKind| offered.iter().any(|o| o == kind);
        if has(&PositionEncodingKind::UTF8) {
            PositionEncoding::Utf8
        } else if has(&PositionEncodingKind::UTF16) || offered.is_empty() {
            PositionEncoding::Utf16
        } else if has(&PositionEncodingKind::UTF32) {
            PositionEncoding::Utf32
        } else {
            PositionEncoding::Utf16
        }
    }

    pub fn kind(self) -> PositionEncodingKind {
        match self {
            PositionEncoding::Utf8 => PositionEncodingKind::UTF8,
            PositionEncoding::Utf16 => PositionEncodingKind::UTF16,
            PositionEncoding::Utf32 => PositionEncodingKind::UTF32,
        }
    }
}

/// A line past the end of the document. The caller adds the uri.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineOutOfRange {
    pub position: Position,
    pub line_count: usize,
}

impl std::fmt::Display for LineOutOfRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "position {}:{} is past the end of the document ({} lines, last line {})",
            self.position.line,
            self.position.character,
            self.line_count,
            self.line_count.saturating_sub(1)
        )
    }
}

impl std::error::Error for LineOutOfRange {}

/// Number of lines as LSP counts them: a trailing line break starts an (empty) last line.
pub fn line_count(rope: &Rope) -> usize {
    rope.len_lines()
}

/// Char index of the end of `line`'s content, before its line break.
fn line_content_end_char(rope: &Rope, line: usize) -> usize {
    let start = rope.line_to_char(line);
    let slice = rope.line(line);
    let mut len = slice.len_chars();
    if len > 0 && slice.char(len - 1) == '\n' {
        len -= 1;
        if len > 0 && slice.char(len - 1) == '\r' {
            len -= 1;
        }
    } else if len > 0 && slice.char(len - 1) == '\r' {
        len -= 1;
    }
    start + len
}

/// LSP position → char index, clamped to the line's end.
pub fn position_to_char(
    rope: &Rope,
    position: Position,
    encoding: PositionEncoding,
) -> Result<usize, LineOutOfRange> {
    let line = position.line as usize;
    if line >= rope.len_lines() {
        return Err(LineOutOfRange {
            position,
            line_count: rope.len_lines(),
        });
    }
    let line_start = rope.line_to_char(line);
    let line_end = line_content_end_char(rope, line);
    let column = position.character as usize;
    let char_idx = match encoding {
        PositionEncoding::Utf32 => line_start.saturating_add(column),
        PositionEncoding::Utf8 => {
            let start_byte = rope.char_to_byte(line_start);
            let end_byte = rope.char_to_byte(line_end);
            // byte_to_char rounds a byte inside a character down to that character.
            rope.byte_to_char(start_byte.saturating_add(column).min(end_byte))
        }
        PositionEncoding::Utf16 => {
            let start_cu = rope.char_to_utf16_cu(line_start);
            let end_cu = rope.char_to_utf16_cu(line_end);
            // utf16_cu_to_char rounds the middle of a surrogate pair down to its char.
            rope.utf16_cu_to_char(start_cu.saturating_add(column).min(end_cu))
        }
    };
    Ok(char_idx.min(line_end))
}

/// LSP position → byte offset, clamped to the line's end.
pub fn position_to_byte(
    rope: &Rope,
    position: Position,
    encoding: PositionEncoding,
) -> Result<usize, LineOutOfRange> {
    position_to_char(rope, position, encoding).map(|c| rope.char_to_byte(c))
}

/// Char index → LSP position. An index past the end is treated as the end.
pub fn char_to_position(rope: &Rope, char_idx: usize, encoding: PositionEncoding) -> Position {
    let char_idx = char_idx.min(rope.len_chars());
    let line = rope.char_to_line(char_idx);
    let line_start = rope.line_to_char(line);
    let column = match encoding {
        PositionEncoding::Utf32 => char_idx - line_start,
        PositionEncoding::Utf8 => rope.char_to_byte(char_idx) - rope.char_to_byte(line_start),
        PositionEncoding::Utf16 => {
            rope.char_to_utf16_cu(char_idx) - rope.char_to_utf16_cu(line_start)
        }
    };
    Position::new(to_u32(line), to_u32(column))
}

/// Byte offset → LSP position. A byte inside a character rounds down to it; past the end
/// is the end.
pub fn byte_to_position(rope: &Rope, byte: usize, encoding: PositionEncoding) -> Position {
    let byte = byte.min(rope.len_bytes());
    char_to_position(rope, rope.byte_to_char(byte), encoding)
}

/// Byte range → LSP range.
pub fn byte_range_to_range(
    rope: &Rope,
    bytes: std::ops::Range<usize>,
    encoding: PositionEncoding,
) -> Range {
    Range::new(
        byte_to_position(rope, bytes.start, encoding),
        byte_to_position(rope, bytes.end, encoding),
    )
}

/// Where an LSP position is in a rope, in every unit an edit needs at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Located {
    pub byte: usize,
    pub char: usize,
    /// (LSP line, byte column): the tree-sitter point we report (see [`byte_to_point`]).
    pub point: tree_sitter::Point,
}

/// Columns beyond this are found by the rope's indexes, not by walking the line: a cursor
/// far into a minified line must not cost a walk of the megabyte before it.
const LONGEST_WALK: u32 = 4096;

/// An edit's LSP range → where its ends are, as [`range_to_bytes`] reads it (clamped to
/// the line ends, an end before the start collapsed onto the start, a line past the end an
/// error). A keystroke's range lies on one line: that line is found once and walked once
/// from its start, instead of asking the rope's indexes for each unit of each end.
pub fn locate_range(
    rope: &Rope,
    range: Range,
    encoding: PositionEncoding,
) -> Result<(Located, Located), LineOutOfRange> {
    let (start, end) = (range.start, range.end);
    let one_line = start.line == end.line;
    if start.character.max(end.character) > LONGEST_WALK || (!one_line && end.line < start.line) {
        let from = locate_by_index(rope, start, encoding)?;
        let to = locate_by_index(rope, end, encoding)?;
        return Ok((from, if to.byte > from.byte { to } else { from }));
    }
    if !one_line {
        let from = walk_line(rope, start, start.character, encoding)?.0;
        let to = walk_line(rope, end, end.character, encoding)?.0;
        return Ok(if to.byte > from.byte {
            (from, to)
        } else {
            (from, from)
        });
    }
    walk_line(rope, start, end.character.max(start.character), encoding)
}

/// [`locate_range`] for one end, by the rope's indexes (any column, in O(log n)).
fn locate_by_index(
    rope: &Rope,
    position: Position,
    encoding: PositionEncoding,
) -> Result<Located, LineOutOfRange> {
    let char = position_to_char(rope, position, encoding)?;
    let byte = rope.char_to_byte(char);
    let point = tree_sitter::Point::new(
        position.line as usize,
        byte - rope.line_to_byte(position.line as usize),
    );
    Ok(Located { byte, char, point })
}

/// Walks `at`'s line from its start: where column `at.character` and column `end` (not
/// before it) are, each clamped to the line's end and rounded down to the start of the
/// character it falls in (as [`position_to_char`]). The line's start is found in the chunk
/// that holds it, as the rope's own `line_to_byte` does, with its char index on the way.
fn walk_line(
    rope: &Rope,
    at: Position,
    end: u32,
    encoding: PositionEncoding,
) -> Result<(Located, Located), LineOutOfRange> {
    let line = at.line as usize;
    if line >= rope.len_lines() {
        return Err(LineOutOfRange {
            position: at,
            line_count: rope.len_lines(),
        });
    }
    let (chunk, chunk_byte, chunk_char, chunk_line) = rope.chunk_at_line_break(line);
    let offset = ropey::str_utils::line_to_byte_idx(chunk, line - chunk_line);
    let line_start = chunk_byte + offset;
    let here = |byte: usize, char: usize| Located {
        byte,
        char,
        point: tree_sitter::Point::new(line, byte - line_start),
    };
    let mut byte = line_start;
    let mut char = chunk_char + ropey::str_utils::byte_to_char_idx(chunk, offset);
    let mut units = 0usize;
    let (want_start, want_end) = (at.character as usize, end as usize);
    let mut start = None;
    let mut piece = &chunk[offset..];
    // The chunks after the first, fetched only for a line that goes on past it.
    let mut rest = None;
    loop {
        let bytes = piece.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let (len, width) = match bytes[i] {
                b'\n' | b'\r' => {
                    let at_end = here(byte, char);
                    return Ok((start.unwrap_or(at_end), at_end));
                }
                0..=0x7f => (1, 1),
                _ => {
                    let c = piece[i..].chars().next().unwrap_or_default();
                    let width = match encoding {
                        PositionEncoding::Utf8 => c.len_utf8(),
                        PositionEncoding::Utf16 => c.len_utf16(),
                        PositionEncoding::Utf32 => 1,
                    };
                    (c.len_utf8(), width)
                }
            };
            if start.is_none() && units + width > want_start {
                start = Some(here(byte, char));
            }
            if units + width > want_end {
                let at_end = here(byte, char);
                return Ok((start.unwrap_or(at_end), at_end));
            }
            units += width;
            i += len;
            byte += len;
            char += 1;
        }
        if byte >= rope.len_bytes() {
            break;
        }
        let chunks = rest.get_or_insert_with(|| rope.chunks_at_byte(byte).0);
        match chunks.next() {
            Some(next) => piece = next,
            None => break,
        }
    }
    let at_end = here(byte, char);
    Ok((start.unwrap_or(at_end), at_end))
}

/// LSP range → byte range, for an edit. An end before the start is an empty range at the
/// start; a line past the end is an error. Compare [`range_to_bytes_clamped`].
pub fn range_to_bytes(
    rope: &Rope,
    range: Range,
    encoding: PositionEncoding,
) -> Result<std::ops::Range<usize>, LineOutOfRange> {
    let start = position_to_byte(rope, range.start, encoding)?;
    let end = position_to_byte(rope, range.end, encoding)?;
    Ok(start..end.max(start))
}

/// LSP position → byte offset, for a hint that must never fail a request (an editor
/// state): as [`position_to_byte`], but a line past the end is the end of the document.
pub fn position_to_byte_clamped(
    rope: &Rope,
    position: Position,
    encoding: PositionEncoding,
) -> usize {
    position_to_byte(rope, position, encoding).unwrap_or_else(|_| rope.len_bytes())
}

/// LSP range → byte range, for a hint (an editor's selection, visible range or
/// diagnostic): each end as [`position_to_byte_clamped`], and an end before the start is
/// turned round, not collapsed as [`range_to_bytes`] does for an edit.
pub fn range_to_bytes_clamped(
    rope: &Rope,
    range: Range,
    encoding: PositionEncoding,
) -> std::ops::Range<usize> {
    let a = position_to_byte_clamped(rope, range.start, encoding);
    let b = position_to_byte_clamped(rope, range.end, encoding);
    a.min(b)..a.max(b)
}

/// A byte offset inside the rope, on the start of the char it falls in; past the end is
/// the end.
pub fn clamp_byte(rope: &Rope, byte: usize) -> usize {
    let byte = byte.min(rope.len_bytes());
    rope.char_to_byte(rope.byte_to_char(byte))
}

/// A byte range inside the rope, each end as [`clamp_byte`], turned round when its end
/// comes before its start (like [`range_to_bytes_clamped`]).
pub fn clamp_byte_range(rope: &Rope, range: &std::ops::Range<usize>) -> std::ops::Range<usize> {
    let start = clamp_byte(rope, range.start.min(range.end));
    let end = clamp_byte(rope, range.start.max(range.end));
    start..end
}

/// Byte offset → (line, column) as people and the model read them: both 1-based, the
/// column counted in chars, i.e. the utf-32 LSP position plus one on each side. A byte
/// inside a character rounds down to it; past the end is the end.
pub fn byte_to_line_column(rope: &Rope, byte: usize) -> (usize, usize) {
    let byte = byte.min(rope.len_bytes());
    let line = rope.byte_to_line(byte);
    let column = rope.byte_to_char(byte) - rope.line_to_char(line);
    (line + 1, column + 1)
}

/// The 0-based lines a byte range covers, end exclusive. The range's end is exclusive too,
/// so a range ending at the start of a line (a selection of whole lines) does not take that
/// line in; an empty (or reversed) range covers the line of its start. Offsets past the end
/// are the end.
pub fn byte_range_to_lines(rope: &Rope, range: &std::ops::Range<usize>) -> std::ops::Range<usize> {
    let start = range.start.min(rope.len_bytes());
    let end = range.end.min(rope.len_bytes());
    let first = rope.byte_to_line(start);
    let last = if end > start {
        rope.byte_to_line(end - 1)
    } else {
        first
    };
    first..last + 1
}

/// Byte range of `line`'s content, without its line break. A line past the end is the
/// empty range at the end of the document.
pub fn line_content_bytes(rope: &Rope, line: usize) -> std::ops::Range<usize> {
    if line >= rope.len_lines() {
        return rope.len_bytes()..rope.len_bytes();
    }
    rope.line_to_byte(line)..rope.char_to_byte(line_content_end_char(rope, line))
}

/// The largest char boundary of `s` at or before `index`; past the end is `s.len()`.
pub fn floor_char_boundary(s: &str, index: usize) -> usize {
    let mut i = index.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest char boundary of `s` at or after `index`; past the end is `s.len()`.
pub fn ceil_char_boundary(s: &str, index: usize) -> usize {
    let mut i = index.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// A 0-based line as shown to people and the model: 1-based.
pub fn display_line(line: usize) -> usize {
    line + 1
}

/// 0-based lines (end exclusive, as [`byte_range_to_lines`] gives them) as shown: `first-last`,
/// 1-based and inclusive.
pub fn display_lines(lines: &std::ops::Range<usize>) -> String {
    format!("{}-{}", lines.start + 1, lines.end)
}

/// Byte offset → ropey char index (what the rope's edits take); past the end is the end,
/// inside a character is that character.
pub fn byte_to_char(rope: &Rope, byte: usize) -> usize {
    rope.byte_to_char(byte.min(rope.len_bytes()))
}

/// Byte offset → its 0-based line; past the end is the last line.
pub fn byte_to_line(rope: &Rope, byte: usize) -> usize {
    rope.byte_to_line(byte.min(rope.len_bytes()))
}

/// The point `len` bytes after `start` on its row: where a text of `len` bytes without a
/// line break, inserted at `start`, ends.
pub fn point_after_on_row(start: tree_sitter::Point, len: usize) -> tree_sitter::Point {
    tree_sitter::Point::new(start.row, start.column + len)
}

/// Byte offset → the tree-sitter point we report for it: (LSP line, byte column).
pub fn byte_to_point(rope: &Rope, byte: usize) -> tree_sitter::Point {
    let byte = byte.min(rope.len_bytes());
    let line = rope.byte_to_line(byte);
    tree_sitter::Point::new(line, byte - rope.line_to_byte(line))
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use PositionEncoding::*;

    fn pos(line: u32, character: u32) -> Position {
        Position::new(line, character)
    }

    /// Round trip every char boundary of `text` through every encoding.
    fn assert_round_trips(text: &str) {
        let rope = Rope::from_str(text);
        for enc in [Utf8, Utf16, Utf32] {
            for c in 0..=rope.len_chars() {
                let p = char_to_position(&rope, c, enc);
                let back = position_to_char(&rope, p, enc).unwrap();
                // A char inside a CRLF pair (the \n) maps to the line end, i.e. the \r.
                let expected = if c > 0
                    && c < rope.len_chars()
                    && rope.char(c) == '\n'
                    && rope.char(c - 1) == '\r'
                {
                    c - 1
                } else {
                    c
                };
                assert_eq!(back, expected, "{enc:?} char {c} -> {p:?} in {text:?}");
            }
        }
    }

    /// `locate_range` is `range_to_bytes` with the char and the point of each end: every
    /// range of every line (and past them), in every encoding, around every kind of line
    /// break and multi-unit characters, on a short line and on one past `LONGEST_WALK`.
    #[test]
    fn locating_a_range_agrees_with_the_rope_indexes() {
        let long = "é".repeat(LONGEST_WALK as usize + 8);
        let texts = [
            String::new(),
            "a\r\nb\rc\nd".to_string(),
            "é😀x\n\n  \r\n😀".to_string(),
            "fn main() {}\n".to_string(),
            format!("x\n{long}😀y\nz"),
        ];
        for text in &texts {
            let rope = Rope::from_str(text);
            let mut columns: Vec<u32> = (0..12).collect();
            columns.extend([
                LONGEST_WALK - 1,
                LONGEST_WALK,
                LONGEST_WALK + 1,
                LONGEST_WALK + 9,
                u32::MAX,
            ]);
            let lines = rope.len_lines() as u32 + 1;
            for encoding in [Utf8, Utf16, Utf32] {
                for (l1, c1) in (0..lines).flat_map(|l| columns.iter().map(move |&c| (l, c))) {
                    for (l2, c2) in [
                        (l1, c1),
                        (l1, c1.saturating_add(1)),
                        (l1, c1.saturating_add(3)),
                        (l1, c1.saturating_sub(1)),
                        (l1 + 1, 0),
                        (l1 + 1, 2),
                        (l1.saturating_sub(1), 1),
                    ] {
                        let range = Range::new(pos(l1, c1), pos(l2, c2));
                        let want = range_to_bytes(&rope, range, encoding).map(|bytes| {
                            let at = |b: usize| Located {
                                byte: b,
                                char: rope.byte_to_char(b),
                                point: byte_to_point(&rope, b),
                            };
                            (at(bytes.start), at(bytes.end))
                        });
                        assert_eq!(
                            locate_range(&rope, range, encoding),
                            want,
                            "{text:?} {range:?} {encoding:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn negotiation_prefers_utf8_then_utf16() {
        use PositionEncodingKind as K;
        assert_eq!(PositionEncoding::negotiate(None), Utf16);
        assert_eq!(PositionEncoding::negotiate(Some(&[])), Utf16);
        assert_eq!(
            PositionEncoding::negotiate(Some(&[K::UTF16, K::UTF8])),
            Utf8
        );
        assert_eq!(
            PositionEncoding::negotiate(Some(&[K::UTF32, K::UTF16])),
            Utf16
        );
        assert_eq!(PositionEncoding::negotiate(Some(&[K::UTF32])), Utf32);
        assert_eq!(PositionEncoding::negotiate(Some(&[K::new("utf-7")])), Utf16);
    }

    #[test]
    fn ascii_is_the_same_in_every_encoding() {
        let rope = Rope::from_str("fn main() {}\nlet x = 1;\n");
        for enc in [Utf8, Utf16, Utf32] {
            assert_eq!(position_to_byte(&rope, pos(1, 4), enc).unwrap(), 17);
            assert_eq!(byte_to_position(&rope, 17, enc), pos(1, 4));
        }
    }

    #[test]
    fn emoji_takes_4_bytes_2_utf16_units_1_char() {
        // "a😀b": 😀 is U+1F600, outside the BMP.
        let rope = Rope::from_str("a😀b\n");
        assert_eq!(position_to_byte(&rope, pos(0, 3), Utf16).unwrap(), 5);
        assert_eq!(position_to_byte(&rope, pos(0, 5), Utf8).unwrap(), 5);
        assert_eq!(position_to_byte(&rope, pos(0, 2), Utf32).unwrap(), 5);
        assert_eq!(byte_to_position(&rope, 5, Utf16), pos(0, 3));
        assert_eq!(byte_to_position(&rope, 5, Utf8), pos(0, 5));
        assert_eq!(byte_to_position(&rope, 5, Utf32), pos(0, 2));
    }

    #[test]
    fn inside_a_surrogate_pair_or_a_utf8_sequence_rounds_down() {
        let rope = Rope::from_str("a😀b");
        // utf-16 unit 2 is the low surrogate of 😀: round down to the emoji's start.
        assert_eq!(position_to_byte(&rope, pos(0, 2), Utf16).unwrap(), 1);
        // utf-8 bytes 2..=4 are inside 😀.
        for b in 2..=4 {
            assert_eq!(position_to_byte(&rope, pos(0, b), Utf8).unwrap(), 1);
        }
        assert_eq!(byte_to_position(&rope, 3, Utf16), pos(0, 1));
    }

    #[test]
    fn cjk_is_3_bytes_1_utf16_unit() {
        let rope = Rope::from_str("中文x\n");
        assert_eq!(position_to_byte(&rope, pos(0, 2), Utf16).unwrap(), 6);
        assert_eq!(position_to_byte(&rope, pos(0, 6), Utf8).unwrap(), 6);
        assert_eq!(position_to_byte(&rope, pos(0, 2), Utf32).unwrap(), 6);
        assert_eq!(byte_to_position(&rope, 6, Utf16), pos(0, 2));
    }

    #[test]
    fn crlf_lines_and_past_the_end_of_a_line_clamps_before_the_break() {
        let rope = Rope::from_str("ab\r\ncd\r\n");
        assert_eq!(line_count(&rope), 3);
        assert_eq!(position_to_byte(&rope, pos(1, 0), Utf16).unwrap(), 4);
        // Past the end of line 0 clamps to before "\r\n", never into the break.
        assert_eq!(position_to_byte(&rope, pos(0, 2), Utf16).unwrap(), 2);
        assert_eq!(position_to_byte(&rope, pos(0, 3), Utf16).unwrap(), 2);
        assert_eq!(position_to_byte(&rope, pos(0, 999), Utf8).unwrap(), 2);
        assert_eq!(position_to_byte(&rope, pos(0, u32::MAX), Utf32).unwrap(), 2);
        // The empty last line after the final break.
        assert_eq!(position_to_byte(&rope, pos(2, 0), Utf16).unwrap(), 8);
        assert_eq!(position_to_byte(&rope, pos(2, 5), Utf16).unwrap(), 8);
        assert_eq!(byte_to_position(&rope, 8, Utf16), pos(2, 0));
    }

    #[test]
    fn lone_cr_ends_a_line_but_unicode_separators_do_not() {
        let rope = Rope::from_str("a\rb\u{2028}c\nd");
        assert_eq!(line_count(&rope), 3);
        assert_eq!(position_to_byte(&rope, pos(1, 0), Utf8).unwrap(), 2);
        assert_eq!(byte_to_position(&rope, 8, Utf8), pos(2, 0));
        assert_eq!(byte_to_position(&rope, 6, Utf16), pos(1, 2));
    }

    #[test]
    fn line_past_the_end_is_an_error_naming_the_position() {
        let rope = Rope::from_str("one\ntwo");
        let err = position_to_byte(&rope, pos(2, 0), Utf16).unwrap_err();
        assert_eq!(err.line_count, 2);
        assert_eq!(err.position, pos(2, 0));
        assert!(err.to_string().contains("2:0"), "{err}");
        assert!(position_to_byte(&rope, pos(u32::MAX, 0), Utf8).is_err());
        let empty = Rope::new();
        assert_eq!(position_to_byte(&empty, pos(0, 7), Utf16).unwrap(), 0);
        assert!(position_to_byte(&empty, pos(1, 0), Utf16).is_err());
    }

    #[test]
    fn bytes_and_chars_past_the_end_map_to_the_end() {
        let rope = Rope::from_str("ab\ncd");
        assert_eq!(byte_to_position(&rope, 1000, Utf16), pos(1, 2));
        assert_eq!(char_to_position(&rope, 1000, Utf32), pos(1, 2));
        assert_eq!(byte_to_point(&rope, 1000), tree_sitter::Point::new(1, 2));
    }

    #[test]
    fn reversed_range_is_empty_at_its_start() {
        let rope = Rope::from_str("hello world");
        let r = Range::new(pos(0, 6), pos(0, 2));
        assert_eq!(range_to_bytes(&rope, r, Utf16).unwrap(), 6..6);
    }

    #[test]
    fn tree_sitter_points_are_line_and_byte_column() {
        let rope = Rope::from_str("é\r\n😀x");
        assert_eq!(byte_to_point(&rope, 4), tree_sitter::Point::new(1, 0));
        assert_eq!(byte_to_point(&rope, 8), tree_sitter::Point::new(1, 4));
    }

    #[test]
    fn hint_positions_clamp_and_hint_ranges_turn_round() {
        let rope = Rope::from_str("hello\nworld");
        // A line past the end is the end of the document, not an error.
        assert_eq!(position_to_byte_clamped(&rope, pos(9, 0), Utf16), 11);
        assert_eq!(position_to_byte_clamped(&rope, pos(1, 2), Utf16), 8);
        // Reversed: turned round (a hint), where range_to_bytes collapses (an edit).
        let reversed = Range::new(pos(1, 2), pos(0, 1));
        assert_eq!(range_to_bytes_clamped(&rope, reversed, Utf16), 1..8);
        assert_eq!(range_to_bytes(&rope, reversed, Utf16).unwrap(), 8..8);
        let past = Range::new(pos(0, 3), pos(7, 0));
        assert_eq!(range_to_bytes_clamped(&rope, past, Utf16), 3..11);
        assert!(range_to_bytes(&rope, past, Utf16).is_err());
    }

    #[test]
    #[allow(clippy::reversed_empty_ranges)] // a reversed range is one of the cases
    fn byte_offsets_clamp_to_char_starts() {
        // "a😀b": 😀 is bytes 1..5.
        let rope = Rope::from_str("a😀b");
        let cases = [(0, 0), (1, 1), (2, 1), (4, 1), (5, 5), (6, 6), (99, 6)];
        for (byte, expected) in cases {
            assert_eq!(clamp_byte(&rope, byte), expected, "byte {byte}");
        }
        assert_eq!(clamp_byte_range(&rope, &(3..99)), 1..6);
        assert_eq!(clamp_byte_range(&rope, &(6..2)), 1..6);
        assert_eq!(clamp_byte_range(&rope, &(5..5)), 5..5);
    }

    #[test]
    fn line_column_is_one_based_in_chars() {
        let rope = Rope::from_str("a😀b\r\n中x\ry");
        // (byte, (line, column))
        let cases = [
            (0, (1, 1)),
            (1, (1, 2)),
            (3, (1, 2)),
            (5, (1, 3)),
            (6, (1, 4)),
            (7, (1, 5)),
            (8, (2, 1)),
            (11, (2, 2)),
            (12, (2, 3)),
            (13, (3, 1)),
            (14, (3, 2)),
            (99, (3, 2)),
        ];
        for (byte, expected) in cases {
            assert_eq!(byte_to_line_column(&rope, byte), expected, "byte {byte}");
            let utf32 = byte_to_position(&rope, byte, Utf32);
            assert_eq!(
                (utf32.line as usize + 1, utf32.character as usize + 1),
                expected
            );
        }
    }

    #[test]
    #[allow(clippy::reversed_empty_ranges)] // a reversed range is one of the cases
    fn lines_of_a_byte_range_leave_out_a_line_it_only_touches() {
        let rope = Rope::from_str("ab\ncd\nef");
        // (bytes, lines)
        let cases = [
            (0..0, 0..1),
            (0..2, 0..1),
            (0..3, 0..1),
            (0..4, 0..2),
            (3..6, 1..2),
            (2..7, 0..3),
            (4..2, 1..2),
            (7..99, 2..3),
            (99..99, 2..3),
        ];
        for (bytes, lines) in cases {
            assert_eq!(byte_range_to_lines(&rope, &bytes), lines, "{bytes:?}");
        }
    }

    #[test]
    fn line_content_leaves_out_every_kind_of_line_break() {
        let rope = Rope::from_str("ab\r\ncd\re\n\nf");
        let lines: Vec<_> = (0..=line_count(&rope))
            .map(|l| line_content_bytes(&rope, l))
            .collect();
        assert_eq!(lines, [0..2, 4..6, 7..8, 9..9, 10..11, 11..11]);
    }

    #[test]
    fn str_offsets_round_to_char_boundaries() {
        let s = "a😀b";
        // (index, floor, ceil)
        let cases = [
            (0, 0, 0),
            (1, 1, 1),
            (2, 1, 5),
            (4, 1, 5),
            (5, 5, 5),
            (6, 6, 6),
            (99, 6, 6),
        ];
        for (index, floor, ceil) in cases {
            assert_eq!(floor_char_boundary(s, index), floor, "floor {index}");
            assert_eq!(ceil_char_boundary(s, index), ceil, "ceil {index}");
        }
        assert_eq!(floor_char_boundary("", 3), 0);
    }

    #[test]
    fn round_trips_over_mixed_text() {
        assert_round_trips("");
        assert_round_trips("a😀b\r\n中文\rx\n\n🎉🎉\r\nend");
        assert_round_trips("\r\n\r\n");
        assert_round_trips("👨‍👩‍👧 family\u{2028}sep");
    }
}
