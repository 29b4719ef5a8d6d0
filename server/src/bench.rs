//! `agentls bench keystroke`: the keystroke path measured against its floor.
//!
//! The same single-character edits spread over a generated Rust file go (a) through the
//! document core (LSP position conversion, staged rope edit, `InputEdit`, incremental
//! reparse) and (b) through a bare ropey `Rope` + tree-sitter reparse with the edit
//! computed by hand. The ratio (a)/(b) is the overhead of the core.

use crate::document::{read_chunk, Document, TextChange, DEFAULT_MAX_SYNTAX_BYTES};
use crate::language::Language;
use crate::position::PositionEncoding;
use ropey::Rope;
use std::time::{Duration, Instant};
use tower_lsp::lsp_types::{Position, Range};
use tree_sitter::{InputEdit, Parser, Point};

pub struct KeystrokeOptions {
    pub lines: usize,
    pub edits: usize,
    pub rounds: usize,
}

impl Default for KeystrokeOptions {
    fn default() -> Self {
        KeystrokeOptions {
            lines: 10_000,
            edits: 10_000,
            rounds: 5,
        }
    }
}

pub struct KeystrokeReport {
    pub file_bytes: usize,
    pub core: Duration,
    pub bare: Duration,
}

/// A Rust file of about `lines` lines: structs, impls, functions, comments.
pub fn generate_rust(lines: usize) -> String {
    let mut out = String::with_capacity(lines * 32);
    let mut n = 0;
    while out.lines().count() < lines {
        out.push_str(&format!(
            "/// Item number {n}.\npub struct Item{n} {{\n    id: u64,\n    name: String,\n}}\n\n\
             impl Item{n} {{\n    pub fn new(id: u64) -> Self {{\n        let name = format!(\"item-{{}}\", id);\n        \
             Self {{ id, name }}\n    }}\n\n    pub fn score(&self) -> u64 {{\n        \
             self.id.wrapping_mul({n}).rotate_left(3) + self.name.len() as u64\n    }}\n}}\n\n"
        ));
        n += 1;
    }
    out
}

/// Deterministic edit positions: (line, column) where each edit inserts one character.
/// Insertions only lengthen lines, so positions chosen up front stay valid.
fn edit_positions(text: &str, edits: usize) -> Vec<(usize, usize)> {
    let line_lengths: Vec<usize> = text.lines().map(str::len).collect();
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    (0..edits)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let line = (seed as usize) % line_lengths.len();
            let column = ((seed >> 32) as usize) % (line_lengths[line] + 1);
            (line, column)
        })
        .collect()
}

const TYPED: &[u8] = b"a_1 ";

fn run_core(text: &str, positions: &[(usize, usize)]) -> (Duration, String) {
    let mut doc = Document::new(text, 0, Language::Rust, DEFAULT_MAX_SYNTAX_BYTES);
    let started = Instant::now();
    for (i, &(line, column)) in positions.iter().enumerate() {
        let p = Position::new(line as u32, column as u32);
        let change = TextChange {
            range: Some(Range::new(p, p)),
            text: (TYPED[i % TYPED.len()] as char).to_string(),
        };
        if let Err(err) = doc.apply_changes(std::slice::from_ref(&change), PositionEncoding::Utf16)
        {
            panic!("bench edit {i} failed: {err}");
        }
    }
    (started.elapsed(), doc.rope().to_string())
}

fn run_bare(text: &str, positions: &[(usize, usize)]) -> (Duration, String) {
    let mut rope = Rope::from_str(text);
    let mut parser = Parser::new();
    let grammar = Language::Rust.grammar().expect("rust grammar");
    parser.set_language(&grammar).expect("load rust grammar");
    let mut tree = parser.parse(text, None).expect("parse");
    let started = Instant::now();
    for (i, &(line, column)) in positions.iter().enumerate() {
        let char_idx = rope.line_to_char(line) + column;
        let byte = rope.char_to_byte(char_idx);
        rope.insert_char(char_idx, TYPED[i % TYPED.len()] as char);
        tree.edit(&InputEdit {
            start_byte: byte,
            old_end_byte: byte,
            new_end_byte: byte + 1,
            start_position: Point::new(line, column),
            old_end_position: Point::new(line, column),
            new_end_position: Point::new(line, column + 1),
        });
        let r = &rope;
        tree = parser
            .parse_with_options(&mut |b, _| read_chunk(r, b), Some(&tree), None)
            .expect("reparse");
    }
    (started.elapsed(), rope.to_string())
}

pub fn keystroke(options: &KeystrokeOptions) -> KeystrokeReport {
    let text = generate_rust(options.lines);
    let positions = edit_positions(&text, options.edits);
    let mut core_times = Vec::new();
    let mut bare_times = Vec::new();
    for round in 0..options.rounds.max(1) {
        // Alternate the order so neither side always runs second, on a warm cache.
        let ((bare, bare_text), (core, core_text)) = if round % 2 == 0 {
            (run_bare(&text, &positions), run_core(&text, &positions))
        } else {
            let core = run_core(&text, &positions);
            (run_bare(&text, &positions), core)
        };
        assert_eq!(
            core_text, bare_text,
            "both paths must produce the same text"
        );
        core_times.push(core);
        bare_times.push(bare);
    }
    core_times.sort();
    bare_times.sort();
    KeystrokeReport {
        file_bytes: text.len(),
        core: core_times[core_times.len() / 2],
        bare: bare_times[bare_times.len() / 2],
    }
}

pub fn print_keystroke(options: &KeystrokeOptions, report: &KeystrokeReport) {
    let per = |d: Duration| d.as_secs_f64() * 1e6 / options.edits.max(1) as f64;
    println!(
        "keystroke: {} edits over a {}-line Rust file ({} bytes), median of {} rounds",
        options.edits,
        options.lines,
        report.file_bytes,
        options.rounds.max(1)
    );
    println!(
        "  document core (positions + rope + InputEdit + incremental reparse): {:>8.1} ms total, {:>7.1} µs/edit",
        report.core.as_secs_f64() * 1e3,
        per(report.core)
    );
    println!(
        "  bare ropey Rope + tree-sitter reparse:                              {:>8.1} ms total, {:>7.1} µs/edit",
        report.bare.as_secs_f64() * 1e3,
        per(report.bare)
    );
    println!(
        "  core / bare: {:.2}x (goal: at most 3x)",
        report.core.as_secs_f64() / report.bare.as_secs_f64().max(f64::MIN_POSITIVE)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_file_has_the_requested_lines_and_parses_cleanly() {
        let text = generate_rust(200);
        assert!(text.lines().count() >= 200);
        let doc = Document::new(&text, 0, Language::Rust, DEFAULT_MAX_SYNTAX_BYTES);
        assert!(!doc.tree().unwrap().root_node().has_error());
    }

    #[test]
    fn both_paths_apply_the_same_edits() {
        let text = generate_rust(50);
        let positions = edit_positions(&text, 200);
        let (_, core) = run_core(&text, &positions);
        let (_, bare) = run_bare(&text, &positions);
        assert_eq!(core, bare);
        assert_eq!(core.len(), text.len() + 200);
    }
}
