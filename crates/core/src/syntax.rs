//! What a document's syntax tree says on its own: the outline, the symbol around a byte,
//! and the identifiers a span of code refers to.
//!
//! Everything here is a pure function of (source bytes, tree). Offsets from callers and
//! from a possibly stale tree are clamped to the source, so a bad offset yields a smaller
//! answer, never a panic. The walkers keep their own stacks instead of recursing, so a
//! pathologically deep tree cannot overflow the thread's stack.

use std::collections::HashSet;
use std::ops::Range;

use tree_sitter::{Node, Tree, TreeCursor};

use crate::language::Language;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SymbolKind {
    Function,
    Method,
    Struct,
    Class,
    Enum,
    Trait,
    Interface,
    Impl,
    Module,
    Constant,
    TypeAlias,
    Macro,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Symbol {
    pub name: String,
    pub kind: SymbolKind,
    /// Byte range of the whole definition. Wrappers that belong to a single definition
    /// (Python decorators, `export`, Go's `type`/`const` keyword, `const f = …`) are included.
    pub range: Range<usize>,
    /// Byte range of the name.
    pub selection_range: Range<usize>,
    pub children: Vec<Symbol>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EnclosingSymbol {
    /// Names from the outermost container to the symbol itself, e.g. ["impl Foo", "bar"].
    pub path: Vec<String>,
    pub name: String,
    pub kind: SymbolKind,
    pub range: Range<usize>,
    /// The symbol's full source text (lossy UTF-8).
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IdentifierKind {
    Value,
    Type,
    Field,
    Module,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Identifier {
    pub name: String,
    pub kind: IdentifierKind,
}

/// Grammars that share node kinds share rules: the TypeScript grammars extend JavaScript's.
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
// Outline
// ---------------------------------------------------------------------------------------

/// Nested outline of the document in source order.
pub fn outline(language: Language, source: &[u8], tree: &Tree) -> Vec<Symbol> {
    let Some(family) = Family::of(language) else {
        return Vec::new();
    };
    let root = tree.root_node();
    let mut cursor = root.walk();
    let mut stack = vec![Frame::new(
        root,
        root.kind(),
        None,
        Owner::Root,
        &mut cursor,
    )];

    while let Some(frame) = stack.last_mut() {
        let Some(child) = frame.pending.pop() else {
            // Every child of this frame is visited: hand its symbols to the frame below.
            let Some(done) = stack.pop() else { break };
            let (symbols, lendable_from) = done.finish();
            match stack.last_mut() {
                Some(below) => below.receive(symbols, lendable_from),
                None => return symbols,
            }
            continue;
        };
        let container = frame.container;
        let placement = Placement {
            family,
            source,
            parent_kind: frame.kind,
            field: child.field,
            container,
        };
        match role(&placement, child.node) {
            Role::Symbol(head) => {
                let symbol = Symbol {
                    name: head.name,
                    kind: head.kind,
                    range: clamped_node_range(child.node, source.len()),
                    selection_range: head.selection_range,
                    children: Vec::new(),
                };
                let origin = child.node.kind();
                match head.members {
                    Some(body) => {
                        let owner = Owner::Symbol(symbol);
                        let members = Frame::new(body, origin, Some(head.kind), owner, &mut cursor);
                        stack.push(members);
                    }
                    None => frame.receive(vec![symbol], Some(origin)),
                }
            }
            Role::Wrapper { lends_range } => {
                let owner = Owner::Wrapper {
                    range: clamped_node_range(child.node, source.len()),
                    lends_range,
                };
                let origin = child.node.kind();
                stack.push(Frame::new(
                    child.node,
                    origin,
                    container,
                    owner,
                    &mut cursor,
                ));
            }
            Role::Other => {}
        }
    }
    // Not reached: the root frame is the last to finish and returns above.
    Vec::new()
}

/// The innermost outline symbol whose range contains `byte` (inclusive of the end byte, so a
/// cursor just after the closing brace still counts). None when outside every symbol or for
/// plain text.
pub fn enclosing_symbol(
    language: Language,
    source: &[u8],
    tree: &Tree,
    byte: usize,
) -> Option<EnclosingSymbol> {
    enclosing_in_outline(&outline(language, source, tree), source, byte)
}

/// `enclosing_symbol` over an outline computed before (and perhaps cached) for `source`.
pub fn enclosing_in_outline(
    outline: &[Symbol],
    source: &[u8],
    byte: usize,
) -> Option<EnclosingSymbol> {
    let byte = byte.min(source.len());
    let mut level = outline;
    let mut path = Vec::new();
    let mut innermost: Option<&Symbol> = None;
    // Prefer a symbol that strictly contains the byte, so when one definition ends exactly
    // where the next begins, the cursor belongs to the one it is in front of.
    while let Some(index) = level
        .iter()
        .position(|s| s.range.start <= byte && byte < s.range.end)
        .or_else(|| {
            level
                .iter()
                .rposition(|s| s.range.start <= byte && byte <= s.range.end)
        })
    {
        let symbol = &level[index];
        level = &symbol.children;
        path.push(symbol.name.clone());
        innermost = Some(symbol);
    }
    let symbol = innermost?;
    Some(EnclosingSymbol {
        path,
        text: lossy_text(source, symbol.range.clone()),
        name: symbol.name.clone(),
        kind: symbol.kind,
        range: symbol.range.clone(),
    })
}

/// One child node waiting to be classified, with the field it fills in its parent.
struct Pending<'t> {
    node: Node<'t>,
    field: Option<&'t str>,
}

/// A node whose named children are being searched for definitions.
struct Frame<'t> {
    kind: &'t str,
    /// Kind of the node this frame stands for among its parent's children: the symbol's
    /// node, or the wrapper itself.
    origin: &'t str,
    /// Kind of the nearest enclosing symbol: decides Function vs Method.
    container: Option<SymbolKind>,
    /// Children not visited yet, last child first so `pop` yields source order.
    pending: Vec<Pending<'t>>,
    child_kinds: Vec<&'t str>,
    found: Vec<Symbol>,
    /// Kind of the child the latest symbols came from, when that child may lend them this
    /// frame's range.
    found_from: Option<&'t str>,
    owner: Owner,
}

/// Who receives a frame's symbols once its children are visited.
enum Owner {
    Root,
    /// They become this symbol's children.
    Symbol(Symbol),
    /// They take the wrapper's place; a lone one may take the wrapper's range too.
    Wrapper {
        range: Range<usize>,
        lends_range: bool,
    },
}

impl<'t> Frame<'t> {
    fn new(
        node: Node<'t>,
        origin: &'t str,
        container: Option<SymbolKind>,
        owner: Owner,
        cursor: &mut TreeCursor<'t>,
    ) -> Frame<'t> {
        let mut pending = Vec::new();
        cursor.reset(node);
        if cursor.goto_first_child() {
            loop {
                let child = cursor.node();
                if child.is_named() {
                    pending.push(Pending {
                        node: child,
                        field: cursor.field_name(),
                    });
                }
                if !cursor.goto_next_sibling() {
                    break;
                }
            }
        }
        let child_kinds = pending.iter().map(|child| child.node.kind()).collect();
        pending.reverse();
        Frame {
            kind: node.kind(),
            origin,
            container,
            pending,
            child_kinds,
            found: Vec::new(),
            found_from: None,
            owner,
        }
    }

    /// Takes symbols found in the child of kind `from` (None: not to be widened).
    fn receive(&mut self, symbols: Vec<Symbol>, from: Option<&'t str>) {
        if !symbols.is_empty() {
            self.found.extend(symbols);
            self.found_from = from;
        }
    }

    /// This frame's symbols for its parent, and the kind they may be widened as.
    fn finish(self) -> (Vec<Symbol>, Option<&'t str>) {
        match self.owner {
            Owner::Root => (self.found, None),
            Owner::Symbol(mut symbol) => {
                symbol.children = self.found;
                (vec![symbol], Some(self.origin))
            }
            Owner::Wrapper { range, lends_range } => {
                let mut found = self.found;
                // Only a definition that is the one of its kind here owns the wrapper:
                // `const a = () => 1, b = 2` must not give `b = 2` to a.
                let lone_of_its_kind = self.found_from.is_some_and(|from| {
                    self.child_kinds
                        .iter()
                        .filter(|kind| **kind == from)
                        .count()
                        == 1
                });
                let mut lent = false;
                if let [only] = found.as_mut_slice() {
                    if lends_range && lone_of_its_kind {
                        only.range =
                            range.start.min(only.range.start)..range.end.max(only.range.end);
                        lent = true;
                    }
                }
                (found, lent.then_some(self.origin))
            }
        }
    }
}

/// What a node means to the outline.
enum Role<'t> {
    Symbol(Head<'t>),
    /// Not a definition, but holds definitions that are listed in its place. With
    /// `lends_range`, a lone definition inside takes the wrapper's range, so decorators,
    /// `export` and declaration keywords belong to it.
    Wrapper {
        lends_range: bool,
    },
    Other,
}

struct Head<'t> {
    kind: SymbolKind,
    name: String,
    selection_range: Range<usize>,
    /// The node whose named children are this symbol's members.
    members: Option<Node<'t>>,
}

