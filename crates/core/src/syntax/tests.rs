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
    let source = "use std::collections::HashMap;\nfn f() { Self::make(); crate::util::go(); }\n";
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
    // The outline nests MAX_OUTLINE_DEPTH deep; the modules below follow each other there.
    assert_eq!(found.path.len(), MAX_OUTLINE_DEPTH + 1);
    assert_eq!(found.path.last().map(String::as_str), Some("leaf"));
    assert_eq!(
        referenced_identifiers(Language::Rust, source.as_bytes(), &tree, 0..source.len()),
        vec![
            Identifier {
                name: "m".into(),
                kind: IdentifierKind::Value,
                qualifier: None,
            },
            Identifier {
                name: "leaf".into(),
                kind: IdentifierKind::Value,
                qualifier: None,
            },
            Identifier {
                name: "x".into(),
                kind: IdentifierKind::Value,
                qualifier: None,
            },
        ]
    );
}

#[test]
fn a_deeply_nested_outline_is_capped_and_keeps_every_symbol_in_order() {
    // 5,000 nested modules, a function in the innermost: deeper than MAX_OUTLINE_DEPTH, the
    // members follow their module at the deepest level, still in source order.
    let depth = 5_000;
    let source = format!(
        "{}fn innermost() {{}}\n{}",
        "mod m {\n".repeat(depth),
        "}\n".repeat(depth)
    );
    let symbols = outline(
        Language::Rust,
        source.as_bytes(),
        &parse(Language::Rust, &source),
    );
    let mut level = &symbols;
    let mut nesting = 0;
    while let [first, ..] = level.as_slice() {
        if first.children.is_empty() {
            break;
        }
        level = &first.children;
        nesting += 1;
    }
    assert_eq!(nesting, MAX_OUTLINE_DEPTH);
    assert_eq!(level.len(), depth - MAX_OUTLINE_DEPTH + 1);
    assert!(level[..level.len() - 1].iter().all(|s| s.name == "m"));
    let last = level.last().unwrap();
    assert_eq!(
        (last.name.as_str(), last.kind),
        ("innermost", SymbolKind::Function)
    );
    assert!(level
        .windows(2)
        .all(|w| w[0].range.start < w[1].range.start));
    // Below the cap, a module still holds its members.
    assert_eq!(symbols[0].children.len(), 1);
}

#[test]
fn a_qualified_name_keeps_its_qualifier() {
    let qualified = |language, source: &str| {
        let tree = parse(language, source);
        referenced_identifiers(language, source.as_bytes(), &tree, 0..source.len())
            .into_iter()
            .filter_map(|i| Some(format!("{}<-{}", i.name, i.qualifier?)))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        qualified(
            Language::Python,
            "x = email.utils.parseaddr(errors.Bad, f().y, a: m.T = 1)\n"
        ),
        [
            "utils<-email",
            "parseaddr<-email.utils",
            "Bad<-errors",
            "T<-m"
        ]
    );
    assert_eq!(
        qualified(
            Language::Rust,
            "fn f() { Runtime::new(); crate::io::copy(); <T as U>::x(); }"
        ),
        ["new<-Runtime", "io<-crate", "copy<-crate::io"]
    );
}
