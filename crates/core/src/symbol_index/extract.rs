//! Tags of one file from its syntax tree: the definitions (from the outline, with their
//! header, doc comment and small bodies' fields), the names it refers to and its imports.
//!
//! One cursor walk over the tree for the references, one for the nodes of the definitions
//! the outline found; no lookup starts again from the root, so a file costs time linear in
//! its size however deeply it nests (issue 41: a lookup per definition from the root made a
//! file of nested modules quadratic). Every text kept is bounded, so a file of huge lines
//! costs bounded memory.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use tree_sitter::{Node, Tree};

use super::{Definition, DefinitionParts, FileTags, Import, Reference};
use crate::language::Language;
use crate::syntax::{self, Symbol, SymbolKind};

/// Longest signature kept, in bytes (cut at a character boundary).
pub const MAX_SIGNATURE_BYTES: usize = 200;
/// Longest doc comment (with attributes or decorators) kept.
pub const MAX_DOC_BYTES: usize = 240;
/// A type with more fields than this is not small: its fields are not kept.
pub const MAX_FIELDS: usize = 16;
pub(crate) const MAX_FIELD_BYTES: usize = 100;
const MAX_IMPORT_BYTES: usize = 200;

/// A macro invocation's token tree: its bytes (delimiters included) and first line.
#[derive(Debug, Clone)]
pub(super) struct MacroBody {
    pub bytes: Range<usize>,
    pub row: u32,
}

/// The tags the file's own tree shows, and its macro invocations' bodies.
pub(super) fn tags_of_tree(
    language: Language,
    source: &[u8],
    tree: &Tree,
) -> (FileTags, Vec<MacroBody>) {
    let mut tags = FileTags {
        language,
        definitions: Vec::new(),
        references: Vec::new(),
        imports: Vec::new(),
    };
    let Some(family) = Family::of(language) else {
        return (tags, Vec::new());
    };
    let outline = syntax::outline(language, source, tree);
    let newlines: Vec<usize> = source
        .iter()
        .enumerate()
        .filter_map(|(i, b)| (*b == b'\n').then_some(i))
        .collect();
    let mut name_starts = HashSet::new();
    let mut symbols: Vec<(&Symbol, Option<&str>)> = Vec::new();
    let mut stack: Vec<(&Symbol, Option<&str>)> = outline.iter().rev().map(|s| (s, None)).collect();
    while let Some((symbol, container)) = stack.pop() {
        name_starts.insert(symbol.selection_range.start);
        symbols.push((symbol, container));
        stack.extend(
            symbol
                .children
                .iter()
                .rev()
                .map(|child| (child, Some(symbol.name.as_str()))),
        );
    }
    let names: Vec<Range<usize>> = symbols
        .iter()
        .map(|(symbol, _)| symbol.selection_range.clone())
        .collect();
    let nodes = definition_nodes(tree, &names);
    for ((symbol, container), nodes) in symbols.into_iter().zip(nodes) {
        let nodes = nodes.or_else(|| nodes_from_root(tree, &symbol.selection_range));
        tags.definitions.push(definition(
            family, source, &newlines, symbol, container, nodes,
        ));
    }
    tags.definitions
        .sort_by_key(|d| (d.start_line, d.name_line));
    let bodies = references_and_imports(family, source, tree, &name_starts, &mut tags);
    (tags, bodies)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Rust,
    Python,
    Script,
    Go,
}