/// Where a node sits, as far as classifying it needs.
struct Placement<'a> {
    family: Family,
    source: &'a [u8],
    parent_kind: &'a str,
    field: Option<&'a str>,
    container: Option<SymbolKind>,
}

impl Placement<'_> {
    /// A symbol named by the node's `name` field; nameless definitions (mid-edit, or
    /// anonymous) are left out because an outline entry needs a name.
    fn named<'t>(&self, node: Node<'t>, kind: SymbolKind, members: Option<Node<'t>>) -> Role<'t> {
        match node.child_by_field_name("name") {
            Some(name) => self.symbol(kind, name, members),
            None => Role::Other,
        }
    }

    /// A symbol whose name is the text of `name_node`.
    fn symbol<'t>(
        &self,
        kind: SymbolKind,
        name_node: Node<'t>,
        members: Option<Node<'t>>,
    ) -> Role<'t> {
        let name = collapsed_text(self.source, name_node);
        self.symbol_called(kind, name, name_node, members)
    }

    fn symbol_called<'t>(
        &self,
        kind: SymbolKind,
        name: String,
        name_node: Node<'t>,
        members: Option<Node<'t>>,
    ) -> Role<'t> {
        if name.is_empty() {
            return Role::Other;
        }
        Role::Symbol(Head {
            kind,
            name,
            selection_range: clamped_node_range(name_node, self.source.len()),
            members,
        })
    }

    fn function_or_method(&self, method_containers: &[SymbolKind]) -> SymbolKind {
        match self.container {
            Some(container) if method_containers.contains(&container) => SymbolKind::Method,
            _ => SymbolKind::Function,
        }
    }
}

fn role<'t>(placement: &Placement, node: Node<'t>) -> Role<'t> {
    // Parse errors often wrap perfectly good definitions; look inside, but an ERROR is not
    // part of any definition's range.
    if node.is_error() {
        return Role::Wrapper { lends_range: false };
    }
    match placement.family {
        Family::Rust => rust_role(placement, node),
        Family::Python => python_role(placement, node),
        Family::Script => script_role(placement, node),
        Family::Go => go_role(placement, node),
    }
}

fn rust_role<'t>(placement: &Placement, node: Node<'t>) -> Role<'t> {
    let body = || node.child_by_field_name("body");
    let method_containers = [SymbolKind::Impl, SymbolKind::Trait];
    match node.kind() {
        "function_item" | "function_signature_item" => {
            placement.named(node, placement.function_or_method(&method_containers), None)
        }
        "struct_item" | "union_item" => placement.named(node, SymbolKind::Struct, None),
        "enum_item" => placement.named(node, SymbolKind::Enum, None),
        "trait_item" => placement.named(node, SymbolKind::Trait, body()),
        "mod_item" => placement.named(node, SymbolKind::Module, body()),
        "const_item" | "static_item" => placement.named(node, SymbolKind::Constant, None),
        "type_item" | "associated_type" => placement.named(node, SymbolKind::TypeAlias, None),
        "macro_definition" => placement.named(node, SymbolKind::Macro, None),
        "impl_item" => match node.child_by_field_name("type") {
            Some(self_type) => {
                let name = rust_impl_name(placement.source, node, self_type);
                placement.symbol_called(SymbolKind::Impl, name, self_type, body())
            }
            None => Role::Other,
        },
        // `extern "C" { fn f(); }`: the declarations inside are functions of this module.
        "foreign_mod_item" | "declaration_list" => Role::Wrapper { lends_range: false },
        _ => Role::Other,
    }
}

/// "impl Foo<T>", "impl fmt::Display for Foo", "impl !Send for Foo"; the impl's own generic
/// parameters are left out, the type is shown as written.
fn rust_impl_name(source: &[u8], impl_item: Node, self_type: Node) -> String {
    let self_type = collapsed_text(source, self_type);
    let Some(trait_node) = impl_item.child_by_field_name("trait") else {
        return format!("impl {self_type}");
    };
    // A negative impl's `!` is an anonymous token just before the trait.
    let negation = match trait_node.prev_sibling() {
        Some(token) if token.kind() == "!" => "!",
        _ => "",
    };
    let trait_name = collapsed_text(source, trait_node);
    format!("impl {negation}{trait_name} for {self_type}")
}

fn python_role<'t>(placement: &Placement, node: Node<'t>) -> Role<'t> {
    match node.kind() {
        "function_definition" => placement.named(
            node,
            placement.function_or_method(&[SymbolKind::Class]),
            None,
        ),
        "class_definition" => {
            placement.named(node, SymbolKind::Class, node.child_by_field_name("body"))
        }
        "decorated_definition" => Role::Wrapper { lends_range: true },
        _ => Role::Other,
    }
}

