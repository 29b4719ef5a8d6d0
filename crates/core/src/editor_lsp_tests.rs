use super::*;

fn url(path: &str) -> Url {
    Url::parse(&format!("file:///w/{path}")).unwrap()
}

#[test]
fn columns_cross_between_characters_and_each_encoding() {
    let line = "let é = \"😀\"; x";
    // `x` is the 14th character: é is 2 bytes, 😀 is 4 bytes and 2 utf-16 units.
    assert_eq!(character_of(line, 14, PositionEncoding::Utf32), 13);
    assert_eq!(character_of(line, 14, PositionEncoding::Utf16), 14);
    assert_eq!(character_of(line, 14, PositionEncoding::Utf8), 17);
    for encoding in [
        PositionEncoding::Utf8,
        PositionEncoding::Utf16,
        PositionEncoding::Utf32,
    ] {
        let character = character_of(line, 14, encoding);
        assert_eq!(column_of(line, character, encoding), 14, "{encoding:?}");
        assert_eq!(&line[byte_of(line, character, encoding)..], "x");
    }
    assert_eq!(
        character_of("ab", 99, PositionEncoding::Utf16),
        2,
        "past the end"
    );
    assert_eq!(column_of("ab", 99, PositionEncoding::Utf16), 3);
}

#[test]
fn a_symbol_is_placed_on_its_line_by_whole_word_first() {
    assert_eq!(
        column_of_symbol("let parse_all = parse(x);", "parse"),
        Some(17)
    );
    assert_eq!(
        column_of_symbol("parse_all()", "parse"),
        Some(1),
        "else any"
    );
    assert_eq!(column_of_symbol("nothing here", "parse"), None);
    assert_eq!(word_at("    foo.bar_baz(1)", 10), Some("bar_baz"));
    assert_eq!(word_at("    foo.bar_baz(1)", 5), Some("foo"));
    assert_eq!(word_at("    foo.bar_baz(1)", 8), None, "on the dot");
}

#[test]
fn definition_answers_of_every_shape_become_locations() {
    let one = json!({"uri": "file:///w/a.rs", "range": {"start": {"line": 3, "character": 4}, "end": {"line": 3, "character": 7}}});
    assert_eq!(locations(&one).unwrap().len(), 1);
    assert_eq!(locations(&json!([one, one])).unwrap().len(), 2);
    let link = json!([{
        "targetUri": "file:///w/b.rs",
        "targetRange": {"start": {"line": 1, "character": 0}, "end": {"line": 9, "character": 1}},
        "targetSelectionRange": {"start": {"line": 2, "character": 7}, "end": {"line": 2, "character": 10}},
    }]);
    let found = locations(&link).unwrap();
    assert_eq!(found[0].uri, url("b.rs"));
    assert_eq!(
        found[0].range.start.line, 2,
        "the name's line, not the item's"
    );
    assert!(locations(&Value::Null).unwrap().is_empty());
    assert!(locations(&json!({"nonsense": 1})).is_err());
}

#[test]
fn hovers_of_every_shape_become_text() {
    let markup =
        json!({"contents": {"kind": "markdown", "value": "```rust\nfn f()\n```\nDoes f."}});
    assert_eq!(
        hover_text(&markup).unwrap().unwrap(),
        "```rust\nfn f()\n```\nDoes f."
    );
    let parts = json!({"contents": ["plain", {"language": "python", "value": "def g()"}]});
    assert_eq!(
        hover_text(&parts).unwrap().unwrap(),
        "plain\n```python\ndef g()\n```"
    );
    assert_eq!(hover_text(&Value::Null).unwrap(), None);
    assert_eq!(hover_text(&json!({"contents": ""})).unwrap(), None);
}

#[test]
fn nested_and_flat_symbols_are_listed_in_order_with_depth() {
    let range = |l: u32| json!({"start": {"line": l, "character": 0}, "end": {"line": l + 1, "character": 0}});
    let nested = json!([{
        "name": "Parser", "kind": 23, "range": range(0), "selectionRange": range(0),
        "children": [{"name": "new", "kind": 6, "detail": "fn() -> Parser", "range": range(2), "selectionRange": range(2)}],
    }]);
    let found = document_symbols(&nested, &url("a.rs")).unwrap();
    let rows: Vec<_> = found
        .iter()
        .map(|s| (s.name.as_str(), s.kind, s.depth, s.line))
        .collect();
    assert_eq!(
        rows,
        [
            ("Parser", "struct", 0, Some(0)),
            ("new", "method", 1, Some(2))
        ]
    );
    assert_eq!(found[1].detail.as_deref(), Some("fn() -> Parser"));
    let flat = json!([{"name": "main", "kind": 12, "location": {"uri": "file:///w/m.py", "range": range(4)}, "containerName": "m"}]);
    let found = workspace_symbols(&flat).unwrap();
    assert_eq!(
        (found[0].kind, found[0].line, found[0].uri.clone()),
        ("function", Some(4), url("m.py"))
    );
    let file_only = json!([{"name": "X", "kind": 5, "location": {"uri": "file:///w/x.ts"}}]);
    assert_eq!(workspace_symbols(&file_only).unwrap()[0].line, None);
}