impl Family {
    fn of(language: Language) -> Option<Family> {
        match language {
            Language::Rust => Some(Family::Rust),
            Language::Python => Some(Family::Python),
            Language::TypeScript | Language::Tsx | Language::JavaScript => Some(Family::Script),
            Language::Go => Some(Family::Go),
            Language::PlainText => None,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Definitions
// ---------------------------------------------------------------------------------------

fn definition(
    family: Family,
    source: &[u8],
    newlines: &[usize],
    symbol: &Symbol,
    container: Option<&str>,
    nodes: Option<DefinitionNodes>,
) -> Definition {
    let start_line = line_of(newlines, symbol.range.start);
    let end_line = line_of(newlines, symbol.range.end.saturating_sub(1)).max(start_line);
    let name_line = nodes.map_or(start_line, |n| n.name.start_position().row as u32);
    let (signature, doc, fields) = match nodes {
        Some(nodes) => (
            signature(family, source, symbol, nodes.node),
            doc(family, source, &nodes),
            fields(family, source, symbol.kind, nodes.node),
        ),
        None => (String::new(), String::new(), Vec::new()),
    };
    Definition::from(DefinitionParts {
        name: symbol.name.clone(),
        kind: symbol.kind,
        container: container.map(str::to_string),
        start_line,
        end_line,
        name_line,
        signature,
        doc,
        fields,
    })
}

/// The nodes a definition's parts are read from.
#[derive(Debug, Clone, Copy)]
struct DefinitionNodes<'t> {
    name: Node<'t>,
    /// The definition's own node: the name's parent (an impl's is the type's parent; a Go
    /// constant's is its const_spec).
    node: Node<'t>,
    /// The definition with the wrappers that hold only it (`export`, a decorated
    /// definition, a declaration keyword): its doc comment sits before that.
    outer: Node<'t>,
    /// The first of the comments, attributes and decorators just before `outer`.
    doc_start: Option<Node<'t>>,
}

/// The comments, attributes and decorators seen so far among a node's children, when the
/// latest children are such and touch each other (a blank line ends a doc).
#[derive(Default)]
struct DocRun<'t> {
    first: Option<Node<'t>>,
    last_end_row: usize,
}

impl<'t> DocRun<'t> {
    fn follow(&mut self, sibling: Node<'t>) {
        if !is_doc_kind(sibling.kind()) {
            self.first = None;
            return;
        }
        let touches = self.last_end_row + 1 >= sibling.start_position().row;
        if self.first.is_none() || !touches {
            self.first = Some(sibling);
        }
        self.last_end_row = sibling.end_position().row;
    }

    /// The run's first node, when the run touches `next`.
    fn before(&self, next: Node<'t>) -> Option<Node<'t>> {
        self.first
            .filter(|_| self.last_end_row + 1 >= next.start_position().row)
    }
}

fn is_doc_kind(kind: &str) -> bool {
    matches!(
        kind,
        "line_comment" | "block_comment" | "comment" | "attribute_item" | "decorator"
    )
}

/// A node on the walk's path from the root, with the doc run of its children so far.
struct Level<'t> {
    node: Node<'t>,
    run: DocRun<'t>,
}

/// The nodes of each name (by its byte range), in one walk of the tree: the deepest node
/// spanning exactly the range is the name, as `descendant_for_byte_range` would find it,
/// and its parent, wrappers and preceding siblings are read off the walk's path instead of
/// being searched for from the root. None for a range no node spans exactly.
fn definition_nodes<'t>(
    tree: &'t Tree,
    names: &[Range<usize>],
) -> Vec<Option<DefinitionNodes<'t>>> {
    let mut found = vec![None; names.len()];
    let mut wanted: HashMap<(usize, usize), Vec<usize>> = HashMap::new();
    for (i, range) in names.iter().enumerate() {
        wanted.entry((range.start, range.end)).or_default().push(i);
    }
    if wanted.is_empty() {
        return found;
    }
    let mut cursor = tree.walk();
    // The ancestors of the cursor's node, innermost last.
    let mut levels: Vec<Level<'t>> = Vec::new();
    loop {
        let node = cursor.node();
        if let Some(slots) = wanted.get(&(node.start_byte(), node.end_byte())) {
            if let Some(nodes) = nodes_on_path(node, &levels) {
                for slot in slots {
                    found[*slot] = Some(nodes);
                }
            }
        }
        if cursor.goto_first_child() {
            levels.push(Level {
                node,
                run: DocRun::default(),
            });
            continue;
        }
        loop {
            if let Some(parent) = levels.last_mut() {
                parent.run.follow(cursor.node());
            }
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return found;
            }
            levels.pop();
        }
    }
}