fn script_role<'t>(placement: &Placement, node: Node<'t>) -> Role<'t> {
    let body = || node.child_by_field_name("body");
    match node.kind() {
        // `function_signature` is an overload or a `declare function`.
        "function_declaration" | "generator_function_declaration" | "function_signature" => {
            placement.named(node, SymbolKind::Function, None)
        }
        "class_declaration" | "abstract_class_declaration" => {
            placement.named(node, SymbolKind::Class, body())
        }
        "method_definition" | "method_signature" | "abstract_method_signature" => {
            placement.named(node, SymbolKind::Method, None)
        }
        // `handle = () => {}` in a class body is a method in all but syntax. JavaScript calls
        // the field's name `property`, TypeScript calls it `name`.
        "field_definition" | "public_field_definition" => {
            let name = node
                .child_by_field_name("name")
                .or_else(|| node.child_by_field_name("property"));
            match (name, node.child_by_field_name("value")) {
                (Some(name), Some(value)) if is_script_function(value.kind()) => {
                    placement.symbol(SymbolKind::Method, name, None)
                }
                _ => Role::Other,
            }
        }
        "interface_declaration" => placement.named(node, SymbolKind::Interface, body()),
        "enum_declaration" => placement.named(node, SymbolKind::Enum, None),
        "type_alias_declaration" => placement.named(node, SymbolKind::TypeAlias, None),
        // `namespace N {}` (internal_module) and `module M {}` / `declare module "m" {}`.
        "internal_module" | "module" => placement.named(node, SymbolKind::Module, body()),
        // `const f = () => …`, `const C = class { … }`.
        "variable_declarator" => {
            let (Some(name), Some(value)) = (
                node.child_by_field_name("name"),
                node.child_by_field_name("value"),
            ) else {
                return Role::Other;
            };
            if name.kind() != "identifier" {
                return Role::Other;
            }
            if is_script_function(value.kind()) {
                placement.symbol(SymbolKind::Function, name, None)
            } else if value.kind() == "class" {
                let members = value.child_by_field_name("body");
                placement.symbol(SymbolKind::Class, name, members)
            } else {
                Role::Other
            }
        }
        // A namespace parses as an expression statement, `declare` wraps a declaration.
        "export_statement"
        | "lexical_declaration"
        | "variable_declaration"
        | "expression_statement"
        | "ambient_declaration" => Role::Wrapper { lends_range: true },
        // `declare global { … }` holds its declarations in a bare block.
        "statement_block" if placement.parent_kind == "ambient_declaration" => {
            Role::Wrapper { lends_range: false }
        }
        _ => Role::Other,
    }
}

fn is_script_function(kind: &str) -> bool {
    matches!(
        kind,
        "arrow_function" | "function_expression" | "function" | "generator_function"
    )
}

fn go_role<'t>(placement: &Placement, node: Node<'t>) -> Role<'t> {
    match node.kind() {
        "function_declaration" => placement.named(node, SymbolKind::Function, None),
        "method_declaration" => {
            let Some(name_node) = node.child_by_field_name("name") else {
                return Role::Other;
            };
            let name = collapsed_text(placement.source, name_node);
            let receiver_type = node
                .child_by_field_name("receiver")
                .and_then(|receivers| receivers.named_child(0))
                .and_then(|receiver| receiver.child_by_field_name("type"))
                .map(|ty| collapsed_text(placement.source, ty));
            let name = match receiver_type {
                Some(ty) if !name.is_empty() => format!("({ty}) {name}"),
                _ => name,
            };
            placement.symbol_called(SymbolKind::Method, name, name_node, None)
        }
        "type_spec" => {
            let kind = match node.child_by_field_name("type").map(|ty| ty.kind()) {
                Some("struct_type") => SymbolKind::Struct,
                Some("interface_type") => SymbolKind::Interface,
                _ => SymbolKind::TypeAlias,
            };
            placement.named(node, kind, None)
        }
        "type_alias" => placement.named(node, SymbolKind::TypeAlias, None),
        // `const a, b = 1, 2` names several constants in one spec; each name is a symbol.
        "identifier"
            if placement.parent_kind == "const_spec" && placement.field == Some("name") =>
        {
            let name = collapsed_text(placement.source, node);
            if name == "_" {
                return Role::Other;
            }
            placement.symbol_called(SymbolKind::Constant, name, node, None)
        }
        "type_declaration" | "const_declaration" | "const_spec" => {
            Role::Wrapper { lends_range: true }
        }
        _ => Role::Other,
    }
}

// ---------------------------------------------------------------------------------------
// Referenced identifiers
// ---------------------------------------------------------------------------------------

/// Distinct identifiers referenced in the byte range (nodes overlapping the range), in order
/// of first appearance, deduplicated by (name, kind). Keywords, literals, comments and
/// built-in types are not identifiers. An empty range is a cursor position: identifiers
/// touching it count. A reversed range is read the right way round; both ends are clamped
/// to the source.
pub fn referenced_identifiers(
    language: Language,
    source: &[u8],
    tree: &Tree,
    range: Range<usize>,
) -> Vec<Identifier> {
    let Some(family) = Family::of(language) else {
        return Vec::new();
    };
    let start = range.start.min(range.end).min(source.len());
    let end = range.start.max(range.end).min(source.len());
    let overlaps = |node: Node| {
        if start == end {
            node.start_byte() <= start && start <= node.end_byte()
        } else {
            node.start_byte() < end && start < node.end_byte()
        }
    };
    let is_past_range = |node: Node| {
        if start == end {
            node.start_byte() > end
        } else {
            node.start_byte() >= end
        }
    };

    let mut found = Vec::new();
    // Keyed by the source bytes, so a repeated identifier costs no allocation.
    let mut seen: HashSet<(&[u8], IdentifierKind)> = HashSet::new();
    let mut cursor = tree.walk();
    // The ancestors of the cursor's node, innermost last.
    let mut ancestors: Vec<Ancestor> = Vec::new();
    loop {
        let node = cursor.node();
        let mut descend = false;
        if overlaps(node) && !node.is_missing() {
            let field = cursor.field_name();
            if let Some(kind) = identifier_kind(family, source, node, field, &ancestors) {
                let name = node_bytes(source, node);
                if !name.is_empty() && seen.insert((name, kind)) {
                    let name = String::from_utf8_lossy(name).into_owned();
                    found.push(Identifier { name, kind });
                }
            }
            descend = node.child_count() > 0;
            if descend {
                let implied = implied_kind(family, node.kind(), field)
                    .or_else(|| ancestors.last().and_then(|a| a.implied));
                ancestors.push(Ancestor {
                    kind: node.kind(),
                    field,
                    implied,
                });
            }
        }
        if descend && cursor.goto_first_child() {
            continue;
        }
        if descend {
            ancestors.pop();
        }
        // Next sibling, or the next sibling of the nearest ancestor that has one; siblings
        // that start after the range cannot overlap it.
        loop {
            if cursor.goto_next_sibling() && !is_past_range(cursor.node()) {
                break;
            }
            if !cursor.goto_parent() {
                return found;
            }
            ancestors.pop();
        }
    }
}

struct Ancestor<'t> {
    kind: &'t str,
    field: Option<&'t str>,
    /// The kind every plain identifier below this node has, e.g. inside a Python type
    /// annotation everything names a type.
    implied: Option<IdentifierKind>,
}

