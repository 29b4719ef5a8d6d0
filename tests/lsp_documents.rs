//! The document core seen from a client: position encodings, incremental sync with
//! surrogate pairs and CRLF, ordering under a burst of changes, versions, languages.

mod common;

use common::{fresh_sexp, start, Options};
use serde_json::json;

const RUST_CRLF: &str = "fn main() {\r\n    let s = \"😀\";\r\n}\r\n";

#[tokio::test]
async fn utf16_session_applies_edits_around_surrogate_pairs_and_crlf() {
    let server = start(Options::default()).await;
    assert_eq!(server.init["capabilities"]["positionEncoding"], "utf-16");
    assert_eq!(server.init["capabilities"]["textDocumentSync"]["change"], 2);
    let uri = "file:///virtual/main.rs";
    server.open(uri, "rust", 1, RUST_CRLF).await;
    // utf-16: `    let s = "` is 13 units, 😀 is units 13-14, the closing quote is 15.
    server.edit(uri, 2, [1, 15, 1, 15], "🎉x").await;
    // Replace across the CRLF between line 1 and 2: `;\r\n}` becomes `;\r\n    s.len();\r\n}`.
    server
        .edit(uri, 3, [1, 20, 2, 0], "\r\n    s.len();\r\n")
        .await;
    let doc = server.document(uri).await.unwrap();
    let expected = "fn main() {\r\n    let s = \"😀🎉x\";\r\n    s.len();\r\n}\r\n";
    assert_eq!(doc["text"], expected);
    assert_eq!(doc["version"], 3);
    assert_eq!(doc["language"], "rust");
    assert_eq!(doc["syntaxErrors"], false);
    assert_eq!(
        doc["sexp"],
        fresh_sexp(tree_sitter_rust::LANGUAGE.into(), expected)
    );
    assert_eq!(doc["outline"][0]["name"], "main");
    assert_eq!(
        doc["outline"][0]["range"]["end"],
        json!({"line": 3, "character": 1})
    );
    server.stop().await;
}

#[tokio::test]
async fn utf8_is_negotiated_when_offered_and_columns_are_bytes() {
    let server = start(Options {
        encodings: &["utf-16", "utf-8"],
        ..Options::default()
    })
    .await;
    assert_eq!(server.init["capabilities"]["positionEncoding"], "utf-8");
    let uri = "file:///virtual/main.rs";
    server.open(uri, "rust", 1, RUST_CRLF).await;
    // utf-8: 😀 is bytes 13..17 of line 1; the closing quote is at byte 17.
    server.edit(uri, 2, [1, 17, 1, 17], "中").await;
    let doc = server.document(uri).await.unwrap();
    let expected = RUST_CRLF.replace("😀", "😀中");
    assert_eq!(doc["text"], expected.as_str());
    assert_eq!(doc["positionEncoding"], "utf-8");
    assert_eq!(
        doc["sexp"],
        fresh_sexp(tree_sitter_rust::LANGUAGE.into(), &expected)
    );
    // Outline ranges come back in utf-8 too: `}` closes at line 2, byte 1.
    assert_eq!(
        doc["outline"][0]["range"]["end"],
        json!({"line": 2, "character": 1})
    );
    server.stop().await;
}

#[tokio::test]
async fn utf32_is_used_when_it_is_the_only_offer() {
    let server = start(Options {
        encodings: &["utf-32"],
        ..Options::default()
    })
    .await;
    assert_eq!(server.init["capabilities"]["positionEncoding"], "utf-32");
    let uri = "file:///virtual/a.py";
    server.open(uri, "python", 1, "s = '😀'\n").await;
    server.edit(uri, 2, [0, 6, 0, 6], "!").await;
    let doc = server.document(uri).await.unwrap();
    assert_eq!(doc["text"], "s = '😀!'\n");
    server.stop().await;
}

#[tokio::test]
async fn a_burst_of_changes_applies_in_order() {
    let server = start(Options::default()).await;
    let uri = "file:///virtual/burst.go";
    server
        .open(uri, "go", 1, "package main\n\nfunc main() {\n}\n")
        .await;
    // 400 keystrokes sent without waiting: each inserts at the end of what the previous
    // one typed, so any reordering produces a different text.
    let typed: String = (0..400).map(|i| (b'a' + (i % 26) as u8) as char).collect();
    for (i, ch) in typed.chars().enumerate() {
        let col = 13 + i as u32; // `func main() {` is 13 characters
        server
            .edit(uri, 2 + i as i32, [2, col, 2, col], &ch.to_string())
            .await;
    }
    let doc = server.document(uri).await.unwrap();
    let expected = format!("package main\n\nfunc main() {{{typed}\n}}\n");
    assert_eq!(doc["text"], expected.as_str());
    assert_eq!(doc["version"], 401);
    // The keystrokes parsed nothing: the read reparsed once what all 400 changed (and the
    // tree it got is the text's, below).
    assert_eq!(doc["parses"], 1, "{doc}");
    assert_eq!(
        doc["sexp"],
        fresh_sexp(tree_sitter_go::LANGUAGE.into(), &expected)
    );
    server.stop().await;
}