#[test]
fn a_rename_is_read_from_changes_or_document_changes_and_refuses_file_operations() {
    let edit = |l: u32, c: u32, n: u32, text: &str| json!({"range": {"start": {"line": l, "character": c}, "end": {"line": l, "character": c + n}}, "newText": text});
    let changes = json!({"changes": {
        "file:///w/b.rs": [edit(0, 3, 3, "bar")],
        "file:///w/a.rs": [edit(1, 0, 3, "bar"), edit(0, 7, 3, "bar")],
    }});
    let files = workspace_edit(&changes).unwrap();
    let order: Vec<_> = files.iter().map(|(u, e)| (u.path(), e.len())).collect();
    assert_eq!(order, [("/w/a.rs", 2), ("/w/b.rs", 1)]);
    let documents = json!({"documentChanges": [
        {"textDocument": {"uri": "file:///w/a.rs", "version": 3}, "edits": [edit(0, 0, 1, "x")]},
        {"textDocument": {"uri": "file:///w/a.rs", "version": 3}, "edits": [edit(2, 0, 1, "y")]},
    ]});
    let files = workspace_edit(&documents).unwrap();
    assert_eq!(files.len(), 1, "one file, its edits together");
    assert_eq!(files[0].1.len(), 2);
    let with_rename = json!({"documentChanges": [
        {"kind": "rename", "oldUri": "file:///w/a.rs", "newUri": "file:///w/b.rs"},
    ]});
    assert!(workspace_edit(&with_rename)
        .unwrap_err()
        .contains("renames or deletes files"));
}

#[test]
fn edits_apply_to_the_covered_span_in_any_order_and_overlaps_are_refused() {
    let text = "fn foo() {}\nlet x = foo();\r\nfoo\n";
    let edit = |l: u32, c: u32, n: u32| TextEdit {
        range: lsp_types::Range::new(Position::new(l, c), Position::new(l, c + n)),
        new_text: "bar".into(),
    };
    let edits = [edit(2, 0, 3), edit(0, 3, 3), edit(1, 8, 3)];
    let (range, replacement) = apply_edits(text, &edits, PositionEncoding::Utf16).unwrap();
    let mut after = text.to_string();
    after.replace_range(range, &replacement);
    assert_eq!(after, "fn bar() {}\nlet x = bar();\r\nbar\n");
    assert!(apply_edits(
        text,
        &[edit(0, 3, 3), edit(0, 4, 1)],
        PositionEncoding::Utf16
    )
    .unwrap_err()
    .contains("overlap"));
    assert!(apply_edits(text, &[edit(9, 0, 1)], PositionEncoding::Utf16)
        .unwrap_err()
        .contains("past the end"));
    let wide = "é foo";
    let at = |c| TextEdit {
        range: lsp_types::Range::new(Position::new(0, c), Position::new(0, c + 3)),
        new_text: "bar".into(),
    };
    let (range, _) = apply_edits(wide, &[at(3)], PositionEncoding::Utf8).unwrap();
    assert_eq!(&wide[range], "foo");
    let (range, _) = apply_edits(wide, &[at(2)], PositionEncoding::Utf16).unwrap();
    assert_eq!(&wide[range], "foo");
}

#[test]
fn params_are_the_standard_requests() {
    let uri = url("a.rs");
    let at = Position::new(4, 2);
    assert_eq!(
        params(Operation::References, Some(&uri), at, "", ""),
        json!({"textDocument": {"uri": "file:///w/a.rs"}, "position": {"line": 4, "character": 2}, "context": {"includeDeclaration": true}})
    );
    assert_eq!(
        params(Operation::Rename, Some(&uri), at, "", "bar")["newName"],
        "bar"
    );
    assert_eq!(
        params(Operation::WorkspaceSymbols, None, at, "Parser", ""),
        json!({"query": "Parser"})
    );
    assert_eq!(Operation::Hover.method(), "textDocument/hover");
    assert!(!Operation::DocumentSymbols.at_position());
}

#[test]
fn other_agents_operation_names_are_understood() {
    let read = |name: &str| serde_json::from_value::<Operation>(json!(name)).ok();
    assert_eq!(read("goToDefinition"), Some(Operation::Definition));
    assert_eq!(read("findReferences"), Some(Operation::References));
    assert_eq!(read("documentSymbol"), Some(Operation::DocumentSymbols));
    assert_eq!(read("workspace_symbols"), Some(Operation::WorkspaceSymbols));
    assert_eq!(read("goto"), None);
}