/// A context that decides the kind of the plain identifiers below it.
fn implied_kind(family: Family, kind: &str, field: Option<&str>) -> Option<IdentifierKind> {
    match family {
        // Python's grammar has one `identifier` for everything; only position tells a type
        // annotation or a base class from a value, and an import path from a value.
        Family::Python => match (kind, field) {
            ("type", _) | (_, Some("superclasses")) => Some(IdentifierKind::Type),
            ("import_statement", _) | (_, Some("module_name")) => Some(IdentifierKind::Module),
            _ => None,
        },
        _ => None,
    }
}

/// Go's predeclared types are type_identifiers to the grammar but never user definitions,
/// like Rust's primitive_type and TypeScript's predefined_type.
const GO_PREDECLARED_TYPES: &[&str] = &[
    "any",
    "bool",
    "byte",
    "comparable",
    "complex64",
    "complex128",
    "error",
    "float32",
    "float64",
    "int",
    "int8",
    "int16",
    "int32",
    "int64",
    "rune",
    "string",
    "uint",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "uintptr",
];

fn identifier_kind(
    family: Family,
    source: &[u8],
    node: Node,
    field: Option<&str>,
    ancestors: &[Ancestor],
) -> Option<IdentifierKind> {
    use IdentifierKind::{Field, Module, Type, Value};
    let parent = ancestors.last();
    let parent_kind = parent.map_or("", |p| p.kind);
    let starts_uppercase = || {
        source
            .get(node.start_byte())
            .is_some_and(|b| b.is_ascii_uppercase())
    };
    match family {
        Family::Rust => match node.kind() {
            // Lifetimes and loop labels are spelled with an identifier but name neither.
            "identifier" if matches!(parent_kind, "lifetime" | "label") => None,
            // A path segment before `::` is a module, or by convention a type when
            // capitalised (`Self::new`, `Vec::with_capacity`).
            "identifier" if is_rust_path_segment(field, ancestors) => {
                Some(if starts_uppercase() { Type } else { Module })
            }
            "identifier" => Some(Value),
            "type_identifier" => Some(Type),
            "field_identifier" | "shorthand_field_identifier" => Some(Field),
            _ => None,
        },
        Family::Python => match node.kind() {
            "identifier" if parent_kind == "keyword_argument" && field == Some("name") => {
                Some(Field)
            }
            "identifier" if parent_kind == "class_definition" && field == Some("name") => {
                Some(Type)
            }
            "identifier" => match parent.and_then(|p| p.implied) {
                Some(implied) => Some(implied),
                None if parent_kind == "attribute" && field == Some("attribute") => Some(Field),
                None => Some(Value),
            },
            _ => None,
        },
        Family::Script => match node.kind() {
            // `<div>` names an intrinsic element, `<Foo>` a component.
            "identifier"
                if field == Some("name")
                    && parent_kind.starts_with("jsx_")
                    && !starts_uppercase() =>
            {
                None
            }
            "identifier"
                if (parent_kind == "nested_type_identifier" && field == Some("module"))
                    || (parent_kind == "nested_identifier" && field == Some("object"))
                    || parent_kind == "namespace_import"
                    || (matches!(parent_kind, "internal_module" | "module")
                        && field == Some("name")) =>
            {
                Some(Module)
            }
            // JavaScript names classes with a plain identifier.
            "identifier"
                if matches!(parent_kind, "class_declaration" | "class")
                    && field == Some("name") =>
            {
                Some(Type)
            }
            // `{ foo }` in an object literal reads the variable foo.
            "identifier" | "shorthand_property_identifier" => Some(Value),
            "type_identifier" => Some(Type),
            // `const { foo } = obj` reads obj's property foo.
            "property_identifier"
            | "private_property_identifier"
            | "shorthand_property_identifier_pattern" => Some(Field),
            _ => None,
        },
        Family::Go => match node.kind() {
            // `_` parses as an identifier in some positions (`var _ = x`) but binds nothing.
            "identifier" if node_bytes(source, node) == b"_" => None,
            "identifier" => Some(Value),
            "type_identifier" => {
                let name = node_bytes(source, node);
                let predeclared = GO_PREDECLARED_TYPES.iter().any(|t| t.as_bytes() == name);
                (!predeclared).then_some(Type)
            }
            "field_identifier" => Some(Field),
            "package_identifier" => Some(Module),
            _ => None,
        },
    }
}

/// `std` and `collections` in `std::collections::HashMap`: the path before the last `::`.
fn is_rust_path_segment(field: Option<&str>, ancestors: &[Ancestor]) -> bool {
    let mut outward = ancestors.iter().rev();
    let Some(parent) = outward.next() else {
        return false;
    };
    if !is_rust_path_owner(parent.kind) {
        return false;
    }
    match field {
        Some("path") => true,
        // The last segment of a path that is itself the path of a longer one.
        Some("name") => {
            parent.field == Some("path")
                && outward
                    .next()
                    .is_some_and(|grandparent| is_rust_path_owner(grandparent.kind))
        }
        _ => false,
    }
}

fn is_rust_path_owner(kind: &str) -> bool {
    matches!(
        kind,
        "scoped_identifier" | "scoped_type_identifier" | "scoped_use_list"
    )
}

// ---------------------------------------------------------------------------------------
// Byte helpers
// ---------------------------------------------------------------------------------------

/// A node's byte range, cut to the source: the tree may be older than the source.
fn clamped_node_range(node: Node, len: usize) -> Range<usize> {
    let end = node.end_byte().min(len);
    node.start_byte().min(end)..end
}

fn node_bytes<'s>(source: &'s [u8], node: Node) -> &'s [u8] {
    byte_slice(source, clamped_node_range(node, source.len()))
}

/// The bytes of `range`, cut to the source.
fn byte_slice(source: &[u8], range: Range<usize>) -> &[u8] {
    let end = range.end.min(source.len());
    let start = range.start.min(end);
    source.get(start..end).unwrap_or_default()
}

fn lossy_text(source: &[u8], range: Range<usize>) -> String {
    String::from_utf8_lossy(byte_slice(source, range)).into_owned()
}

