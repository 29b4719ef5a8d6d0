//! Rust items written inside macro invocations: `cfg_rt! { pub fn spawn… }`, `cfg_if!`'s
//! branches, a wrapper macro's `define_x! { pub struct Foo … }`. Tree-sitter gives such a
//! body as a flat token tree, so the items in it are found by parsing the body's text again
//! as Rust source and mapping the lines back (the body starts on its `{`'s line).
//!
//! Bounded: only bodies that spell an item keyword are parsed; nested invocations are
//! followed to [`MAX_DEPTH`]; the bytes parsed again stay under twice the file's size and
//! under [`MAX_REPARSED_BYTES`], so a re-index keeps its cost (a test file that is one
//! macro invocation, serde's `de.rs`, cost 2–3 times their parse without it).

use std::collections::HashSet;

use super::extract::{tags_of_tree, MacroBody};
use super::{Definition, FileTags, SymbolKind};
use crate::language::Language;

/// Macro invocations inside macro invocations followed (`cfg_rt! { cfg_net! { … } }`).
const MAX_DEPTH: usize = 3;
/// Bytes of macro bodies parsed again per file at most: the bodies that declare a crate's
/// API (`cfg_rt! { … }`) are small; a whole file inside one invocation is mostly tests.
const MAX_REPARSED_BYTES: usize = 32 * 1024;
/// Outer definitions looked back through for the one a body sits in.
const MAX_CONTAINER_LOOKBACK: usize = 64;

/// Adds the items (and the names, imports) of the macro bodies of a file to its tags.
pub(super) fn add_items(source: &[u8], bodies: &[MacroBody], tags: &mut FileTags) {
    let Some(grammar) = Language::Rust.grammar() else {
        return;
    };
    let mut parser = tree_sitter::Parser::new();
    if parser.set_language(&grammar).is_err() {
        return;
    }
    let mut budget = source.len().saturating_mul(2).min(MAX_REPARSED_BYTES);
    add_items_at(&mut parser, source, bodies, tags, 0, &mut budget);
    tags.definitions
        .sort_by_key(|d| (d.start_line, d.name_line));
}

fn add_items_at(
    parser: &mut tree_sitter::Parser,
    source: &[u8],
    bodies: &[MacroBody],
    tags: &mut FileTags,
    depth: usize,
    budget: &mut usize,
) {
    if depth >= MAX_DEPTH {
        return;
    }
    let containers = Containers::of(&tags.definitions);
    let mut found = FileTags {
        language: Language::Rust,
        definitions: Vec::new(),
        references: Vec::new(),
        imports: Vec::new(),
    };
    for body in bodies {
        let end = body.bytes.end.min(source.len()).saturating_sub(1);
        let start = (body.bytes.start + 1).min(end);
        let inner = &source[start..end];
        if inner.len() > *budget {
            continue;
        }
        *budget -= inner.len();
        let Some(tree) = parser.parse(inner, None) else {
            continue;
        };
        let (mut inner_tags, mut nested) = tags_of_tree(Language::Rust, inner, &tree);
        nested.extend(cfg_if_branches(inner));
        add_items_at(parser, inner, &nested, &mut inner_tags, depth + 1, budget);
        let container = containers.around(body.row);
        for definition in inner_tags.definitions {
            found
                .definitions
                .push(placed(definition, body.row, container));
        }
        for mut reference in inner_tags.references {
            reference.line += body.row;
            found.references.push(reference);
        }
        for import in inner_tags.imports {
            let names: Vec<&str> = import.names().collect();
            found.imports.push(super::Import::new(
                import.line + body.row,
                import.text(),
                &names,
            ));
        }
    }
    merge(tags, found);
}

