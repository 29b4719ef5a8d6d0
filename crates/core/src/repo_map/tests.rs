use expect_test::expect;

use super::{build, choose, drift, is_current, MapEntry, MapSettings, RepoMap, REBUILD_SHARE};
use crate::language::Language;
use crate::symbol_index::{rank_files, FileStamp, FileTags, SymbolIndex};
use crate::tokens::TokenizerKind;

fn tags(language: Language, source: &str) -> FileTags {
    crate::symbol_index::tags_of(language, source)
}

fn index_of(files: &[(&str, &str)]) -> SymbolIndex {
    let mut index = SymbolIndex::new();
    for (path, source) in files {
        let language = if path.ends_with(".py") {
            Language::Python
        } else {
            Language::Rust
        };
        index.insert(
            &format!("/ws/{path}"),
            FileStamp::default(),
            tags(language, source),
        );
    }
    index
}

/// A small workspace: `geometry.rs` is used by three files, `color.rs` by one, `util.rs`
/// by none (its function is used only in its own file).
fn workspace() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "src/geometry.rs",
            "/// A point.\npub struct Point { pub x: f64, pub y: f64 }\n\nimpl Point {\n    pub fn distance(&self, other: &Point) -> f64 {\n        0.0\n    }\n}\n\npub fn origin() -> Point { Point { x: 0.0, y: 0.0 } }\n",
        ),
        (
            "src/color.rs",
            "pub enum Color { Red, Green }\n\npub fn paint(color: Color,\n             strength: u8) -> Color { color }\n",
        ),
        (
            "src/util.rs",
            "fn only_here() {}\nfn caller() { only_here(); }\n",
        ),
        (
            "src/shapes.rs",
            "use crate::geometry::Point;\npub fn area(p: &Point) -> f64 { p.distance(&origin()) }\n",
        ),
        (
            "src/draw.rs",
            "fn draw(p: Point, c: Color) { paint(c, 1); area(&p); p.distance(&p); }\n",
        ),
        ("app/main.py", "from geometry import Point\n\ndef run():\n    origin()\n"),
    ]
}

fn settings(max_tokens: usize) -> MapSettings {
    MapSettings {
        max_tokens,
        tokenizer: TokenizerKind::O200kBase,
        heading: "## Repository map\n".to_string(),
    }
}

fn map_of(index: &SymbolIndex, max_tokens: usize) -> RepoMap {
    let ranks = rank_files(index, None);
    build(index, &ranks, &settings(max_tokens), &|path: &str| {
        path.trim_start_matches("/ws/").to_string()
    })
}