/// A node's text on one line: names built from types (`impl Foo<\n T>`) must not carry
/// the source's line breaks and indentation.
fn collapsed_text(source: &[u8], node: Node) -> String {
    let text = lossy_text(source, clamped_node_range(node, source.len()));
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(language: Language, source: &str) -> Tree {
        let mut parser = tree_sitter::Parser::new();
        parser
            .set_language(&language.grammar().expect("language has a grammar"))
            .expect("grammar loads");
        parser.parse(source, None).expect("parser returns a tree")
    }

    /// One line per symbol, "name [kind]", children indented by two spaces.
    fn render(symbols: &[Symbol]) -> String {
        fn render_into(symbols: &[Symbol], depth: usize, out: &mut String) {
            for symbol in symbols {
                let kind = format!("{:?}", symbol.kind).to_lowercase();
                out.push_str(&format!("{}{} [{kind}]\n", "  ".repeat(depth), symbol.name));
                render_into(&symbol.children, depth + 1, out);
            }
        }
        let mut out = String::new();
        render_into(symbols, 0, &mut out);
        out
    }

    fn outline_of(language: Language, source: &str) -> String {
        render(&outline(
            language,
            source.as_bytes(),
            &parse(language, source),
        ))
    }

    fn find<'a>(symbols: &'a [Symbol], name: &str) -> &'a Symbol {
        symbols
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no symbol {name} in {symbols:#?}"))
    }

    fn slice<'a>(source: &'a str, range: &Range<usize>) -> &'a str {
        &source[range.clone()]
    }

    /// Byte offset of the first occurrence of `needle`.
    fn offset(source: &str, needle: &str) -> usize {
        source
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} not in source"))
    }

    /// Byte range of the first occurrence of `needle`.
    fn span(source: &str, needle: &str) -> Range<usize> {
        let start = offset(source, needle);
        start..start + needle.len()
    }

    fn enclosing(language: Language, source: &str, byte: usize) -> Option<EnclosingSymbol> {
        enclosing_symbol(language, source.as_bytes(), &parse(language, source), byte)
    }

    /// "name:kind" per identifier, in the order returned.
    fn identifiers(language: Language, source: &str, range: Range<usize>) -> Vec<String> {
        let tree = parse(language, source);
        referenced_identifiers(language, source.as_bytes(), &tree, range)
            .into_iter()
            .map(|id| format!("{}:{}", id.name, format!("{:?}", id.kind).to_lowercase()))
            .collect()
    }

    const ALL_GRAMMARS: [Language; 6] = [
        Language::Rust,
        Language::Python,
        Language::TypeScript,
        Language::Tsx,
        Language::JavaScript,
        Language::Go,
    ];

    // ----- Rust -------------------------------------------------------------------------

    const RUST: &str = r#"use std::fmt;

/// A point.
pub struct Point { x: i32, y: i32 }
union Bits { i: u32, f: f32 }
enum Shape { Circle, Square }
pub trait Area {
    type Unit;
    const SIDES: u8;
    fn area(&self) -> f64;
    fn describe(&self) -> String { String::new() }
}
impl Point {
    pub fn new(x: i32, y: i32) -> Self {
        fn helper() {}
        Point { x, y }
    }
    fn norm(&self) -> i32 { self.x.abs() + self.y.abs() }
}
impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { write!(f, "{}", self.x) }
}
impl<T: Clone> Wrapper<T> {
    fn get(&self) -> T { self.0.clone() }
}
mod geometry {
    pub fn origin() -> super::Point { super::Point::new(0, 0) }
    mod inner { struct Hidden; }
}
mod declared_elsewhere;
const LIMIT: usize = 10;
static mut COUNTER: u32 = 0;
type Pair = (i32, i32);
macro_rules! square { ($x:expr) => { $x * $x }; }
extern "C" { fn abs(x: i32) -> i32; }
fn main() {}
"#;

    #[test]
    fn rust_outline_names_kinds_and_nesting() {
        let expected = "\
Point [struct]
Bits [struct]
Shape [enum]
Area [trait]
  Unit [typealias]
  SIDES [constant]
  area [method]
  describe [method]
impl Point [impl]
  new [method]
  norm [method]
impl fmt::Display for Point [impl]
  fmt [method]
impl Wrapper<T> [impl]
  get [method]
geometry [module]
  origin [function]
  inner [module]
    Hidden [struct]
declared_elsewhere [module]
LIMIT [constant]
COUNTER [constant]
Pair [typealias]
square [macro]
abs [function]
main [function]
";
        assert_eq!(outline_of(Language::Rust, RUST), expected);
    }

    #[test]
    fn rust_ranges_cover_the_definition_and_select_the_name() {
        let symbols = outline(
            Language::Rust,
            RUST.as_bytes(),
            &parse(Language::Rust, RUST),
        );
        let point_impl = find(&symbols, "impl Point");
        assert!(slice(RUST, &point_impl.range).starts_with("impl Point {"));
        assert!(slice(RUST, &point_impl.range).ends_with("abs() }\n}"));
        assert_eq!(slice(RUST, &point_impl.selection_range), "Point");
        let norm = find(&point_impl.children, "norm");
        assert_eq!(
            slice(RUST, &norm.range),
            "fn norm(&self) -> i32 { self.x.abs() + self.y.abs() }"
        );
        assert_eq!(slice(RUST, &norm.selection_range), "norm");
        let display = find(&symbols, "impl fmt::Display for Point");
        assert_eq!(slice(RUST, &display.selection_range), "Point");
    }

    #[test]
    fn rust_impl_names_negative_impls() {
        assert_eq!(
            outline_of(Language::Rust, "impl !Send for Token {}\n"),
            "impl !Send for Token [impl]\n"
        );
    }

    #[test]
    fn rust_enclosing_symbol_inside_a_method_body() {
        let byte = offset(RUST, "Point { x, y }");
        let found = enclosing(Language::Rust, RUST, byte).expect("inside new");
        assert_eq!(found.path, vec!["impl Point", "new"]);
        assert_eq!(found.name, "new");
        assert_eq!(found.kind, SymbolKind::Method);
        assert!(found
            .text
            .starts_with("pub fn new(x: i32, y: i32) -> Self {"));
        assert!(found.text.ends_with("Point { x, y }\n    }"));
        assert_eq!(&RUST[found.range.clone()], found.text);
    }

    #[test]
    fn rust_enclosing_symbol_counts_the_end_byte_and_not_beyond() {
        let norm = span(
            RUST,
            "fn norm(&self) -> i32 { self.x.abs() + self.y.abs() }",
        );
        let at_end = enclosing(Language::Rust, RUST, norm.end).expect("just after the brace");
        assert_eq!(at_end.path, vec!["impl Point", "norm"]);
        // Between the method and the impl's closing brace: in the impl, not in the method.
        let after = enclosing(Language::Rust, RUST, norm.end + 1).expect("still in the impl");
        assert_eq!(after.path, vec!["impl Point"]);
        assert_eq!(after.kind, SymbolKind::Impl);
    }

    #[test]
    fn rust_enclosing_symbol_prefers_the_definition_that_starts_at_the_byte() {
        let source = "fn first() {}fn second() {}";
        let boundary = offset(source, "fn second");
        let found = enclosing(Language::Rust, source, boundary).expect("a symbol");
        assert_eq!(found.name, "second");
        let found = enclosing(Language::Rust, source, boundary - 1).expect("a symbol");
        assert_eq!(found.name, "first");
    }

    #[test]
    fn rust_enclosing_symbol_is_none_outside_every_symbol() {
        assert_eq!(
            enclosing(Language::Rust, RUST, offset(RUST, "std::fmt")),
            None
        );
        // The doc comment is not part of the struct's node.
        assert_eq!(
            enclosing(Language::Rust, RUST, offset(RUST, "A point.")),
            None
        );
    }

    #[test]
    fn rust_identifiers_by_kind_in_order_without_duplicates() {
        let source = r#"fn run<'a>(input: &'a Config) -> Result<Vec<u8>, Error> {
    // ignored_in_comment
    let total = input.count + input.count;
    let point = Point { x: total, y };
    'outer: loop { break 'outer; }
    println!("{} not_an_ident", self.label);
    Ok(Vec::with_capacity(total as usize))
}
"#;
        let body = offset(source, "{\n")..source.len();
        assert_eq!(
            identifiers(Language::Rust, source, body),
            vec![
                "total:value",
                "input:value",
                "count:field",
                "point:value",
                "Point:type",
                "x:field",
                "y:value",
                "println:value",
                // A macro's arguments are a token tree: no field expressions in there.
                "label:value",
                "Ok:value",
                "Vec:type",
                "with_capacity:value",
            ]
        );
        let signature = 0..offset(source, "{\n");
        assert_eq!(
            identifiers(Language::Rust, source, signature),
            vec![
                "run:value",
                "input:value",
                "Config:type",
                "Result:type",
                "Vec:type",
                "Error:type"
            ]
        );
    }

    #[test]
    fn rust_path_segments_are_modules_or_capitalised_types() {
        let source =
            "use std::collections::HashMap;\nfn f() { Self::make(); crate::util::go(); }\n";
        assert_eq!(
            identifiers(Language::Rust, source, 0..source.len()),
            vec![
                "std:module",
                "collections:module",
                "HashMap:value",
                "f:value",
                "Self:type",
                "make:value",
                "util:module",
                "go:value",
            ]
        );
    }

    // ----- Python -----------------------------------------------------------------------

    const PYTHON: &str = r#"import os