/// `cfg_if!`'s body, `if #[cfg(…)] { items } else { items }`, is no item list: its
/// branches are, each parsed as a body of its own. Braces are counted as written (a brace
/// in a string of such a body is rare enough to miss).
fn cfg_if_branches(inner: &[u8]) -> Vec<MacroBody> {
    let mut branches = Vec::new();
    if !inner.trim_ascii_start().starts_with(b"if #[") {
        return branches;
    }
    let (mut depth, mut row, mut open) = (0usize, 0u32, (0usize, 0u32));
    for (i, b) in inner.iter().enumerate() {
        match b {
            b'\n' => row += 1,
            b'{' => {
                if depth == 0 {
                    open = (i, row);
                }
                depth += 1;
            }
            b'}' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    branches.push(MacroBody {
                        bytes: open.0..i + 1,
                        row: open.1,
                    });
                }
            }
            _ => {}
        }
    }
    branches
}

/// A definition of a body moved to the file's lines, inside the outer definition around
/// the invocation (a function in an impl's body is a method).
fn placed(definition: Definition, row: u32, container: Option<(&str, SymbolKind)>) -> Definition {
    let mut parts = definition.to_parts();
    parts.start_line += row;
    parts.end_line += row;
    parts.name_line += row;
    if let (None, Some((name, kind))) = (&parts.container, container) {
        parts.container = Some(name.to_string());
        if parts.kind == SymbolKind::Function
            && matches!(kind, SymbolKind::Impl | SymbolKind::Trait)
        {
            parts.kind = SymbolKind::Method;
        }
    }
    Definition::from(parts)
}

/// Adds what the bodies hold, each thing once (a `cfg_if!` branch is read twice: in its
/// body and alone): their definitions; their references, each (name, line) once, and not
/// the names the bodies define (the file's own walk saw `Foo` of `struct Foo` in the token
/// tree as a use); their imports.
fn merge(tags: &mut FileTags, found: FileTags) {
    let known: HashSet<(String, u32)> = tags
        .definitions
        .iter()
        .map(|d| (d.name().to_string(), d.name_line))
        .collect();
    let definitions: Vec<Definition> = found
        .definitions
        .into_iter()
        .filter(|d| !known.contains(&(d.name().to_string(), d.name_line)))
        .collect();
    let defined: HashSet<(&str, u32)> = definitions
        .iter()
        .map(|d| (d.name(), d.name_line))
        .collect();
    tags.references
        .retain(|r| !defined.contains(&(r.name.as_str(), r.line)));
    let mut seen: HashSet<(String, u32)> = tags
        .references
        .iter()
        .map(|r| (r.name.clone(), r.line))
        .collect();
    for reference in found.references {
        if seen.insert((reference.name.clone(), reference.line)) {
            tags.references.push(reference);
        }
    }
    tags.definitions.extend(definitions);
    let mut imported: HashSet<(u32, String)> = tags
        .imports
        .iter()
        .map(|i| (i.line, i.text().to_string()))
        .collect();
    for import in found.imports {
        if imported.insert((import.line, import.text().to_string())) {
            tags.imports.push(import);
        }
    }
    tags.imports.sort_by_key(|i| i.line);
}

/// The outer definitions a macro body can sit in (impls, traits, modules), by first line.
struct Containers<'d> {
    spans: Vec<(u32, u32, &'d str, SymbolKind)>,
}

impl<'d> Containers<'d> {
    fn of(definitions: &'d [Definition]) -> Containers<'d> {
        let mut spans: Vec<_> = definitions
            .iter()
            .filter(|d| {
                matches!(
                    d.kind,
                    SymbolKind::Impl | SymbolKind::Trait | SymbolKind::Module
                )
            })
            .map(|d| (d.start_line, d.end_line, d.name(), d.kind))
            .collect();
        spans.sort_by_key(|s| s.0);
        Containers { spans }
    }

    /// The innermost one spanning `row`: the latest to start before it that still spans
    /// it (they nest), looked for among the few before it.
    fn around(&self, row: u32) -> Option<(&'d str, SymbolKind)> {
        let before = self.spans.partition_point(|s| s.0 <= row);
        self.spans[..before]
            .iter()
            .rev()
            .take(MAX_CONTAINER_LOOKBACK)
            .find(|s| s.1 >= row)
            .map(|s| (s.2, s.3))
    }
}
