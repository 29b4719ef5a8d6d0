//! Which grammar a document gets: chosen by LSP languageId first, file extension second.
//! Everything without a grammar is plain text (no tree, no outline).

use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    Rust,
    Python,
    TypeScript,
    Tsx,
    JavaScript,
    Go,
    PlainText,
}

impl Language {
    /// The languageId as the LSP spec spells it (what `agentls/debug/document` reports).
    pub fn id(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::TypeScript => "typescript",
            Language::Tsx => "typescriptreact",
            Language::JavaScript => "javascript",
            Language::Go => "go",
            Language::PlainText => "plaintext",
        }
    }

    /// languageId wins; an unknown or generic languageId falls back to the extension of
    /// the document's path, so `untitled` buffers and odd client ids still get a grammar.
    pub fn detect(language_id: &str, path: Option<&Path>) -> Language {
        match Self::from_language_id(language_id) {
            Some(lang) => lang,
            None => path
                .and_then(|p| p.extension())
                .and_then(|e| e.to_str())
                .and_then(Self::from_extension)
                .unwrap_or(Language::PlainText),
        }
    }

    pub fn from_language_id(id: &str) -> Option<Language> {
        Some(match id {
            "rust" => Language::Rust,
            "python" => Language::Python,
            "typescript" => Language::TypeScript,
            "typescriptreact" | "tsx" => Language::Tsx,
            "javascript" | "javascriptreact" | "jsx" => Language::JavaScript,
            "go" => Language::Go,
            _ => return None,
        })
    }

    pub fn from_extension(ext: &str) -> Option<Language> {
        Some(match ext {
            "rs" => Language::Rust,
            "py" | "pyi" | "pyw" => Language::Python,
            "ts" | "mts" | "cts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "js" | "mjs" | "cjs" | "jsx" => Language::JavaScript,
            "go" => Language::Go,
            _ => return None,
        })
    }

    /// The tree-sitter grammar, or None for plain text.
    pub fn grammar(self) -> Option<tree_sitter::Language> {
        let f = match self {
            Language::Rust => tree_sitter_rust::LANGUAGE,
            Language::Python => tree_sitter_python::LANGUAGE,
            Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT,
            Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX,
            // The JavaScript grammar parses JSX too.
            Language::JavaScript => tree_sitter_javascript::LANGUAGE,
            Language::Go => tree_sitter_go::LANGUAGE,
            Language::PlainText => return None,
        };
        Some(f.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_id_wins_over_extension() {
        assert_eq!(
            Language::detect("python", Some(Path::new("a.rs"))),
            Language::Python
        );
    }

    #[test]
    fn extension_is_the_fallback() {
        for (path, lang) in [
            ("a.rs", Language::Rust),
            ("a.py", Language::Python),
            ("a.ts", Language::TypeScript),
            ("a.tsx", Language::Tsx),
            ("a.mjs", Language::JavaScript),
            ("a.jsx", Language::JavaScript),
            ("a.go", Language::Go),
            ("a.txt", Language::PlainText),
            ("Makefile", Language::PlainText),
        ] {
            assert_eq!(Language::detect("", Some(Path::new(path))), lang, "{path}");
        }
        assert_eq!(Language::detect("markdown", None), Language::PlainText);
    }

    #[test]
    fn every_grammar_loads_and_parses() {
        for lang in [
            Language::Rust,
            Language::Python,
            Language::TypeScript,
            Language::Tsx,
            Language::JavaScript,
            Language::Go,
        ] {
            let mut parser = tree_sitter::Parser::new();
            parser.set_language(&lang.grammar().unwrap()).unwrap();
            let tree = parser.parse("x", None).unwrap();
            assert!(tree.root_node().end_byte() == 1, "{lang:?}");
        }
        assert!(Language::PlainText.grammar().is_none());
    }
}
