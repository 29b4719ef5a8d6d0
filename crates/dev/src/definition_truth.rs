//! What the code itself says a name means, for the definitions eval's expectations and the
//! `find_symbol` precision check: written apart from the symbol index, with none of its
//! bounds or filters, so that what the index misses shows.
//!
//! - Items written inside macro invocations (`cfg_rt! { pub fn spawn… }`, a wrapper
//!   macro's `define_x! { pub struct Foo … }`): every invocation's token tree is parsed
//!   again as Rust source, nested ones too.
//! - Python names reached through a module: `import pkg.mod` then `pkg.mod.Name`,
//!   `from . import mod` then `mod.Name`, `from .mod import Name` then `Name`; the module is
//!   followed to its file in the workspace.
//! - Rust's `Type::name`: the `name` defined in an `impl Type` block.

use std::collections::HashMap;

use agentls_core::language::Language;
use agentls_core::syntax::{self, Symbol, SymbolKind};
use tree_sitter::{Node, Tree};

/// Nested macro invocations followed (the index follows fewer: a difference shows).
const MAX_MACRO_DEPTH: usize = 6;

/// A definition read from a macro invocation's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacroItem {
    pub name: String,
    pub kind: SymbolKind,
    /// 0-based, in the file.
    pub line: usize,
    /// The enclosing definition inside the macro's body ("impl Foo"), if any.
    pub container: Option<String>,
}

/// Every definition inside the file's macro invocations (Rust; nothing elsewhere).
pub fn macro_items(language: Language, source: &[u8], tree: &Tree) -> Vec<MacroItem> {
    let mut found = Vec::new();
    if language == Language::Rust {
        items_in_macros(source, tree, 0, 0, &mut found);
    }
    found
}

fn items_in_macros(
    source: &[u8],
    tree: &Tree,
    line_offset: usize,
    depth: usize,
    found: &mut Vec<MacroItem>,
) {
    if depth >= MAX_MACRO_DEPTH {
        return;
    }
    let mut parser = tree_sitter::Parser::new();
    let Some(grammar) = Language::Rust.grammar() else {
        return;
    };
    if parser.set_language(&grammar).is_err() {
        return;
    }
    for body in macro_bodies(tree.root_node()) {
        let inner = &source[body.start_byte() + 1..body.end_byte().saturating_sub(1)];
        let Some(inner_tree) = parser.parse(inner, None) else {
            continue;
        };
        let offset = line_offset + body.start_position().row;
        let outline = syntax::outline(Language::Rust, inner, &inner_tree);
        let mut stack: Vec<(&Symbol, Option<&str>)> = outline.iter().map(|s| (s, None)).collect();
        while let Some((symbol, container)) = stack.pop() {
            let line = inner[..symbol.selection_range.start.min(inner.len())]
                .iter()
                .filter(|b| **b == b'\n')
                .count();
            found.push(MacroItem {
                name: symbol.name.clone(),
                kind: symbol.kind,
                line: offset + line,
                container: container.map(str::to_string),
            });
            stack.extend(
                symbol
                    .children
                    .iter()
                    .map(|c| (c, Some(symbol.name.as_str()))),
            );
        }
        items_in_macros(inner, &inner_tree, offset, depth + 1, found);
    }
}

/// The token trees of the outermost macro invocations under `root` (nested ones are found
/// when their body is parsed).
fn macro_bodies(root: Node) -> Vec<Node> {
    let mut bodies = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if node.kind() == "macro_invocation" {
            let mut cursor = node.walk();
            let body = node
                .children(&mut cursor)
                .find(|c| c.kind() == "token_tree" && c.end_byte() - c.start_byte() >= 2);
            bodies.extend(body);
            continue;
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    bodies
}

/// A name used after a qualifier: `q.name` (Python) or `q::name` (Rust).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct QualifiedUse {
    /// As written: `email.utils`, `errors`, `Runtime`, `crate::io`.
    pub qualifier: String,
    pub name: String,
    /// Called: `q.name(…)`.
    pub call: bool,
    /// 0-based.
    pub line: usize,
}