class Repository(Base):
    """Stores things."""

    limit = 10

    def __init__(self, path):
        self.path = path

    @staticmethod
    def create(path: str) -> "Repository":
        def inner():
            pass
        return Repository(path)

    class Meta:
        def describe(self):
            return "meta"

@cache
def load(name):
    return os.path.join(name)

async def fetch():
    pass
"#;

    #[test]
    fn python_outline_names_kinds_and_nesting() {
        let expected = "\
Repository [class]
  __init__ [method]
  create [method]
  Meta [class]
    describe [method]
load [function]
fetch [function]
";
        assert_eq!(outline_of(Language::Python, PYTHON), expected);
    }

    #[test]
    fn python_decorated_definitions_include_their_decorators() {
        let symbols = outline(
            Language::Python,
            PYTHON.as_bytes(),
            &parse(Language::Python, PYTHON),
        );
        let load = find(&symbols, "load");
        assert_eq!(
            slice(PYTHON, &load.range),
            "@cache\ndef load(name):\n    return os.path.join(name)"
        );
        assert_eq!(slice(PYTHON, &load.selection_range), "load");
        let create = find(&find(&symbols, "Repository").children, "create");
        assert!(slice(PYTHON, &create.range).starts_with("@staticmethod\n    def create("));
    }

    #[test]
    fn python_enclosing_symbol_inside_a_method_body() {
        let found = enclosing(Language::Python, PYTHON, offset(PYTHON, "self.path = path"))
            .expect("inside __init__");
        assert_eq!(found.path, vec!["Repository", "__init__"]);
        assert_eq!(found.kind, SymbolKind::Method);
        assert_eq!(
            found.text,
            "def __init__(self, path):\n        self.path = path"
        );
        // A nested function is not an outline symbol: its body belongs to `create`.
        let nested =
            enclosing(Language::Python, PYTHON, offset(PYTHON, "pass")).expect("inside create");
        assert_eq!(nested.path, vec!["Repository", "create"]);
        let in_class =
            enclosing(Language::Python, PYTHON, offset(PYTHON, "limit")).expect("inside the class");
        assert_eq!(in_class.path, vec!["Repository"]);
        assert_eq!(
            enclosing(Language::Python, PYTHON, offset(PYTHON, "import os")),
            None
        );
    }

    #[test]
    fn python_class_names_and_bases_are_types() {
        let source = "class Repo(Base, metaclass=Meta):\n    pass\n";
        assert_eq!(
            identifiers(Language::Python, source, 0..source.len()),
            vec!["Repo:type", "Base:type", "metaclass:field", "Meta:type"]
        );
    }

    #[test]
    fn python_identifiers_by_kind() {
        let source = "from pkg.sub import thing\n\
                      def f(items: List[Item], n=3) -> Optional[Item]:\n    \
                      # not_this\n    \
                      return thing.pick(items, count=n, label='no_ident').value\n";
        assert_eq!(
            identifiers(Language::Python, source, 0..source.len()),
            vec![
                "pkg:module",
                "sub:module",
                "thing:value",
                "f:value",
                "items:value",
                "List:type",
                "Item:type",
                "n:value",
                "Optional:type",
                "pick:field",
                "count:field",
                "label:field",
                "value:field",
            ]
        );
    }

    // ----- TypeScript, TSX, JavaScript -------------------------------------------------

    const TYPESCRIPT: &str = r#"import { Injectable } from "core";

