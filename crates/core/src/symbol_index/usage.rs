//! How a name is used, and which of its definitions that use means: the kinds a position
//! can name (a type position names a type, `obj.method()` a method), the module or type a
//! qualifier names (`errors.HeaderParseError`: the `errors` module's; `Runtime::new`: the
//! `new` of `impl Runtime`), and how strongly the reader's imports name a definition.

use super::{module_name, Definition, Import};
use crate::syntax::{IdentifierKind, SymbolKind};

/// How the reader uses a name: what the index ranks its definitions by, beside the files.
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage<'a> {
    pub kind: Option<IdentifierKind>,
    /// The path written before the name (`email.utils`, `Runtime`, `crate::io`).
    pub qualifier: Option<&'a str>,
}

/// Whether a definition of `kind` is what an identifier used as `used_as` can name.
pub fn fits(used_as: IdentifierKind, kind: SymbolKind) -> bool {
    use SymbolKind as K;
    match used_as {
        IdentifierKind::Type => matches!(
            kind,
            K::Struct | K::Class | K::Enum | K::Trait | K::Interface | K::TypeAlias
        ),
        IdentifierKind::Field => matches!(kind, K::Method | K::Function | K::Constant),
        IdentifierKind::Module => matches!(kind, K::Module),
        IdentifierKind::Value => !matches!(kind, K::Module | K::Interface | K::TypeAlias),
    }
}

/// Whether the qualifier names the definition's module (its file's, through an alias the
/// reader's imports give it: `import x.y as z` makes `z` mean `y`) or the type or module
/// it is defined in (`impl Runtime`, `mod io`).
pub fn qualifier_reaches(
    qualifier: &str,
    imports: &[Import],
    path: &str,
    definition: &Definition,
) -> bool {
    let last = qualifier
        .rsplit(['.', ':'])
        .find(|part| !part.is_empty())
        .unwrap_or(qualifier);
    if matches!(last, "self" | "Self" | "super" | "crate") {
        return false;
    }
    let meant = unaliased(imports, last);
    if module_name(path) == Some(meant) {
        return true;
    }
    definition
        .container()
        .is_some_and(|container| container == meant || impl_type(container) == Some(meant))
}

/// The name an import statement gives the alias `name` (`y` of `import x.y as z` for `z`);
/// `name` itself when it is no alias.
fn unaliased<'i>(imports: &'i [Import], name: &'i str) -> &'i str {
    for import in imports {
        let names: Vec<&str> = import.names().collect();
        let aliased = import.text().contains(&format!(" as {name}"));
        if let Some(at) = names.iter().position(|n| *n == name).filter(|_| aliased) {
            if let Some(original) = at.checked_sub(1).map(|i| names[i]) {
                return original;
            }
        }
    }
    name
}

/// The type an impl block is for: `impl fmt::Display for Foo<T>` → `Foo`.
pub fn impl_type(container: &str) -> Option<&str> {
    let rest = container.strip_prefix("impl ")?;
    let ty = rest.rsplit_once(" for ").map_or(rest, |(_, ty)| ty);
    let ty = ty.split('<').next().unwrap_or(ty).trim();
    Some(ty.rsplit("::").next().unwrap_or(ty))
}

/// 2 when one import statement names both `name` and the module of `path`, 1 when one
/// names either, else 0.
pub fn import_strength(imports: &[Import], name: &str, path: &str) -> u8 {
    let module = module_name(path);
    imports
        .iter()
        .map(|import| {
            let names_it = import.names().any(|n| n == name);
            let names_module = module.is_some_and(|m| import.names().any(|n| n == m));
            u8::from(names_it) + u8::from(names_module)
        })
        .max()
        .unwrap_or(0)
}