#[tokio::test]
async fn stale_versions_and_unknown_documents_are_ignored_without_damage() {
    let server = start(Options::default()).await;
    let uri = "file:///virtual/v.ts";
    server.open(uri, "typescript", 10, "let a = 1;\n").await;
    server.edit(uri, 10, [0, 0, 0, 0], "STALE").await;
    server.edit(uri, 4, [0, 0, 0, 0], "OLDER").await;
    server
        .edit("file:///virtual/never-opened.ts", 11, [0, 0, 0, 0], "X")
        .await;
    // Neovim's versions skip numbers (changedtick): 10 -> 15 is fine.
    server.edit(uri, 15, [0, 4, 0, 5], "b").await;
    let doc = server.document(uri).await.unwrap();
    assert_eq!(doc["text"], "let b = 1;\n");
    assert_eq!(doc["version"], 15);
    let err = server
        .document("file:///virtual/never-opened.ts")
        .await
        .unwrap_err();
    assert_eq!(err.code, -32602);
    assert!(err.message.contains("never-opened.ts"), "{}", err.message);
    server.stop().await;
}

#[tokio::test]
async fn close_forgets_and_reopen_starts_fresh() {
    let server = start(Options::default()).await;
    let uri = "file:///virtual/c.js";
    server.open(uri, "javascript", 1, "function a() {}\n").await;
    server
        .client
        .notify(
            "textDocument/didClose",
            json!({"textDocument": {"uri": uri}}),
        )
        .await
        .unwrap();
    assert!(server.document(uri).await.is_err());
    server.open(uri, "javascript", 1, "class B {}\n").await;
    let doc = server.document(uri).await.unwrap();
    assert_eq!(doc["outline"][0]["name"], "B");
    assert_eq!(doc["outline"][0]["kind"], "class");
    server.stop().await;
}

#[tokio::test]
async fn languages_by_id_and_by_extension_with_plain_text_fallback() {
    let server = start(Options::default()).await;
    for (uri, language_id, text, language, first_symbol) in [
        ("file:///v/a.rs", "rust", "struct A;", "rust", "A"),
        (
            "file:///v/a.py",
            "python",
            "class P:\n    pass\n",
            "python",
            "P",
        ),
        (
            "file:///v/a.ts",
            "typescript",
            "interface I {}",
            "typescript",
            "I",
        ),
        (
            "file:///v/a.tsx",
            "typescriptreact",
            "function C() { return <div/>; }",
            "typescriptreact",
            "C",
        ),
        (
            "file:///v/a.js",
            "javascript",
            "function j() {}",
            "javascript",
            "j",
        ),
        ("file:///v/a.go", "go", "package p\nfunc G() {}", "go", "G"),
        (
            "file:///v/by_ext.py",
            "",
            "def f():\n    pass\n",
            "python",
            "f",
        ),
    ] {
        server.open(uri, language_id, 1, text).await;
        let doc = server.document(uri).await.unwrap();
        assert_eq!(doc["language"], language, "{uri}");
        assert_eq!(doc["outline"][0]["name"], first_symbol, "{uri}");
        assert_eq!(doc["syntaxErrors"], false, "{uri}");
    }
    server
        .open("file:///v/notes.md", "markdown", 1, "# title")
        .await;
    let doc = server.document("file:///v/notes.md").await.unwrap();
    assert_eq!(doc["language"], "plaintext");
    assert_eq!(doc["hasSyntaxTree"], false);
    assert_eq!(doc["outline"], json!([]));
    server.stop().await;
}