export interface Shape {
    area(): number;
    name: string;
}
enum Color { Red, Green }
type Id = string | number;
namespace Geometry {
    export function distance(a: Point, b: Point): number { return 0; }
}
export abstract class Base {
    abstract describe(): string;
}
export class Greeter extends Base {
    private greeting: string;
    constructor(message: string) { super(); this.greeting = message; }
    greet(): string {
        return "Hello, " + this.greeting;
    }
    describe(): string { return "greeter"; }
    onClick = () => this.greet();
}
function* ids() { yield 1; }
const add = (a: number, b: number) => a + b;
export const multiply = function (a: number, b: number) { return a * b; };
const Anonymous = class { run() {} };
let counter = 0;
declare function external(): void;
"#;

    #[test]
    fn typescript_outline_names_kinds_and_nesting() {
        let expected = "\
Shape [interface]
  area [method]
Color [enum]
Id [typealias]
Geometry [module]
  distance [function]
Base [class]
  describe [method]
Greeter [class]
  constructor [method]
  greet [method]
  describe [method]
  onClick [method]
ids [function]
add [function]
multiply [function]
Anonymous [class]
  run [method]
external [function]
";
        assert_eq!(outline_of(Language::TypeScript, TYPESCRIPT), expected);
        // The TSX grammar is a superset: the same file outlines the same way.
        assert_eq!(outline_of(Language::Tsx, TYPESCRIPT), expected);
    }

    #[test]
    fn typescript_exported_definitions_include_export() {
        let symbols = outline(
            Language::TypeScript,
            TYPESCRIPT.as_bytes(),
            &parse(Language::TypeScript, TYPESCRIPT),
        );
        let multiply = find(&symbols, "multiply");
        assert_eq!(
            slice(TYPESCRIPT, &multiply.range),
            "export const multiply = function (a: number, b: number) { return a * b; };"
        );
        assert_eq!(slice(TYPESCRIPT, &multiply.selection_range), "multiply");
        let add = find(&symbols, "add");
        assert!(slice(TYPESCRIPT, &add.range).starts_with("const add = "));
    }

    #[test]
    fn a_declaration_of_several_names_keeps_each_range_to_its_own_declarator() {
        let source = "const first = () => 1, second = 2;\nconst only = () => 3;\n";
        let tree = parse(Language::TypeScript, source);
        let symbols = outline(Language::TypeScript, source.as_bytes(), &tree);
        assert_eq!(render(&symbols), "first [function]\nonly [function]\n");
        assert_eq!(slice(source, &symbols[0].range), "first = () => 1");
        assert_eq!(slice(source, &symbols[1].range), "const only = () => 3;");
    }

    #[test]
    fn typescript_enclosing_symbol_inside_a_method_body() {
        let byte = offset(TYPESCRIPT, "\"Hello, \"");
        let found = enclosing(Language::TypeScript, TYPESCRIPT, byte).expect("inside greet");
        assert_eq!(found.path, vec!["Greeter", "greet"]);
        assert_eq!(found.kind, SymbolKind::Method);
        assert_eq!(
            found.text,
            "greet(): string {\n        return \"Hello, \" + this.greeting;\n    }"
        );
        assert_eq!(
            enclosing(
                Language::TypeScript,
                TYPESCRIPT,
                offset(TYPESCRIPT, "let counter")
            ),
            None
        );
    }

    #[test]
    fn typescript_identifiers_by_kind() {
        let source = "function f(user: models.User, opts: Options<Id>): string {\n  \
                      const { name } = user;\n  \
                      return this.format(name, { name, size: opts.size }) as string;\n}\n";
        assert_eq!(
            identifiers(Language::TypeScript, source, 0..source.len()),
            vec![
                "f:value",
                "user:value",
                "models:module",
                "User:type",
                "opts:value",
                "Options:type",
                "Id:type",
                "name:field",
                "format:field",
                "name:value",
                "size:field",
            ]
        );
    }

    #[test]
    fn tsx_components_and_jsx() {
        let source = "export function App({ title }: Props) {\n  \
                      return <div className=\"app\"><Header title={title} /></div>;\n}\n\
                      export const Header = ({ title }: Props) => <h1>{title}</h1>;\n";
        assert_eq!(
            outline_of(Language::Tsx, source),
            "App [function]\nHeader [function]\n"
        );
        let body = span(
            source,
            "<div className=\"app\"><Header title={title} /></div>",
        );
        assert_eq!(
            identifiers(Language::Tsx, source, body),
            vec![
                "className:field",
                "Header:value",
                "title:field",
                "title:value"
            ]
        );
    }

    #[test]
    fn javascript_outline_and_identifiers() {
        let source = r#"class Counter extends Component {
  static initial = 0;
  handle = () => this.increment();
  increment() { this.count += 1; }
  #reset() {}
}
function* range(n) {}
var legacy = function () {};
const notAFunction = 42;
export default function main() { return new Counter({ range, step: 1 }); }
"#;
        let expected = "\
Counter [class]
  handle [method]
  increment [method]
  #reset [method]
range [function]
legacy [function]
main [function]
";
        assert_eq!(outline_of(Language::JavaScript, source), expected);
        let call = span(source, "new Counter({ range, step: 1 })");
        assert_eq!(
            identifiers(Language::JavaScript, source, call),
            vec!["Counter:value", "range:value", "step:field"]
        );
        let class = span(source, "class Counter extends Component");
        assert_eq!(
            identifiers(Language::JavaScript, source, class),
            vec!["Counter:type", "Component:value"]
        );
    }

    // ----- Go ---------------------------------------------------------------------------

    const GO: &str = r#"package server

import (
	"fmt"
	"net/http"
)

type Server struct {
	addr string
}

type Handler interface {
	Serve(w http.ResponseWriter) error
}

type Port int
type Alias = Server
type Stack[T any] struct{ items []T }

const (
	DefaultPort, FallbackPort = 8080, 8081
	Name = "server"
)

func New(addr string) *Server {
	return &Server{addr: addr}
}

func (s *Server) Start() error {
	fmt.Println("starting", s.addr)
	return nil
}

func (s Server) Addr() string { return s.addr }

