use expect_test::{expect, Expect};

use super::persist::{decode, encode, DecodeError};
use super::*;

fn tags(language: Language, source: &str) -> FileTags {
    crate::symbol_index::tags_of(language, source)
}

/// Definitions one per line: "line kind name (in container): signature", then the doc and
/// fields indented; then the references "name@line" and the imports.
fn render(tags: &FileTags) -> String {
    let mut out = String::new();
    for d in &tags.definitions {
        let kind = format!("{:?}", d.kind).to_lowercase();
        let container = d
            .container()
            .map(|c| format!(" (in {c})"))
            .unwrap_or_default();
        out.push_str(&format!(
            "{}-{} {kind} {}{container}: {}\n",
            d.start_line,
            d.end_line,
            d.name(),
            d.signature()
        ));
        for line in d.doc().lines() {
            out.push_str(&format!("    doc| {line}\n"));
        }
        for field in d.fields() {
            out.push_str(&format!("    field| {field}\n"));
        }
    }
    let refs: Vec<String> = tags
        .references
        .iter()
        .map(|r| format!("{}@{}", r.name, r.line))
        .collect();
    out.push_str(&format!("refs: {}\n", refs.join(" ")));
    for import in &tags.imports {
        out.push_str(&format!(
            "import@{}: {} [{}]\n",
            import.line,
            import.text(),
            import.names().collect::<Vec<_>>().join(", ")
        ));
    }
    out
}

fn check(language: Language, source: &str, expected: Expect) {
    expected.assert_eq(&render(&tags(language, source)));
}