/// A name's nodes from the path of its ancestors (the innermost last).
fn nodes_on_path<'t>(name: Node<'t>, levels: &[Level<'t>]) -> Option<DefinitionNodes<'t>> {
    let mut at = levels.len().checked_sub(1)?;
    let node = levels[at].node;
    while at > 0 && is_wrapper(levels[at - 1].node.kind()) {
        at -= 1;
    }
    let outer = levels[at].node;
    let doc_start = at
        .checked_sub(1)
        .and_then(|parent| levels[parent].run.before(outer));
    Some(DefinitionNodes {
        name,
        node,
        outer,
        doc_start,
    })
}

/// A name's nodes found from the root, for a name the walk did not meet (a range no node
/// spans exactly): costs the tree's depth, where the walk costs nothing more.
fn nodes_from_root<'t>(tree: &'t Tree, name: &Range<usize>) -> Option<DefinitionNodes<'t>> {
    let name = tree
        .root_node()
        .descendant_for_byte_range(name.start, name.end)?;
    let node = name.parent()?;
    let mut outer = node;
    while let Some(parent) = outer.parent() {
        if !is_wrapper(parent.kind()) {
            break;
        }
        outer = parent;
    }
    let mut doc_start = None;
    let mut line = outer.start_position().row;
    let mut sibling = outer.prev_sibling();
    while let Some(prev) = sibling {
        // Only what touches the definition: a blank line ends its doc.
        if !is_doc_kind(prev.kind()) || prev.end_position().row + 1 < line {
            break;
        }
        line = prev.start_position().row;
        doc_start = Some(prev);
        sibling = prev.prev_sibling();
    }
    Some(DefinitionNodes {
        name,
        node,
        outer,
        doc_start,
    })
}

/// The 0-based line of a byte: `newlines` holds the offset of every '\n' in the source.
fn line_of(newlines: &[usize], byte: usize) -> u32 {
    newlines.partition_point(|&n| n < byte) as u32
}

/// The definition's header: from its first line that is not a decorator or attribute to the
/// start of its body (or its end), on one line, bounded.
fn signature(family: Family, source: &[u8], symbol: &Symbol, node: Node) -> String {
    let end = body_start(node)
        .unwrap_or(node.end_byte())
        .min(source.len());
    let mut start = symbol.range.start.min(end);
    // Python's decorators and TypeScript's are part of the outline's range; the name's line
    // is where the header starts.
    loop {
        let line_end = source[start..end]
            .iter()
            .position(|b| *b == b'\n')
            .map(|i| start + i + 1);
        let Some(line_end) = line_end else { break };
        let line = trim_ascii(&source[start..line_end]);
        let leading = line.starts_with(b"@") || line.starts_with(b"#[") || line.starts_with(b"//");
        if !leading || line_end > symbol.selection_range.start {
            break;
        }
        start = line_end;
    }
    let text = String::from_utf8_lossy(&source[start..end]);
    // A comment between the header and the body (Python's `def f():  # why`) is not header.
    let header: Vec<&str> = text
        .lines()
        .enumerate()
        .filter(|(i, line)| {
            let line = line.trim_start();
            *i == 0
                || !(line.starts_with("//") || (family == Family::Python && line.starts_with('#')))
        })
        .map(|(_, line)| line)
        .collect();
    let collapsed = header
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    bounded(
        collapsed.trim_end_matches(['{', '=']).trim_end(),
        MAX_SIGNATURE_BYTES,
    )
}

/// Where the body of a definition begins: its block, field list or class body.
fn body_start(node: Node) -> Option<usize> {
    if let Some(body) = node.child_by_field_name("body") {
        return Some(body.start_byte());
    }
    // `const f = () => {…}` and Go's `type T struct {…}`: the body is one level down.
    for field in ["value", "type"] {
        if let Some(inner) = node.child_by_field_name(field) {
            if let Some(body) = inner.child_by_field_name("body") {
                return Some(body.start_byte());
            }
            let mut cursor = inner.walk();
            let list = inner.named_children(&mut cursor).find(|c| {
                matches!(
                    c.kind(),
                    "field_declaration_list" | "method_spec_list" | "class_body"
                )
            });
            if let Some(list) = list {
                return Some(list.start_byte());
            }
        }
    }
    None
}

