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
    /// The path written before it, as written: `email.utils` of `email.utils.parseaddr`,
    /// `Runtime` of `Runtime::new` (Python's attributes, Rust's paths); says where the
    /// name is defined.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qualifier: Option<String>,
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

/// How deep the outline nests: the members of a symbol this deep are listed after it, beside
/// it, instead of inside it. Code nests a few levels; a file of thousands of nested modules
/// must still give a tree that can be dropped, cloned and serialized by recursion.
pub const MAX_OUTLINE_DEPTH: usize = 64;

/// Nested outline of the document in source order (at most [`MAX_OUTLINE_DEPTH`] deep).
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
                None => return capped(symbols),
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

/// The outline cut to [`MAX_OUTLINE_DEPTH`]: at that depth each symbol is followed by its
/// members, and theirs, in source order, beside it. Without recursion: the tree may be as
/// deep as the file nests, and is not dropped until its deep levels are taken out.
fn capped(mut symbols: Vec<Symbol>) -> Vec<Symbol> {
    let mut levels: Vec<(&mut Vec<Symbol>, usize)> = vec![(&mut symbols, 0)];
    while let Some((level, depth)) = levels.pop() {
        if depth < MAX_OUTLINE_DEPTH {
            levels.extend(level.iter_mut().map(|s| (&mut s.children, depth + 1)));
            continue;
        }
        if level.iter().all(|s| s.children.is_empty()) {
            continue;
        }
        let nested = std::mem::take(level);
        for mut symbol in nested {
            let mut below = vec![std::mem::take(&mut symbol.children).into_iter()];
            level.push(symbol);
            while let Some(members) = below.last_mut() {
                match members.next() {
                    Some(mut member) => {
                        let inner = std::mem::take(&mut member.children);
                        level.push(member);
                        below.push(inner.into_iter());
                    }
                    None => {
                        below.pop();
                    }
                }
            }
        }
    }
    symbols
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
    // where the next begins, the cursor belongs to the one it is in front of; the last one
    // that does, so that of the symbols listed beside their members below the outline's
    // depth, the innermost is taken.
    while let Some(index) = level
        .iter()
        .rposition(|s| s.range.start <= byte && byte < s.range.end)
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
    // A negative impl's `!` is an anonymous token just before the trait. Looked for among
    // the impl's own children: `prev_sibling` searches down from the root, which costs the
    // tree's depth for each impl.
    let mut cursor = impl_item.walk();
    let mut before_trait = None;
    for child in impl_item.children(&mut cursor) {
        if child.id() == trait_node.id() {
            break;
        }
        before_trait = Some(child.kind());
    }
    let negation = match before_trait {
        Some("!") => "!",
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
                    let qualifier = qualifier_text(source, ancestors.last(), field);
                    found.push(Identifier {
                        name,
                        kind,
                        qualifier,
                    });
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
                    qualifier: qualifier_of(family, node, source.len()),
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
    /// A qualified name's qualifier (`a.b` of the attribute `a.b.c`, `A` of the path
    /// `A::c`), when it is a plain path of names.
    qualifier: Option<Range<usize>>,
}

/// The qualifier of a name that is a qualified name's last part (its parent's field
/// `attribute` or `name`).
fn qualifier_text(source: &[u8], parent: Option<&Ancestor>, field: Option<&str>) -> Option<String> {
    let range = parent?.qualifier.clone()?;
    matches!(field, Some("attribute" | "name"))
        .then(|| String::from_utf8_lossy(&source[range]).into_owned())
}

/// The qualifier's bytes of a Python attribute or a Rust path whose qualifier is names
/// only (not `f().x`, `<T as U>::x`).
fn qualifier_of(family: Family, node: Node, len: usize) -> Option<Range<usize>> {
    let field = match (family, node.kind()) {
        (Family::Python, "attribute") => "object",
        (Family::Rust, "scoped_identifier" | "scoped_type_identifier") => "path",
        _ => return None,
    };
    let qualifier = node.child_by_field_name(field)?;
    let mut at = qualifier;
    // Down the left spine: every step a name or a path of names; a long chain is not a
    // module path (and must not make a deep file quadratic).
    for _ in 0..MAX_QUALIFIER_PARTS {
        match at.kind() {
            kind if is_name_kind(kind) => break,
            "attribute" | "scoped_identifier" => {
                at = at
                    .child_by_field_name("object")
                    .or_else(|| at.child_by_field_name("path"))?;
            }
            _ => return None,
        }
    }
    Some(clamped_node_range(qualifier, len)).filter(|_| is_name_kind(at.kind()))
}

const MAX_QUALIFIER_PARTS: usize = 8;

fn is_name_kind(kind: &str) -> bool {
    matches!(
        kind,
        "identifier" | "type_identifier" | "crate" | "super" | "self"
    )
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
pub(crate) const GO_PREDECLARED_TYPES: &[&str] = &[
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

/// The kind of name an identifier node is, by its language's rules; None when it names
/// nothing a reader would look up.
fn identifier_kind(
    family: Family,
    source: &[u8],
    node: Node,
    field: Option<&str>,
    ancestors: &[Ancestor],
) -> Option<IdentifierKind> {
    let parent_kind = ancestors.last().map_or("", |p| p.kind);
    let starts_uppercase = source
        .get(node.start_byte())
        .is_some_and(|b| b.is_ascii_uppercase());
    match family {
        Family::Rust => rust_identifier_kind(node.kind(), field, ancestors, starts_uppercase),
        Family::Python => python_identifier_kind(node.kind(), field, ancestors.last()),
        Family::Script => script_identifier_kind(node.kind(), field, parent_kind, starts_uppercase),
        Family::Go => go_identifier_kind(node.kind(), node_bytes(source, node)),
    }
}

fn rust_identifier_kind(
    kind: &str,
    field: Option<&str>,
    ancestors: &[Ancestor],
    starts_uppercase: bool,
) -> Option<IdentifierKind> {
    use IdentifierKind::{Field, Module, Type, Value};
    let parent_kind = ancestors.last().map_or("", |p| p.kind);
    match kind {
        // Lifetimes and loop labels are spelled with an identifier but name neither.
        "identifier" if matches!(parent_kind, "lifetime" | "label") => None,
        // A path segment before `::` is a module, or by convention a type when capitalised
        // (`Self::new`, `Vec::with_capacity`).
        "identifier" if is_rust_path_segment(field, ancestors) => {
            Some(if starts_uppercase { Type } else { Module })
        }
        "identifier" => Some(Value),
        "type_identifier" => Some(Type),
        "field_identifier" | "shorthand_field_identifier" => Some(Field),
        _ => None,
    }
}

fn python_identifier_kind(
    kind: &str,
    field: Option<&str>,
    parent: Option<&Ancestor>,
) -> Option<IdentifierKind> {
    use IdentifierKind::{Field, Type, Value};
    let parent_kind = parent.map_or("", |p| p.kind);
    match kind {
        "identifier" if parent_kind == "keyword_argument" && field == Some("name") => Some(Field),
        "identifier" if parent_kind == "class_definition" && field == Some("name") => Some(Type),
        "identifier" => match parent.and_then(|p| p.implied) {
            Some(implied) => Some(implied),
            None if parent_kind == "attribute" && field == Some("attribute") => Some(Field),
            None => Some(Value),
        },
        _ => None,
    }
}

/// TypeScript's, TSX's and JavaScript's rules.
fn script_identifier_kind(
    kind: &str,
    field: Option<&str>,
    parent_kind: &str,
    starts_uppercase: bool,
) -> Option<IdentifierKind> {
    use IdentifierKind::{Field, Module, Type, Value};
    match kind {
        // `<div>` names an intrinsic element, `<Foo>` a component.
        "identifier"
            if field == Some("name") && parent_kind.starts_with("jsx_") && !starts_uppercase =>
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
            if matches!(parent_kind, "class_declaration" | "class") && field == Some("name") =>
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
    }
}

/// `text` is the node's source.
fn go_identifier_kind(kind: &str, text: &[u8]) -> Option<IdentifierKind> {
    use IdentifierKind::{Field, Module, Type, Value};
    match kind {
        // `_` parses as an identifier in some positions (`var _ = x`) but binds nothing.
        "identifier" if text == b"_" => None,
        "identifier" => Some(Value),
        "type_identifier" => {
            let predeclared = GO_PREDECLARED_TYPES.iter().any(|t| t.as_bytes() == text);
            (!predeclared).then_some(Type)
        }
        "field_identifier" => Some(Field),
        "package_identifier" => Some(Module),
        _ => None,
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
mod tests;