/// The qualified uses inside `range` whose qualifier is a plain path of names.
pub fn qualified_uses(
    language: Language,
    source: &[u8],
    tree: &Tree,
    range: std::ops::Range<usize>,
) -> Vec<QualifiedUse> {
    let (kind, object, name) = match language {
        Language::Python => ("attribute", "object", "attribute"),
        Language::Rust => ("scoped_identifier", "path", "name"),
        _ => return Vec::new(),
    };
    let mut found = Vec::new();
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        if node.end_byte() <= range.start || node.start_byte() >= range.end {
            continue;
        }
        if node.kind() == kind {
            let parts = node
                .child_by_field_name(object)
                .zip(node.child_by_field_name(name));
            if let Some((object, name)) = parts.filter(|(o, _)| is_plain_path(*o)) {
                let text = |n: Node| String::from_utf8_lossy(&source[n.byte_range()]).into_owned();
                let call = node.parent().is_some_and(|p| {
                    matches!(p.kind(), "call" | "call_expression")
                        && p.child_by_field_name("function") == Some(node)
                });
                found.push(QualifiedUse {
                    qualifier: text(object),
                    name: text(name),
                    call,
                    line: node.start_position().row,
                });
            }
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    found.sort_by_key(|u| u.line);
    found
}

/// A name, or names joined by `.` or `::`: what a module or type path is written as.
fn is_plain_path(node: Node) -> bool {
    match node.kind() {
        "identifier" | "type_identifier" | "crate" | "super" | "self" => true,
        "attribute" | "scoped_identifier" => {
            let object = node
                .child_by_field_name("object")
                .or_else(|| node.child_by_field_name("path"));
            object.is_some_and(is_plain_path)
        }
        _ => false,
    }
}

/// What a Python file's imports bind, as dotted module names of the workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PythonImports {
    /// Local name → the module it is (`import a.b` binds `a` → "a"; `import a.b as x`
    /// binds `x` → "a.b"; `from a import b` binds `b` → "a.b", which may be a module).
    pub modules: HashMap<String, String>,
    /// Local name → (module, name in it), for `from a import b` (b may be a name in a).
    pub names: HashMap<String, (String, String)>,
}

/// The dotted module name of a file of a Python package whose directory is `package`
/// (`email` + `mime/text.py` → `email.mime.text`; `__init__.py` is its directory).
pub fn python_module(package: &str, path: &str) -> String {
    let mut parts: Vec<&str> = std::iter::once(package).chain(path.split('/')).collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.strip_suffix(".py").unwrap_or(last);
    if stem != "__init__" {
        parts.push(stem);
    }
    parts.join(".")
}

/// The imports of a Python file whose module is `module` (`is_package`: it is an
/// `__init__.py`, so `from . import x` is relative to itself).
pub fn python_imports(source: &[u8], tree: &Tree, module: &str, is_package: bool) -> PythonImports {
    let mut imports = PythonImports::default();
    let text = |n: Node| String::from_utf8_lossy(&source[n.byte_range()]).into_owned();
    let root = tree.root_node();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        match node.kind() {
            "import_statement" => {
                let mut cursor = node.walk();
                for name in node.children_by_field_name("name", &mut cursor) {
                    let (dotted, alias) = aliased(name, &text);
                    match alias {
                        Some(alias) => imports.modules.insert(alias, dotted),
                        None => {
                            let first = dotted.split('.').next().unwrap_or_default().to_string();
                            imports.modules.insert(first.clone(), first)
                        }
                    };
                }
            }
            "import_from_statement" => {
                let Some(from) = node.child_by_field_name("module_name") else {
                    continue;
                };
                let base = absolute_module(&text(from), module, is_package);
                let mut cursor = node.walk();
                for name in node.children_by_field_name("name", &mut cursor) {
                    let (original, alias) = aliased(name, &text);
                    let local = alias.unwrap_or_else(|| original.clone());
                    let full = format!("{base}.{original}");
                    imports.modules.insert(local.clone(), full);
                    imports.names.insert(local, (base.clone(), original));
                }
            }
            _ => {
                let mut cursor = node.walk();
                stack.extend(node.children(&mut cursor));
            }
        }
    }
    imports
}

/// `a.b as c` → ("a.b", Some("c")); `a.b` → ("a.b", None).
fn aliased(node: Node, text: &dyn Fn(Node) -> String) -> (String, Option<String>) {
    if node.kind() == "aliased_import" {
        let name = node
            .child_by_field_name("name")
            .map(text)
            .unwrap_or_default();
        (name, node.child_by_field_name("alias").map(text))
    } else {
        (text(node), None)
    }
}