/// Kinds that wrap exactly one definition: its doc comment sits before the wrapper.
fn is_wrapper(kind: &str) -> bool {
    matches!(
        kind,
        "export_statement"
            | "decorated_definition"
            | "type_declaration"
            | "const_declaration"
            | "lexical_declaration"
            | "variable_declaration"
            | "ambient_declaration"
            | "variable_declarator"
            | "const_spec"
    )
}

/// The comments, attributes and decorators just before the definition (and Python's
/// docstring), as written, bounded.
fn doc(family: Family, source: &[u8], nodes: &DefinitionNodes) -> String {
    let (node, outer) = (nodes.node, nodes.outer);
    // Decorators inside the wrapper come before the definition.
    let own_start = node.start_byte();
    let mut text = match nodes.doc_start {
        Some(first) => {
            String::from_utf8_lossy(&source[first.start_byte()..outer.start_byte()]).into_owned()
        }
        None => String::new(),
    };
    if outer.kind() == "decorated_definition" && outer.start_byte() < own_start {
        text.push_str(&String::from_utf8_lossy(
            &source[outer.start_byte()..own_start],
        ));
    }
    if family == Family::Python {
        if let Some(docstring) = python_docstring(source, node) {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&docstring);
        }
    }
    let text: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    bounded(&text.join("\n"), MAX_DOC_BYTES)
}

fn python_docstring(source: &[u8], node: Node) -> Option<String> {
    let body = node.child_by_field_name("body")?;
    let first = body.named_child(0)?;
    if first.kind() != "expression_statement" {
        return None;
    }
    let string = first.named_child(0)?;
    (string.kind() == "string").then(|| {
        let end = string
            .end_byte()
            .min(string.start_byte() + MAX_DOC_BYTES * 2);
        String::from_utf8_lossy(&source[string.start_byte()..end]).into_owned()
    })
}

/// A small type's fields or variants, each on one line; empty for a type with many.
fn fields(family: Family, source: &[u8], kind: SymbolKind, node: Node) -> Vec<String> {
    if !matches!(
        kind,
        SymbolKind::Struct | SymbolKind::Enum | SymbolKind::Class | SymbolKind::Interface
    ) {
        return Vec::new();
    }
    let list = node.child_by_field_name("body").or_else(|| {
        // Go: `type T struct { … }` keeps its fields in the type's field list.
        let ty = node.child_by_field_name("type")?;
        let mut cursor = ty.walk();
        let list = ty
            .named_children(&mut cursor)
            .find(|c| matches!(c.kind(), "field_declaration_list" | "method_spec_list"));
        list
    });
    let Some(list) = list else {
        return Vec::new();
    };
    let mut cursor = list.walk();
    let mut found = Vec::new();
    for child in list.named_children(&mut cursor) {
        let is_field = match family {
            Family::Rust => matches!(child.kind(), "field_declaration" | "enum_variant"),
            Family::Python => {
                child.kind() == "expression_statement"
                    && child
                        .named_child(0)
                        .is_some_and(|c| c.kind() == "assignment")
            }
            Family::Script => matches!(
                child.kind(),
                "public_field_definition"
                    | "field_definition"
                    | "property_signature"
                    | "enum_assignment"
                    | "property_identifier"
            ),
            Family::Go => matches!(
                child.kind(),
                "field_declaration" | "method_elem" | "method_spec"
            ),
        };
        if !is_field {
            continue;
        }
        if found.len() == MAX_FIELDS {
            return Vec::new();
        }
        let text = String::from_utf8_lossy(&source[child.start_byte()..child.end_byte()]);
        let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
        found.push(bounded(&collapsed, MAX_FIELD_BYTES));
    }
    found
}

// ---------------------------------------------------------------------------------------
// References and imports
// ---------------------------------------------------------------------------------------

struct Ancestor<'t> {
    kind: &'t str,
    field: Option<&'t str>,
    /// This node or one above it is a Python type or base class list: kept here so that
    /// no leaf looks through all its ancestors (a deep file would be quadratic).
    in_type: bool,
}