#[tokio::test]
async fn syntax_requests_answer_in_client_positions() {
    let server = start(Options::default()).await;
    let uri = "file:///v/s.rs";
    let text = "struct Point { x: i32 }\n\nimpl Point {\n    fn norm(&self) -> i32 {\n        // 😀\n        self.x.abs()\n    }\n}\n";
    server.open(uri, "rust", 1, text).await;
    let answer = server
        .client
        .request(
            "agentls/debug/syntax",
            json!({"uri": uri, "position": {"line": 5, "character": 10}, "range": common::range_json([3, 0, 6, 0])}),
        )
        .await
        .unwrap();
    let symbol = &answer["enclosingSymbol"];
    assert_eq!(symbol["name"], "norm");
    assert_eq!(symbol["kind"], "method");
    assert_eq!(symbol["range"], common::range_json([3, 4, 6, 5]));
    assert!(symbol["text"]
        .as_str()
        .unwrap()
        .starts_with("fn norm(&self)"));
    let names: Vec<&str> = answer["identifiers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"norm") && names.contains(&"x") && names.contains(&"abs"),
        "{names:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_pathologically_nested_outline_is_cut_not_fatal() {
    let server = start(Options::default()).await;
    let uri = "file:///v/deep.rs";
    let depth = 3000;
    let text = "mod m {\n".repeat(depth) + &"}\n".repeat(depth);
    server.open(uri, "rust", 1, &text).await;
    let doc = server.document(uri).await.unwrap();
    let mut level = &doc["outline"];
    let mut levels = 0;
    while let Some(first) = level.get(0) {
        levels += 1;
        level = &first["children"];
    }
    assert_eq!(levels, 32);
    server.stop().await;
}

/// A client-side model of the text: the LSP position of char index `at` in `encoding`.
fn lsp_position(text: &str, at: usize, encoding: &str) -> (u32, u32) {
    let mut line = 0u32;
    let mut column = 0u32;
    let mut chars = text.chars().take(at).peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => {
                line += 1;
                column = 0;
            }
            '\r' if chars.peek() != Some(&'\n') => {
                line += 1;
                column = 0;
            }
            '\r' => {}
            c => {
                column += match encoding {
                    "utf-8" => c.len_utf8() as u32,
                    "utf-16" => c.len_utf16() as u32,
                    _ => 1,
                }
            }
        }
    }
    (line, column)
}

/// Random edits (inserts of ASCII, multi-byte and astral characters, `\n`, `\r\n`, code;
/// deletions across lines) in each position encoding, with a fixed seed: after every 300
/// edits the server's text equals the client's, and at the end its tree equals a fresh
/// parse of that text.
#[tokio::test]
async fn thousands_of_random_edits_keep_the_text_exact_in_every_encoding() {
    const EDITS: usize = 3000;
    const INSERTS: [&str; 9] = ["a", "é", "中", "😀", "\n", "\r\n", "fn x() {}", "{", "}"];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut checks = 0;
    for encoding in ["utf-8", "utf-16", "utf-32"] {
        let server = start(Options {
            encodings: &[encoding],
            ..Options::default()
        })
        .await;
        assert_eq!(server.init["capabilities"]["positionEncoding"], encoding);
        let uri = "file:///virtual/fuzz.rs";
        let mut text = RUST_CRLF.to_string();
        server.open(uri, "rust", 1, &text).await;
        for edit in 0..EDITS {
            let chars: Vec<char> = text.chars().collect();
            // A char index that does not split a `\r\n`.
            let boundary = |mut at: usize| {
                if at > 0 && at < chars.len() && chars[at - 1] == '\r' && chars[at] == '\n' {
                    at -= 1;
                }
                at
            };
            let start = boundary(next() as usize % (chars.len() + 1));
            let end = if next() % 3 == 0 {
                boundary((start + next() as usize % 12).min(chars.len()))
            } else {
                start
            };
            let inserted = if start == end || next() % 2 == 0 {
                INSERTS[next() as usize % INSERTS.len()]
            } else {
                ""
            };
            let (l1, c1) = lsp_position(&text, start, encoding);
            let (l2, c2) = lsp_position(&text, end, encoding);
            server
                .edit(uri, 2 + edit as i32, [l1, c1, l2, c2], inserted)
                .await;
            let before: String = chars[..start].iter().collect();
            let after: String = chars[end..].iter().collect();
            text = format!("{before}{inserted}{after}");
            if (edit + 1) % 300 == 0 {
                let doc = server.document(uri).await.unwrap();
                let served = doc["text"].as_str().unwrap_or_default();
                if served != text {
                    let at = served
                        .chars()
                        .zip(text.chars())
                        .take_while(|(a, b)| a == b)
                        .count();
                    let near = |s: &str| {
                        s.chars()
                            .skip(at.saturating_sub(20))
                            .take(40)
                            .collect::<String>()
                    };
                    panic!(
                        "{encoding}, after edit {edit}: the texts differ at char {at}: server {:?}, client {:?}",
                        near(served),
                        near(&text)
                    );
                }
                checks += 1;
            }
        }
        let doc = server.document(uri).await.unwrap();
        assert_eq!(
            doc["sexp"],
            fresh_sexp(tree_sitter_rust::LANGUAGE.into(), &text),
            "{encoding}: the tree after {EDITS} edits is a fresh parse's"
        );
        server.stop().await;
    }
    eprintln!("random edits: 3 encodings × {EDITS} edits, {checks} text checks, 0 mismatches");
    assert_eq!(checks, 30);
}