func (s *Stack[T]) Push(item T) { s.items = append(s.items, item) }
"#;

    #[test]
    fn go_outline_names_kinds_and_nesting() {
        let expected = "\
Server [struct]
Handler [interface]
Port [typealias]
Alias [typealias]
Stack [struct]
DefaultPort [constant]
FallbackPort [constant]
Name [constant]
New [function]
(*Server) Start [method]
(Server) Addr [method]
(*Stack[T]) Push [method]
";
        assert_eq!(outline_of(Language::Go, GO), expected);
    }

    #[test]
    fn go_ranges_include_the_declaration_keyword_when_alone() {
        let symbols = outline(Language::Go, GO.as_bytes(), &parse(Language::Go, GO));
        assert_eq!(slice(GO, &find(&symbols, "Port").range), "type Port int");
        assert_eq!(
            slice(GO, &find(&symbols, "Name").range),
            "Name = \"server\""
        );
        let start = find(&symbols, "(*Server) Start");
        assert_eq!(slice(GO, &start.selection_range), "Start");
    }

    #[test]
    fn go_enclosing_symbol_inside_a_method_body() {
        let found = enclosing(Language::Go, GO, offset(GO, "fmt.Println")).expect("inside Start");
        assert_eq!(found.path, vec!["(*Server) Start"]);
        assert_eq!(found.kind, SymbolKind::Method);
        assert!(found.text.starts_with("func (s *Server) Start() error {"));
        assert!(found.text.ends_with("return nil\n}"));
        assert_eq!(enclosing(Language::Go, GO, offset(GO, "net/http")), None);
    }

    #[test]
    fn go_identifiers_by_kind() {
        let source = "package p\n\
                      func run(w http.ResponseWriter, cfg *Config) (int, error) {\n\
                      \tvar _ = cfg\n\
                      \tfmt.Println(cfg.Name, cfg.Name, nil, true)\n\
                      \treturn len(cfg.Items), nil\n}\n";
        let function = offset(source, "func")..source.len();
        assert_eq!(
            identifiers(Language::Go, source, function),
            vec![
                "run:value",
                "w:value",
                "http:module",
                "ResponseWriter:type",
                "cfg:value",
                "Config:type",
                "fmt:value",
                "Println:field",
                "Name:field",
                "len:value",
                "Items:field",
            ]
        );
    }

    // ----- Robustness -------------------------------------------------------------------

    #[test]
    fn syntax_errors_keep_the_symbols_that_parse() {
        let cases = [
            (
                Language::Rust,
                "fn before() {}\nfn broken( {\nstruct After { x: u8 }\nfn last() {}\n",
                vec!["before", "After", "last"],
            ),
            (
                Language::Python,
                "def before():\n    pass\n\ndef broken(:\n    pass\n\ndef last():\n    pass\n",
                vec!["before", "last"],
            ),
            (
                // A nameless class at the end turns everything before it into an ERROR.
                Language::Python,
                "class A:\n    def m(self):\n        pass\n\ndef f(x):\n    return x\n\nclass :\n    pass\n",
                vec!["A", "  m", "f"],
            ),
            (
                Language::TypeScript,
                "function before() {}\nfoo(;\nclass Last { m() {} }\n",
                vec!["before", "Last"],
            ),
            (
                Language::JavaScript,
                "function before() {}\nconst = ;\nfunction last() {}\n",
                vec!["before", "last"],
            ),
            (
                Language::Go,
                "package p\nfunc before() {}\nfunc broken( {\n}\nfunc last() {}\n",
                vec!["before", "last"],
            ),
        ];
        for (language, source, expected) in cases {
            let tree = parse(language, source);
            assert!(
                tree.root_node().has_error(),
                "{language:?} should not parse cleanly"
            );
            let rendered = render(&outline(language, source.as_bytes(), &tree));
            // Each expected entry is a rendered line's start; indentation marks nesting.
            for name in expected {
                assert!(
                    rendered
                        .lines()
                        .any(|line| line.starts_with(&format!("{name} ["))),
                    "{language:?}: {name} missing from\n{rendered}"
                );
            }
        }
    }

    #[test]
    fn empty_source_has_nothing() {
        for language in ALL_GRAMMARS {
            let tree = parse(language, "");
            assert!(outline(language, b"", &tree).is_empty(), "{language:?}");
            assert_eq!(
                enclosing_symbol(language, b"", &tree, 0),
                None,
                "{language:?}"
            );
            assert_eq!(
                enclosing_symbol(language, b"", &tree, 99),
                None,
                "{language:?}"
            );
            assert!(referenced_identifiers(language, b"", &tree, 0..10).is_empty());
        }
    }

    #[test]
    fn plain_text_has_nothing_even_with_a_tree() {
        let source = "fn main() { let x = 1; }";
        let tree = parse(Language::Rust, source);
        let bytes = source.as_bytes();
        assert!(outline(Language::PlainText, bytes, &tree).is_empty());
        assert_eq!(
            enclosing_symbol(Language::PlainText, bytes, &tree, 12),
            None
        );
        assert!(referenced_identifiers(Language::PlainText, bytes, &tree, 0..24).is_empty());
    }

    #[test]
    fn a_byte_past_the_end_is_clamped_to_the_end() {
        // The file ends at the closing brace, so the clamped byte is still in `main`.
        let flush = "fn main() {}";
        let found = enclosing(Language::Rust, flush, 1_000).expect("clamped into main");
        assert_eq!(found.name, "main");
        assert_eq!(
            enclosing(Language::Rust, flush, usize::MAX).map(|s| s.name),
            Some("main".into())
        );
        // With trailing blank lines the end of the file is outside every symbol.
        assert_eq!(enclosing(Language::Rust, "fn main() {}\n\n", 1_000), None);
    }

    #[test]
    fn reversed_and_out_of_bounds_ranges_are_clamped() {
        let source = "fn f(a: Alpha) -> Beta { gamma(a) }";
        let forward = identifiers(Language::Rust, source, 5..30);
        assert_eq!(
            forward,
            vec!["a:value", "Alpha:type", "Beta:type", "gamma:value"]
        );
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = identifiers(Language::Rust, source, 30..5);
        assert_eq!(reversed, forward);
        assert_eq!(
            identifiers(Language::Rust, source, 0..usize::MAX),
            identifiers(Language::Rust, source, 0..source.len())
        );
        assert!(identifiers(Language::Rust, source, 1_000..2_000).is_empty());
    }

    #[test]
    fn an_empty_range_is_a_cursor_touching_identifiers() {
        let source = "fn f() { alpha + beta }";
        let after_alpha = offset(source, " + beta");
        assert_eq!(
            identifiers(Language::Rust, source, after_alpha..after_alpha),
            vec!["alpha:value"]
        );
        let inside_beta = offset(source, "eta");
        assert_eq!(
            identifiers(Language::Rust, source, inside_beta..inside_beta),
            vec!["beta:value"]
        );
    }

    #[test]
    fn a_stale_tree_for_a_longer_source_does_not_panic() {
        for language in ALL_GRAMMARS {
            let long = match language {
                Language::Rust => RUST,
                Language::Python => PYTHON,
                Language::Go => GO,
                _ => TYPESCRIPT,
            };
            let tree = parse(language, long);
            let short = &long.as_bytes()[..long.len() / 3];
            for symbol in outline(language, short, &tree) {
                assert!(symbol.range.end <= short.len(), "{language:?}");
                assert!(symbol.selection_range.end <= short.len(), "{language:?}");
            }
            for byte in [0, short.len() / 2, short.len(), long.len()] {
                if let Some(found) = enclosing_symbol(language, short, &tree, byte) {
                    assert!(found.text.len() <= short.len());
                }
            }
            referenced_identifiers(language, short, &tree, 0..long.len());
        }
    }

    #[test]
    fn every_truncation_of_the_samples_answers_within_bounds() {
        fn assert_within(symbols: &[Symbol], len: usize) {
            for symbol in symbols {
                assert!(symbol.range.start <= symbol.range.end && symbol.range.end <= len);
                assert!(symbol.selection_range.end <= len);
                assert_within(&symbol.children, len);
            }
        }
        let samples = [
            (Language::Rust, RUST),
            (Language::Python, PYTHON),
            (Language::TypeScript, TYPESCRIPT),
            (Language::Tsx, TYPESCRIPT),
            (Language::JavaScript, TYPESCRIPT),
            (Language::Go, GO),
        ];
        for (language, sample) in samples {
            // Cutting mid-token and mid-block leaves every kind of unfinished syntax.
            for cut in (0..sample.len()).step_by(11) {
                let source = &sample.as_bytes()[..cut];
                let tree = parse(language, &String::from_utf8_lossy(source));
                assert_within(&outline(language, source, &tree), source.len());
                for byte in [0, cut / 2, cut, cut + 5] {
                    if let Some(found) = enclosing_symbol(language, source, &tree, byte) {
                        assert!(found.range.end <= source.len());
                    }
                }
                referenced_identifiers(language, source, &tree, cut..0);
            }
        }
    }

    #[test]
    fn deep_nesting_does_not_overflow_the_stack() {
        let depth = 3_000;
        let source = format!(
            "{}fn leaf() {{ x }}{}",
            "mod m { ".repeat(depth),
            "}".repeat(depth)
        );
        let tree = parse(Language::Rust, &source);
        let found = enclosing(Language::Rust, &source, offset(&source, "x }")).expect("in leaf");
        assert_eq!(found.path.len(), depth + 1);
        assert_eq!(found.path.last().map(String::as_str), Some("leaf"));
        assert_eq!(
            referenced_identifiers(Language::Rust, source.as_bytes(), &tree, 0..source.len()),
            vec![
                Identifier {
                    name: "m".into(),
                    kind: IdentifierKind::Value
                },
                Identifier {
                    name: "leaf".into(),
                    kind: IdentifierKind::Value
                },
                Identifier {
                    name: "x".into(),
                    kind: IdentifierKind::Value
                },
            ]
        );
    }
}