/// One walk of the whole tree: every name used where a reader would look it up (a call, a
/// type, a path, an import, a capitalised name), once per line, and the import statements;
/// returns the bodies of the macro invocations that may hold items.
fn references_and_imports<'t>(
    family: Family,
    source: &[u8],
    tree: &'t Tree,
    definition_names: &HashSet<usize>,
    tags: &mut FileTags,
) -> Vec<MacroBody> {
    let mut bodies = Vec::new();
    let mut seen: HashSet<(&[u8], u32)> = HashSet::new();
    let mut cursor = tree.walk();
    let mut ancestors: Vec<Ancestor<'t>> = Vec::new();
    // Depth of the innermost import statement on the stack (None: not in one).
    let mut import_depth: Option<usize> = None;
    loop {
        let node = cursor.node();
        let field = cursor.field_name();
        let kind = node.kind();
        if node.child_count() == 0 {
            let keep = (import_depth.is_some() && is_identifier_kind(kind))
                || is_reference(family, source, node, kind, field, &ancestors);
            if keep && !definition_names.contains(&node.start_byte()) && !node.is_missing() {
                let name =
                    &source[node.start_byte().min(source.len())..node.end_byte().min(source.len())];
                let line = node.start_position().row as u32;
                if is_name(name) && seen.insert((name, line)) {
                    tags.references.push(Reference {
                        name: String::from_utf8_lossy(name).into_owned(),
                        line,
                    });
                }
            }
        } else {
            if import_depth.is_none() && is_import(family, kind) {
                import_depth = Some(ancestors.len());
                tags.imports.push(import(source, node));
            }
            let in_macro = ancestors
                .last()
                .is_some_and(|a| a.kind == "macro_invocation");
            if family == Family::Rust && kind == "token_tree" && in_macro {
                let bytes = node.byte_range();
                let text = &source[bytes.start.min(source.len())..bytes.end.min(source.len())];
                if may_hold_items(text) {
                    bodies.push(MacroBody {
                        bytes,
                        row: node.start_position().row as u32,
                    });
                }
            }
            let in_type = kind == "type"
                || field == Some("superclasses")
                || ancestors.last().is_some_and(|a| a.in_type);
            ancestors.push(Ancestor {
                kind,
                field,
                in_type,
            });
            if cursor.goto_first_child() {
                continue;
            }
            ancestors.pop();
            if import_depth == Some(ancestors.len()) {
                import_depth = None;
            }
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return bodies;
            }
            ancestors.pop();
            if import_depth == Some(ancestors.len()) {
                import_depth = None;
            }
        }
    }
}

/// Words that start an item: a body without one holds none (`println!`, `vec!`, `assert!`).
const ITEM_KEYWORDS: [&[u8]; 12] = [
    b"fn",
    b"struct",
    b"enum",
    b"impl",
    b"trait",
    b"mod",
    b"type",
    b"const",
    b"static",
    b"use",
    b"union",
    b"macro_rules",
];