#[test]
fn rust_tags() {
    check(
        Language::Rust,
        r#"use crate::store::{file_index, FileIndex as Index};

/// A point.
/// In two dimensions.
#[derive(Debug)]
pub struct Point {
    pub x: i32,
    y: Vec<Index>,
}

impl Point {
    pub fn norm(&self,
        scale: f64) -> f64 {
        let v = helper(self.x);
        let w = local;
        Point::origin().len(v) + MAX as f64
    }
}

pub enum Shape { Circle(Point), Square }

const MAX: u32 = 3;
macro_rules! m { () => {} }
fn helper<T>(x: T) -> T where T: Copy { m!(); file_index::walk(); x }
"#,
        expect![[r#"
            5-8 struct Point: pub struct Point
                doc| /// A point.
                doc| /// In two dimensions.
                doc| #[derive(Debug)]
                field| pub x: i32
                field| y: Vec<Index>
            10-17 impl impl Point: impl Point
            11-16 method norm (in impl Point): pub fn norm(&self, scale: f64) -> f64
            19-19 enum Shape: pub enum Shape
                field| Circle(Point)
                field| Square
            21-21 constant MAX: const MAX: u32 = 3;
            22-22 macro m: macro_rules! m { () => {} }
            23-23 function helper: fn helper<T>(x: T) -> T where T: Copy
            refs: store@0 file_index@0 FileIndex@0 Index@0 Debug@4 Vec@7 Index@7 helper@13 Point@15 origin@15 len@15 MAX@15 Circle@19 Point@19 Square@19 T@23 Copy@23 m@23 file_index@23 walk@23
            import@0: use crate::store::{file_index, FileIndex as Index}; [store, file_index, FileIndex, Index]
        "#]],
    );
}

#[test]
fn python_tags() {
    check(
        Language::Python,
        r#"from pkg.mod import Thing, other as o
import os.path

@dataclass
class Config(Base):
    """Settings."""
    name: str = "x"
    size = 3

    def load(self, path: Path) -> "Config":
        return parse(path).Build()

def parse(p):
    # not a doc
    return os.path.join(p)
"#,
        expect![[r#"
            3-10 class Config: class Config(Base):
                doc| @dataclass
                doc| """Settings."""
                field| name: str = "x"
                field| size = 3
            9-10 method load (in Config): def load(self, path: Path) -> "Config":
            12-14 function parse: def parse(p):
            refs: pkg@0 mod@0 Thing@0 other@0 o@0 os@1 path@1 dataclass@3 Base@4 str@6 Path@9 parse@10 Build@10 join@14
            import@0: from pkg.mod import Thing, other as o [pkg, mod, Thing, other, o]
            import@1: import os.path [os, path]
        "#]],
    );
}

#[test]
fn typescript_and_go_tags() {
    check(
        Language::TypeScript,
        r#"import { Widget } from "./widget";

/** Makes one. */
export function make(size: number): Widget {
  return new Widget(compute(size));
}

export interface Options { size: number; name?: string }

export const run = (o: Options) => {
  o.render();
};
"#,
        expect![[r#"
            3-5 function make: export function make(size: number): Widget
                doc| /** Makes one. */
            7-7 interface Options: export interface Options
                field| size: number
                field| name?: string
            9-11 function run: export const run = (o: Options) =>
            refs: Widget@0 Widget@3 Widget@4 compute@4 Options@9 render@10
            import@0: import { Widget } from "./widget"; [Widget]
        "#]],
    );
    check(
        Language::Go,
        r#"package main

import (
	"fmt"
	str "strings"
)

// Server serves.
type Server struct {
	Addr string
	log  *Logger
}

func (s *Server) Run() error {
	fmt.Println(str.ToUpper(s.Addr))
	return helper(s)
}
"#,
        expect![[r#"
            8-11 struct Server: type Server struct
                doc| // Server serves.
                field| Addr string
                field| log *Logger
            13-16 method (*Server) Run: func (s *Server) Run() error
            refs: str@4 Addr@9 Logger@10 Server@13 Println@14 ToUpper@14 Addr@14 helper@15
            import@3: "fmt" [fmt]
            import@4: str "strings" [str, strings]
        "#]],
    );
}

fn index_of(files: &[(&str, Language, &str)]) -> SymbolIndex {
    let mut index = SymbolIndex::new();
    for (i, (path, language, source)) in files.iter().enumerate() {
        let stamp = FileStamp {
            mtime_ns: i as u64,
            size: source.len() as u64,
        };
        index.insert(path, stamp, tags(*language, source));
    }
    index
}

fn sample() -> SymbolIndex {
    index_of(&[
        (
            "src/a.rs",
            Language::Rust,
            "use crate::b::Thing;\nfn main() { Thing::new(); shared(); }\nfn shared() {}\n",
        ),
        (
            "src/b.rs",
            Language::Rust,
            "pub struct Thing;\nimpl Thing { pub fn new() -> Thing { Thing } }\n",
        ),
        (
            "other/c.rs",
            Language::Rust,
            "pub struct Thing { n: u8 }\nfn shared() { Thing {n: 1}; }\n",
        ),
    ])
}

#[test]
fn lookup_by_name_kind_and_prefix() {
    let index = sample();
    let all = index.definitions(&Query {
        name: "Thing",
        ..Query::default()
    });
    let places: Vec<(&str, u32)> = all
        .iter()
        .map(|h| (h.path, h.definition.start_line))
        .collect();
    assert_eq!(places, [("other/c.rs", 0), ("src/b.rs", 0)]);
    let in_src = index.definitions(&Query {
        name: "Thing",
        kind: Some(SymbolKind::Struct),
        path_prefix: Some("src/"),
    });
    assert_eq!(in_src.len(), 1);
    assert_eq!(in_src[0].path, "src/b.rs");
    let none = index.definitions(&Query {
        name: "Thing",
        kind: Some(SymbolKind::Function),
        path_prefix: None,
    });
    assert!(none.is_empty());
    let refs: Vec<(&str, u32)> = index
        .references("Thing", None)
        .iter()
        .map(|r| (r.path, r.line))
        .collect();
    assert_eq!(
        refs,
        [
            ("other/c.rs", 1),
            ("src/a.rs", 0),
            ("src/a.rs", 1),
            ("src/b.rs", 1)
        ]
    );
    assert_eq!(index.references("Thing", Some("src/b")).len(), 1);
    // A page: the first hits in the same order, every use counted, and their files.
    let page = index.references_limited("Thing", None, 2);
    let first: Vec<(&str, u32)> = page.hits.iter().map(|r| (r.path, r.line)).collect();
    assert_eq!(first, [("other/c.rs", 1), ("src/a.rs", 0)]);
    assert_eq!((page.total, page.files), (4, 3));
    let none = index.references_limited("Thing", None, 0);
    assert_eq!((none.hits.len(), none.total, none.files), (0, 4, 3));
    let unknown = index.references_limited("Nothing", None, 5);
    assert_eq!(
        (unknown.hits.len(), unknown.total, unknown.files),
        (0, 0, 0)
    );
}

#[test]
fn resolve_prefers_the_imported_definition_then_the_ranked_file() {
    let index = sample();
    let ranks = rank_files(&index, Some("src/a.rs"));
    let thing: Vec<&str> = index
        .resolve("Thing", "src/a.rs", Some(&ranks))
        .iter()
        .map(|h| h.path)
        .collect();
    assert_eq!(thing, ["src/b.rs", "other/c.rs"]);
    // The file's own definition first.
    let shared: Vec<&str> = index
        .resolve("shared", "src/a.rs", Some(&ranks))
        .iter()
        .map(|h| h.path)
        .collect();
    assert_eq!(shared, ["src/a.rs", "other/c.rs"]);
    // From c.rs, c's own Thing wins.
    assert_eq!(
        index.resolve("Thing", "other/c.rs", None)[0].path,
        "other/c.rs"
    );
}

#[test]
fn ranking_follows_references_toward_the_focus() {
    let index = index_of(&[
        (
            "app.py",
            Language::Python,
            "from util import Helper\nHelper().go()\n",
        ),
        (
            "util.py",
            Language::Python,
            "class Helper:\n    def go(self): Store()\n",
        ),
        ("store.py", Language::Python, "class Store: pass\n"),
        ("lonely.py", Language::Python, "class Lonely: pass\n"),
    ]);
    let ranks = rank_files(&index, Some("app.py"));
    let order: Vec<&str> = ranks.top(4).iter().map(|(p, _)| *p).collect();
    // app (the jumps land there), then what it uses, then what that uses; unrelated last.
    assert_eq!(order, ["app.py", "util.py", "store.py", "lonely.py"]);
    assert_eq!(ranks.rank("lonely.py"), 0.0);
    let total: f64 = ranks.top(10).iter().map(|(_, r)| r).sum();
    assert!((total - 1.0).abs() < 1e-9, "{total}");
    // Unfocused, every file gets a share.
    assert!(rank_files(&index, None).rank("lonely.py") > 0.0);
}

#[test]
fn replacing_and_removing_a_file_updates_both_maps() {
    let mut index = sample();
    let before = index.revision();
    index.insert(
        "src/b.rs",
        FileStamp::default(),
        tags(Language::Rust, "pub struct Other;\n"),
    );
    assert!(index.revision() > before);
    let thing = Query {
        name: "Thing",
        ..Query::default()
    };
    assert_eq!(index.definitions(&thing).len(), 1);
    assert_eq!(index.references("Thing", Some("src/b.rs")).len(), 0);
    assert!(index.remove("other/c.rs"));
    assert!(!index.remove("other/c.rs"));
    assert!(index.definitions(&thing).is_empty());
    assert_eq!(index.file_count(), 2);
    // A freed slot is reused.
    index.insert(
        "new.rs",
        FileStamp::default(),
        tags(Language::Rust, "struct Thing;"),
    );
    assert_eq!(index.definitions(&thing)[0].path, "new.rs");
}

#[test]
fn encode_decode_round_trips_and_rejects_damage() {
    let index = sample();
    let bytes = encode(&index);
    let back = decode(&bytes).expect("decodes");
    assert_eq!(back.file_count(), 3);
    for path in ["src/a.rs", "src/b.rs", "other/c.rs"] {
        assert_eq!(back.file(path), index.file(path), "{path}");
    }
    assert_eq!(
        back.references("Thing", None).len(),
        index.references("Thing", None).len()
    );
    assert_eq!(encode(&back), bytes, "stable");
    // The checksum does not depend on how the payload was cut into chunks.
    let mut chunks = Vec::new();
    let header = super::persist::encode_streaming(&index, &mut |c| chunks.push(c.to_vec()));
    assert_eq!(&bytes[..header.len()], header);
    assert_eq!(&bytes[header.len()..], chunks.concat());

    // Any flipped byte in the payload is caught by the checksum; the header by its checks.
    for at in [40, bytes.len() / 2, bytes.len() - 1] {
        let mut bad = bytes.clone();
        bad[at] ^= 0x5a;
        assert_eq!(decode(&bad).err(), Some(DecodeError::Checksum), "at {at}");
    }
    let mut old = bytes.clone();
    old[16] = 0;
    assert_eq!(decode(&old).err(), Some(DecodeError::Version(0)));
    assert_eq!(
        decode(&bytes[..bytes.len() - 3]).err(),
        Some(DecodeError::Malformed("length"))
    );
    assert_eq!(decode(b"garbage").err(), Some(DecodeError::NotAnIndex));
    assert_eq!(decode(&[]).err(), Some(DecodeError::NotAnIndex));
}

#[test]
fn bounded_texts_cut_at_a_character_boundary() {
    assert_eq!(bounded("short", 10), "short");
    let cut = bounded(&"é".repeat(100), 11);
    assert!(cut.len() <= 11 && cut.ends_with('…'), "{cut}");
    let source = format!(
        "fn f() {{ {} }}\nstruct S {{ {} }}",
        "g();".repeat(5000),
        "a: u8, ".repeat(40)
    );
    let t = tags(Language::Rust, &source);
    assert!(t
        .definitions
        .iter()
        .all(|d| d.signature().len() <= MAX_SIGNATURE_BYTES));
    // Too many fields: none kept.
    assert_eq!(t.definitions[1].field_count(), 0);
    assert_eq!(t.references.len(), 1, "g once per line");
}

#[test]
fn plain_text_and_broken_code_do_not_panic() {
    let t = tags(
        Language::Python,
        "def (:\n  class\n\x00\u{feff}def ok(): pass\n",
    );
    assert!(t.definitions.iter().any(|d| d.name() == "ok"));
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&Language::Rust.grammar().unwrap())
        .unwrap();
    let tree = parser.parse("fn a() {}", None).unwrap();
    assert!(extract_tags(Language::PlainText, b"fn a() {}", &tree)
        .definitions
        .is_empty());
}

#[test]
fn the_packed_layout_stays_small() {
    // ~400 K definitions and ~300 K names over a large workspace: every byte counts 400 K
    // times (issue 25's 150 MB goal).
    assert_eq!(std::mem::size_of::<Definition>(), 40);
    assert_eq!(std::mem::size_of::<Places<(u32, u32)>>(), 24);
    assert_eq!(std::mem::size_of::<Places<u32>>(), 24);
}

#[test]
fn a_definition_keeps_its_fields_and_bounds_every_part() {
    let long = "x".repeat(5_000);
    let parts = DefinitionParts {
        name: long.clone(),
        kind: SymbolKind::Struct,
        container: Some(long.clone()),
        start_line: 1,
        end_line: 9,
        name_line: 2,
        signature: long.clone(),
        doc: long.clone(),
        fields: vec!["a: u32".into(), String::new(), "b:\nString".into()],
    };
    let d = Definition::from(parts);
    assert!(d.name().len() <= 1_000 && d.name().ends_with('…'));
    assert!(d.container().unwrap().len() <= 1_000);
    assert!(d.signature().len() <= MAX_SIGNATURE_BYTES);
    assert!(d.doc().len() <= MAX_DOC_BYTES);
    assert_eq!(d.fields().collect::<Vec<_>>(), ["a: u32", "", "b: String"]);
    assert_eq!(d.field_count(), 3);
    let plain = Definition::from(DefinitionParts {
        name: "f".into(),
        kind: SymbolKind::Function,
        container: None,
        start_line: 0,
        end_line: 0,
        name_line: 0,
        signature: "fn f()".into(),
        doc: "/// one\n/// two".into(),
        fields: Vec::new(),
    });
    assert_eq!(plain.fields().count(), 0);
    assert_eq!(plain.field_count(), 0);
    assert_eq!(plain.doc(), "/// one\n/// two");
    assert_eq!(plain.container(), None);
}

#[test]
fn places_keep_one_inline_and_many_in_a_list() {
    let mut places = Places::default();
    assert!(places.is_empty());
    places.push(1u32);
    assert!(matches!(places, Places::One(1)));
    places.push(2);
    places.push(3);
    assert_eq!(places.as_slice(), [1, 2, 3]);
    places.retain(|p| *p == 2);
    assert!(matches!(places, Places::One(2)));
    places.retain(|p| *p != 2);
    assert!(places.is_empty());
    assert_eq!(places.as_slice(), [] as [u32; 0]);
}

#[test]
fn a_name_whose_hash_collides_is_still_its_own_name() {
    let mut index = SymbolIndex::new();
    let first = index.intern("first");
    // Pretend "second" hashes like "first": it must get its own id, found again by name.
    let hash = index.name_ids.hash("second");
    index.name_ids.by_hash.insert(hash, first);
    let second = index.intern("second");
    assert_ne!(first, second);
    assert_eq!(index.name_id("second"), Some(second));
    assert_eq!(index.name_id("first"), Some(first));
    assert_eq!(index.intern("second"), second);
    assert_eq!(index.name(second), "second");
    assert_eq!(index.name_id("third"), None);
}

#[test]
fn a_deeply_nested_file_keeps_every_definition_with_its_parts() {
    // Issue 41: each definition was looked up from the root, so 20,000 nested modules cost
    // 20,000 walks of 20,000 levels. One walk now; every module and the innermost function
    // are there, with their lines, container, signature and doc.
    let depth = 20_000;
    let source = format!(
        "{}/// The bottom.\nfn innermost() {{}}\n{}",
        "mod m {\n".repeat(depth),
        "}\n".repeat(depth)
    );
    let t = tags(Language::Rust, &source);
    assert_eq!(t.definitions.len(), depth + 1);
    let last = t.definitions.last().unwrap();
    assert_eq!(last.name(), "innermost");
    assert_eq!(last.signature(), "fn innermost()");
    assert_eq!(last.doc(), "/// The bottom.");
    assert_eq!(last.container(), Some("m"));
    assert_eq!(
        (last.start_line, last.name_line),
        (depth as u32 + 1, depth as u32 + 1)
    );
    let module = &t.definitions[depth - 1];
    assert_eq!((module.name(), module.signature()), ("m", "mod m"));
    assert_eq!(module.start_line, depth as u32 - 1);

    let mut index = SymbolIndex::new();
    let stamp = FileStamp {
        mtime_ns: 0,
        size: 1,
    };
    index.insert("deep.rs", stamp, t.clone());
    index.insert("deep_too.rs", stamp, t);
    let found = index.definitions(&Query {
        name: "innermost",
        kind: None,
        path_prefix: None,
    });
    assert_eq!(found.len(), 2);
    assert!(index.remove("deep.rs"));
    assert_eq!(
        index
            .definitions(&Query {
                name: "m",
                kind: None,
                path_prefix: None,
            })
            .len(),
        depth
    );
}

#[test]
fn items_inside_macro_invocations_are_definitions_on_their_lines() {
    check(
        Language::Rust,
        r#"cfg_rt! {
    /// Spawns.
    pub fn spawn<F>(f: F) -> JoinHandle { Builder::new().spawn(f) }
    cfg_net! {
        pub struct Tcp { port: u16 }
    }
}
impl Runtime {
    cfg_rt! { pub fn block_on(&self) {} }
}
define_error! {
    pub enum Error { Io, Parse }
}
cfg_if::cfg_if! {
    if #[cfg(unix)] {
        mod unix;
        pub use unix::Pipe;
    } else {
        fn fallback() {}
    }
}
fn main() { println!("fn not_an_item {}", 1); vec![1]; }
"#,
        expect![[r#"
            2-2 function spawn: pub fn spawn<F>(f: F) -> JoinHandle
                doc| /// Spawns.
            4-4 struct Tcp: pub struct Tcp
                field| port: u16
            7-9 impl impl Runtime: impl Runtime
            8-8 method block_on (in impl Runtime): pub fn block_on(&self)
            11-11 enum Error: pub enum Error
                field| Io
                field| Parse
            15-15 module unix: mod unix;
            18-18 function fallback: fn fallback()
            21-21 function main: fn main()
            refs: cfg_rt@0 F@2 JoinHandle@2 Builder@2 cfg_rt@8 define_error@10 Io@11 Parse@11 cfg_if@13 Pipe@16 println@21 vec@21 new@2 spawn@2 cfg_net@3 cfg@14 unix@16
            import@16: pub use unix::Pipe; [unix, Pipe]
        "#]],
    );
}

#[test]
fn macro_bodies_are_parsed_again_up_to_a_bound_per_file() {
    // 400 invocations of about 140 bytes: past the 32 KiB the index parses again.
    let padding = "x".repeat(100);
    let source: String = (0..400)
        .map(|n| format!("m! {{ pub fn item_{n}() {{ let _ = \"{padding}\"; }} }}\n"))
        .collect();
    let tags = tags(Language::Rust, &source);
    let found = |n: usize| {
        tags.definitions
            .iter()
            .any(|d| d.name() == format!("item_{n}"))
    };
    assert!(found(0) && found(100), "the first bodies are read");
    assert!(!found(399), "the last are past the bound");
}

#[test]
fn a_use_ranks_by_its_qualifier_then_its_kind() {
    use crate::syntax::IdentifierKind;
    let index = index_of(&[
        (
            "email/reader.py",
            Language::Python,
            "from . import errors\nimport email.utils as eu\n",
        ),
        ("email/_other.py", Language::Python, "class ParseError: pass\ndef parseaddr(): pass\n"),
        ("email/errors.py", Language::Python, "class ParseError: pass\n"),
        ("email/utils.py", Language::Python, "def parseaddr(): pass\n"),
        (
            "src/a.rs",
            Language::Rust,
            "pub struct Alpha;\nimpl Alpha { pub fn new() -> Alpha { Alpha } }\n",
        ),
        (
            "src/b.rs",
            Language::Rust,
            "pub struct Beta;\nimpl Beta { pub fn new() -> Beta { Beta } }\npub mod Gamma {}\nfn Gamma() {}\n",
        ),
    ]);
    let first = |name, kind, qualifier, from| {
        let usage = Usage {
            kind: Some(kind),
            qualifier,
        };
        let hit = index.resolve_used(name, usage, from, None)[0];
        (hit.path.to_string(), hit.definition.start_line)
    };
    let py = "email/reader.py";
    // `errors.ParseError`: the module the qualifier names, though `_other` sorts first.
    assert_eq!(
        first("ParseError", IdentifierKind::Field, Some("errors"), py).0,
        "email/errors.py"
    );
    // `eu.parseaddr`: through the alias of `import email.utils as eu`.
    assert_eq!(
        first("parseaddr", IdentifierKind::Field, Some("eu"), py).0,
        "email/utils.py"
    );
    // `Beta::new`: the `new` of `impl Beta`, though a.rs sorts first.
    assert_eq!(
        first("new", IdentifierKind::Value, Some("Beta"), "src/c.rs"),
        ("src/b.rs".to_string(), 1)
    );
    // A call prefers the function, a path segment the module.
    assert_eq!(
        first("Gamma", IdentifierKind::Value, None, "src/c.rs"),
        ("src/b.rs".to_string(), 3)
    );
    assert_eq!(
        first("Gamma", IdentifierKind::Module, None, "src/c.rs"),
        ("src/b.rs".to_string(), 2)
    );
}