/// `..x` from module `a.b.c` → `a.x`; an absolute name as it is.
fn absolute_module(from: &str, module: &str, is_package: bool) -> String {
    let dots = from.chars().take_while(|c| *c == '.').count();
    if dots == 0 {
        return from.to_string();
    }
    let mut parts: Vec<&str> = module.split('.').collect();
    // A module's package is its parent; a package's (`__init__`) is itself.
    let up = if is_package { dots - 1 } else { dots };
    parts.truncate(parts.len().saturating_sub(up));
    let rest = &from[dots..];
    if !rest.is_empty() {
        parts.push(rest);
    }
    parts.join(".")
}

/// The module a qualifier names through the file's imports: `email.utils` with `import
/// email.utils` → "email.utils"; `errors` with `from . import errors` → "email.errors".
pub fn qualifier_module(imports: &PythonImports, qualifier: &str) -> Option<String> {
    let (first, rest) = match qualifier.split_once('.') {
        Some((first, rest)) => (first, Some(rest)),
        None => (qualifier, None),
    };
    let base = imports.modules.get(first)?;
    Some(match rest {
        Some(rest) => format!("{base}.{rest}"),
        None => base.clone(),
    })
}

/// The type an impl block is for: `impl fmt::Display for Foo<T>` → "Foo".
pub fn impl_type(container: &str) -> Option<&str> {
    let rest = container.strip_prefix("impl ")?;
    let ty = rest.rsplit_once(" for ").map_or(rest, |(_, ty)| ty);
    let ty = ty.split('<').next().unwrap_or(ty).trim();
    Some(ty.rsplit("::").next().unwrap_or(ty))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(language: Language, source: &str) -> Tree {
        let mut parser = tree_sitter::Parser::new();
        parser.set_language(&language.grammar().unwrap()).unwrap();
        parser.parse(source, None).unwrap()
    }

    #[test]
    fn items_inside_macros_are_found_with_their_lines() {
        let source = "cfg_rt! {\n    pub fn spawn() {}\n    cfg_net! {\n        pub struct Tcp;\n        impl Tcp { fn new() -> Tcp { Tcp } }\n    }\n}\nfn plain() { println!(\"{}\", 1); }\n";
        let tree = parse(Language::Rust, source);
        let mut items: Vec<(String, usize, Option<String>)> =
            macro_items(Language::Rust, source.as_bytes(), &tree)
                .into_iter()
                .map(|i| (i.name, i.line, i.container))
                .collect();
        items.sort();
        assert_eq!(
            items,
            [
                ("Tcp".to_string(), 3, None),
                ("impl Tcp".to_string(), 4, None),
                ("new".to_string(), 4, Some("impl Tcp".to_string())),
                ("spawn".to_string(), 1, None),
            ]
        );
    }

    #[test]
    fn python_qualifiers_reach_their_modules() {
        let source = "import email.utils\nimport os.path as p\nfrom . import errors\nfrom .charset import Charset as C\nfrom ..x import y\n";
        let tree = parse(Language::Python, source);
        let imports = python_imports(source.as_bytes(), &tree, "email.mime.text", false);
        let module = |q: &str| qualifier_module(&imports, q);
        assert_eq!(module("email.utils").as_deref(), Some("email.utils"));
        assert_eq!(module("p").as_deref(), Some("os.path"));
        assert_eq!(module("errors").as_deref(), Some("email.mime.errors"));
        assert_eq!(module("y").as_deref(), Some("email.x.y"));
        assert_eq!(
            imports.names.get("C"),
            Some(&("email.mime.charset".to_string(), "Charset".to_string()))
        );
        assert_eq!(python_module("email", "mime/text.py"), "email.mime.text");
        assert_eq!(python_module("email", "__init__.py"), "email");
        let uses = qualified_uses(
            Language::Python,
            b"def f():\n    errors.Bad(email.utils.parse(x), a().b)\n",
            &parse(
                Language::Python,
                "def f():\n    errors.Bad(email.utils.parse(x), a().b)\n",
            ),
            0..100,
        );
        let seen: Vec<(&str, &str, bool)> = uses
            .iter()
            .map(|u| (u.qualifier.as_str(), u.name.as_str(), u.call))
            .collect();
        assert!(seen.contains(&("errors", "Bad", true)), "{seen:?}");
        assert!(seen.contains(&("email.utils", "parse", true)), "{seen:?}");
        assert!(seen.contains(&("email", "utils", false)), "{seen:?}");
        assert!(!seen.iter().any(|(_, n, _)| *n == "b"), "{seen:?}");
        assert_eq!(impl_type("impl fmt::Display for Foo<T>"), Some("Foo"));
        assert_eq!(impl_type("impl io::Read"), Some("Read"));
    }
}