/// Whether the text spells an item keyword as a word followed by a space (or `!` for
/// `macro_rules!`).
fn may_hold_items(text: &[u8]) -> bool {
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    while i < text.len() {
        if !is_word(text[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < text.len() && is_word(text[i]) {
            i += 1;
        }
        let follows = text
            .get(i)
            .is_some_and(|b| b.is_ascii_whitespace() || *b == b'!');
        let before = start.checked_sub(1).map(|j| text[j]);
        // `$fn` is a macro's own variable, not the keyword.
        if follows && before != Some(b'$') && ITEM_KEYWORDS.contains(&&text[start..i]) {
            return true;
        }
    }
    false
}

fn is_identifier_kind(kind: &str) -> bool {
    matches!(
        kind,
        "identifier" | "type_identifier" | "package_identifier" | "property_identifier"
    )
}

/// An identifier's bytes, not `_`, not a string or number that slipped through.
fn is_name(name: &[u8]) -> bool {
    name != b"_"
        && name
            .first()
            .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_' || *b == b'$' || *b >= 0x80)
        && name.len() <= 128
}

fn is_import(family: Family, kind: &str) -> bool {
    match family {
        Family::Rust => matches!(kind, "use_declaration" | "extern_crate_declaration"),
        Family::Python => matches!(
            kind,
            "import_statement" | "import_from_statement" | "future_import_statement"
        ),
        Family::Script => kind == "import_statement",
        Family::Go => kind == "import_spec",
    }
}

fn import(source: &[u8], node: Node) -> Import {
    let text = String::from_utf8_lossy(&source[node.start_byte()..node.end_byte()]);
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut names = Vec::new();
    let mut cursor = node.walk();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if n.child_count() == 0 {
            let go_path = n.kind() == "interpreted_string_literal_content";
            if is_identifier_kind(n.kind()) || go_path {
                let text = String::from_utf8_lossy(&source[n.start_byte()..n.end_byte()]);
                // Go names a package by its path's last segment.
                let name = match text.rsplit_once('/') {
                    Some((_, last)) if go_path => last.to_string().into(),
                    _ => text,
                };
                if !names.iter().any(|known: &String| *known == name) {
                    names.push(name.into_owned());
                }
            }
            continue;
        }
        let children: Vec<Node> = n.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
        if names.len() > 64 {
            break;
        }
    }
    Import::new(
        node.start_position().row as u32,
        &bounded(&collapsed, MAX_IMPORT_BYTES),
        &names,
    )
}

/// Whether a leaf is a name used where a reader would look its definition up.
fn is_reference(
    family: Family,
    source: &[u8],
    node: Node,
    kind: &str,
    field: Option<&str>,
    ancestors: &[Ancestor],
) -> bool {
    let parent = ancestors.last();
    let parent_kind = parent.map_or("", |p| p.kind);
    let grandparent_kind = ancestors
        .len()
        .checked_sub(2)
        .map_or("", |i| ancestors[i].kind);
    let uppercase = source
        .get(node.start_byte())
        .is_some_and(|b| b.is_ascii_uppercase());
    // A callee that is a member: `x.foo()`, `self.foo()`, `pkg.Foo()`.
    let called_member = parent.is_some_and(|p| p.field == Some("function"))
        && grandparent_kind == "call_expression"
        || parent.is_some_and(|p| p.field == Some("function")) && grandparent_kind == "call";
    match family {
        Family::Rust => match kind {
            "type_identifier" => true,
            "identifier" => {
                uppercase
                    || (parent_kind == "call_expression" && field == Some("function"))
                    || (parent_kind == "macro_invocation" && field == Some("macro"))
                    || parent_kind == "scoped_identifier"
                    || parent_kind == "scoped_type_identifier"
                    || (parent_kind == "generic_function" && field == Some("function"))
            }
            "field_identifier" => uppercase || (field == Some("field") && called_member),
            _ => false,
        },
        Family::Python => match kind {
            "identifier" => {
                uppercase
                    || (parent_kind == "call" && field == Some("function"))
                    || (parent_kind == "attribute" && field == Some("attribute") && called_member)
                    || parent_kind == "type"
                    || parent_kind == "decorator"
                    || parent.is_some_and(|p| p.in_type)
            }
            _ => false,
        },
        Family::Script => match kind {
            "type_identifier" => true,
            "identifier" => {
                uppercase
                    || (parent_kind == "call_expression" && field == Some("function"))
                    || (parent_kind == "new_expression" && field == Some("constructor"))
                    || parent_kind == "decorator"
                    || parent_kind == "nested_type_identifier"
            }
            "property_identifier" => uppercase || (field == Some("property") && called_member),
            "shorthand_property_identifier" => uppercase,
            _ => false,
        },
        Family::Go => match kind {
            "type_identifier" => {
                let text = &source[node.start_byte()..node.end_byte()];
                !syntax::GO_PREDECLARED_TYPES
                    .iter()
                    .any(|t| t.as_bytes() == text)
            }
            "identifier" => {
                uppercase || (parent_kind == "call_expression" && field == Some("function"))
            }
            "field_identifier" => uppercase || (field == Some("field") && called_member),
            "package_identifier" => parent_kind != "package_clause",
            _ => false,
        },
    }
}

fn trim_ascii(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |i| i + 1);
    &bytes[start..end.max(start)]
}

/// `text` cut to at most `max` bytes at a character boundary, with "…" when cut.
pub fn bounded(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