#[test]
fn the_most_used_definitions_come_first_grouped_by_file_with_their_signatures() {
    let index = index_of(&workspace());
    let map = map_of(&index, 1_000);
    expect![[r#"
        ## Repository map

        src/geometry.rs
          pub struct Point
          impl Point
            pub fn distance(&self, other: &Point) -> f64
          pub fn origin() -> Point

        src/color.rs
          pub enum Color
          pub fn paint(color: Color, strength: u8) -> Color

        src/shapes.rs
          pub fn area(p: &Point) -> f64"#]]
    .assert_eq(&map.text);
    // What nobody else uses is not shown.
    assert!(!map.text.contains("only_here"), "{}", map.text);
    assert_eq!(map.tokens, TokenizerKind::O200kBase.count(&map.text));
    let names: Vec<&str> = map.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        ["Point", "distance", "origin", "Color", "paint", "area"]
    );
    assert_eq!(map.entries[0].path, "src/geometry.rs");
    assert_eq!(map.entries[0].line, 1, "the name's line, 0-based");
}

#[test]
fn the_map_is_cut_to_the_budget_best_entries_kept() {
    let index = index_of(&workspace());
    let whole = map_of(&index, 1_000);
    for budget in [1, 10, 20, 30, 45, whole.tokens - 1, whole.tokens] {
        let map = map_of(&index, budget);
        assert!(map.tokens <= budget, "{budget}: {} tokens", map.tokens);
        assert_eq!(map.tokens, TokenizerKind::O200kBase.count(&map.text));
        // A smaller budget keeps a subset of a larger one's entries.
        for entry in &map.entries {
            assert!(whole.entries.contains(entry), "{budget}: {entry:?}");
        }
        if budget == whole.tokens {
            assert_eq!((&map.text, &map.entries), (&whole.text, &whole.entries));
        }
    }
    // Too small for the heading and one entry: no map at all, not a bare heading.
    let tiny = map_of(&index, 5);
    assert_eq!((tiny.text.as_str(), tiny.tokens), ("", 0));
    assert!(tiny.entries.is_empty());
    // The best-ranked definition survives the tightest budget that holds one.
    let one = (1..whole.tokens)
        .map(|b| map_of(&index, b))
        .find(|m| !m.entries.is_empty())
        .expect("some budget holds one entry");
    assert_eq!(one.entries.len(), 1);
    assert_eq!(one.entries[0].name, "Point");
}

#[test]
fn zero_budget_or_an_empty_index_makes_no_map() {
    let index = index_of(&workspace());
    assert_eq!(map_of(&index, 0).text, "");
    let empty = SymbolIndex::new();
    let map = map_of(&empty, 1_000);
    assert_eq!((map.text.as_str(), map.entries.len()), ("", 0));
}

#[test]
fn the_same_index_gives_the_same_bytes() {
    let a = map_of(&index_of(&workspace()), 1_000);
    let mut files = workspace();
    files.reverse();
    let b = map_of(&index_of(&files), 1_000);
    assert_eq!(a.text, b.text);
}

#[test]
fn a_small_edit_keeps_the_kept_map_byte_for_byte_and_a_large_change_replaces_it() {
    let mut files = workspace();
    let mut index = index_of(&files);
    let kept = map_of(&index, 1_000);
    assert!(is_current(&kept, index.revision(), &settings(1_000)));

    // A body edited and a line added: the index moved, the entries did not.
    files[0].1 = "/// A point.\n\npub struct Point { pub x: f64, pub y: f64 }\n\nimpl Point {\n    pub fn distance(&self, other: &Point) -> f64 {\n        1.0\n    }\n}\n\npub fn origin() -> Point { Point { x: 0.0, y: 0.0 } }\n";
    index.insert(
        "/ws/src/geometry.rs",
        FileStamp::default(),
        tags(Language::Rust, files[0].1),
    );
    assert!(!is_current(&kept, index.revision(), &settings(1_000)));
    let fresh = map_of(&index, 1_000);
    assert_ne!(fresh.entries, kept.entries, "the lines moved");
    let chosen = choose(Some(kept.clone()), fresh);
    assert_eq!(chosen.text, kept.text, "the prefix stays byte-identical");
    assert_eq!(
        chosen.revision,
        index.revision(),
        "compared with the new index"
    );
    assert!(is_current(&chosen, index.revision(), &settings(1_000)));

    // Most of what the map showed is gone: rebuilt.
    index.remove("/ws/src/geometry.rs");
    index.remove("/ws/src/color.rs");
    let fresh = map_of(&index, 1_000);
    let chosen = choose(Some(kept.clone()), fresh.clone());
    assert_eq!(chosen, fresh);
    assert!(!chosen.text.contains("src/geometry.rs"));

    // Other settings: rebuilt even when the entries are the same.
    let index = index_of(&workspace());
    let ranks = rank_files(&index, None);
    let mut other = settings(1_000);
    other.heading = "## Map\n".to_string();
    let fresh = build(&index, &ranks, &other, &|p: &str| {
        p.trim_start_matches("/ws/").to_string()
    });
    assert!(choose(Some(kept.clone()), fresh).text.starts_with("## Map"));

    // No kept map (or one built while the index was empty): the fresh one.
    let empty = map_of(&SymbolIndex::new(), 1_000);
    let fresh = map_of(&index, 1_000);
    assert_eq!(choose(Some(empty), fresh.clone()), fresh);
    assert_eq!(choose(None, fresh.clone()), fresh);
}

#[test]
fn drift_is_the_share_of_entries_not_in_both() {
    let entry = |path: &str, name: &str, line: u32| MapEntry {
        path: path.to_string(),
        name: name.to_string(),
        line,
    };
    let kept: Vec<MapEntry> = (0..10)
        .map(|i| entry("a.rs", &format!("f{i}"), i))
        .collect();
    // The same names on other lines: no drift.
    let moved: Vec<MapEntry> = (0..10)
        .map(|i| entry("a.rs", &format!("f{i}"), i + 5))
        .collect();
    assert_eq!(drift(&kept, &moved), 0.0);
    // Two of ten replaced: at the threshold, kept.
    let mut two = kept.clone();
    two[0] = entry("b.rs", "g0", 0);
    two[1] = entry("b.rs", "g1", 1);
    assert!((drift(&kept, &two) - 0.2).abs() < 1e-9);
    assert!(drift(&kept, &two) <= REBUILD_SHARE);
    // Three of ten: over it.
    let mut three = two.clone();
    three[2] = entry("b.rs", "g2", 2);
    assert!(drift(&kept, &three) > REBUILD_SHARE);
    assert_eq!(drift(&[], &kept), 1.0);
    assert_eq!(drift(&[], &[]), 0.0);
}

#[test]
fn a_long_signature_is_one_line_cut_and_marked() {
    let params: Vec<String> = (0..40).map(|i| format!("argument_{i}: u32")).collect();
    let source = format!("pub fn wide(\n    {}) {{}}\n", params.join(", "));
    let index = index_of(&[("src/a.rs", &source), ("src/b.rs", "fn b() { wide(); }\n")]);
    let map = map_of(&index, 1_000);
    let line = map
        .text
        .lines()
        .find(|l| l.contains("pub fn wide("))
        .expect("listed");
    assert!(line.ends_with('…'), "{line}");
    assert_eq!(line.trim_start().chars().count(), 161, "{line}");
}
