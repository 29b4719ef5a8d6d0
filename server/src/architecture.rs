//! The rules of ARCHITECTURE.md that the compiler cannot see, checked over the sources of
//! both crates. Each rule is a function over `(path, code)` pairs, so each is also run on a
//! small made-up tree that breaks it: the proof that the check can fail.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The server's top-level modules, bottom row first: a module may name (`crate::X`) only
/// modules on lower rows. `lib.rs` and `main.rs` are above every row.
const SERVER_LAYERS: &[&[&str]] = &[
    &["locks", "protocol"],
    &["process_groups", "store"],
    &["sandbox", "symbols"],
    &["gather", "provider"],
    &["host"],
    &["mcp", "tools"],
    &["agent"],
    &["acp", "cli", "lsp"],
];

/// At most this many functions outside tests may be longer than `LONG` lines, and none
/// longer than `LONGEST` (from the `fn` line to its closing brace).
const LONG: usize = 80;
const LONGEST: usize = 120;
const MAX_LONG: usize = 5;

struct Source {
    /// Relative to the crate's `src/`, with `/` separators.
    path: String,
    /// The file without its inline test module.
    code: String,
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A file's test-only parts are not held to these rules: files of tests (`tests.rs`,
/// `*_tests.rs`, `test_support.rs`, this one) and an inline `mod tests { … }` at the end of
/// a file.
fn is_test_file(name: &str) -> bool {
    matches!(name, "tests.rs" | "test_support.rs" | "architecture.rs")
        || name.ends_with("_tests.rs")
}

fn without_inline_tests(text: &str) -> &str {
    match text.find("#[cfg(test)]\nmod tests {") {
        Some(at) => &text[..at],
        None => text,
    }
}

fn crate_sources(manifest_relative: &str) -> Vec<Source> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(manifest_relative);
    let mut files = Vec::new();
    walk(&src, &mut files);
    let sources: Vec<Source> = files
        .into_iter()
        .filter(|path| !is_test_file(path.file_name().unwrap().to_str().unwrap()))
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            Source {
                path: path
                    .strip_prefix(&src)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/"),
                code: without_inline_tests(&text).to_string(),
            }
        })
        .collect();
    assert!(sources.len() > 10, "the sources were read from {src:?}");
    sources
}

fn server() -> Vec<Source> {
    crate_sources("src")
}

fn core() -> Vec<Source> {
    crate_sources("../crates/core/src")
}

fn dev_kit() -> Vec<Source> {
    crate_sources("../crates/dev/src")
}

/// The top-level module a file belongs to (`agent/turn/mod.rs` → `agent`, `host.rs` →
/// `host`).
fn top_module(path: &str) -> &str {
    let first = path.split('/').next().unwrap();
    first.strip_suffix(".rs").unwrap_or(first)
}

/// Every `crate::X` a source names, as (from, to, file) between different top-level modules.
fn module_edges(sources: &[Source]) -> BTreeSet<(String, String, String)> {
    let mut edges = BTreeSet::new();
    for source in sources {
        let from = top_module(&source.path);
        for (at, _) in source.code.match_indices("crate::") {
            let before = source.code[..at].chars().next_back();
            // `agentls_core::x` and `some_crate::y` are other crates' paths.
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let rest = &source.code[at + "crate::".len()..];
            let to: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !to.is_empty() && to != from {
                edges.insert((from.to_string(), to, source.path.clone()));
            }
        }
    }
    edges
}

/// The imports that go up or sideways in `layers`, and the modules no row names.
fn layer_violations(sources: &[Source], layers: &[&[&str]]) -> Vec<String> {
    let row = |module: &str| layers.iter().position(|row| row.contains(&module));
    let mut problems = Vec::new();
    for (from, to, file) in module_edges(sources) {
        match (row(&from), row(&to)) {
            (Some(a), Some(b)) if b >= a => {
                problems.push(format!("{file}: {from} (row {a}) names {to} (row {b})"))
            }
            (Some(_), None) => problems.push(format!("{file}: {to} is in no layer")),
            _ => {}
        }
    }
    for source in sources {
        let module = top_module(&source.path);
        if !matches!(module, "lib" | "main") && row(module).is_none() {
            problems.push(format!("{}: {module} is in no layer", source.path));
        }
    }
    problems.sort();
    problems.dedup();
    problems
}

/// A cycle among the top-level modules, as the path that closes it, if there is one.
fn find_cycle(sources: &[Source]) -> Option<Vec<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, to, _) in module_edges(sources) {
        graph.entry(from).or_default().insert(to);
    }
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, &graph, &mut Vec::new(), &mut done))
}

/// Production files whose dependencies hide behind `use super::*`.
fn glob_imports_of_parent(sources: &[Source]) -> Vec<String> {
    sources
        .iter()
        .filter(|s| s.code.lines().any(|l| l.trim() == "use super::*;"))
        .map(|s| s.path.clone())
        .collect()
}

/// Every function with a body, as (lines, file:name), longest first.
fn function_lengths(sources: &[Source]) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for source in sources {
        let lines: Vec<&str> = source.code.lines().collect();
        for (start, line) in lines.iter().enumerate() {
            let Some(name) = fn_name(line) else { continue };
            let indent = &line[..line.len() - line.trim_start().len()];
            let close = format!("{indent}}}");
            // A declaration without a body (a trait's) ends with `;` before any `{`.
            let body = lines[start..]
                .iter()
                .position(|l| l.contains('{') || l.trim_end().ends_with(';'));
            if body.is_none_or(|at| !lines[start + at].contains('{')) {
                continue;
            }
            if let Some(end) = lines[start..].iter().position(|l| *l == close) {
                found.push((end + 1, format!("{}:{name}", source.path)));
            }
        }
    }
    found.sort_by(|a, b| b.cmp(a));
    found
}

/// The name of the function a line starts, if it starts one.
fn fn_name(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    for prefix in ["pub(crate) ", "pub(super) ", "pub "] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    if rest.starts_with("pub(in ") {
        rest = &rest[rest.find(") ")? + 2..];
    }
    for prefix in ["const ", "async ", "unsafe "] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("fn ")?;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    Some(&rest[..end])
}

fn length_violations(sources: &[Source]) -> Vec<String> {
    let lengths = function_lengths(sources);
    let long: Vec<&(usize, String)> = lengths.iter().filter(|(n, _)| *n > LONG).collect();
    let mut problems: Vec<String> = long
        .iter()
        .filter(|(n, _)| *n > LONGEST)
        .map(|(n, f)| format!("{f} is {n} lines (at most {LONGEST})"))
        .collect();
    if long.len() > MAX_LONG {
        problems.push(format!(
            "{} functions are over {LONG} lines (at most {MAX_LONG}): {long:?}",
            long.len()
        ));
    }
    problems
}

fn source(path: &str, code: &str) -> Source {
    Source {
        path: path.into(),
        code: code.into(),
    }
}

#[test]
fn the_servers_modules_import_only_lower_layers() {
    let problems = layer_violations(&server(), SERVER_LAYERS);
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn the_layer_check_fails_on_an_upward_or_sideways_import() {
    let tree = [
        source("store/files.rs", "use crate::host::FileChange;"),
        source("tools/shell.rs", "fn f() { crate::mcp::x(); }"),
        source("host.rs", "use crate::store::files; use agentls_core::x;"),
        source("newfolder/mod.rs", ""),
    ];
    expect_test::expect![[r#"
        [
            "newfolder/mod.rs: newfolder is in no layer",
            "store/files.rs: store (row 1) names host (row 4)",
            "tools/shell.rs: tools (row 5) names mcp (row 5)",
        ]
    "#]]
    .assert_debug_eq(&layer_violations(&tree, SERVER_LAYERS));
}

#[test]
fn the_cores_modules_form_no_cycle() {
    let cycle = find_cycle(&core());
    assert!(
        cycle.is_none(),
        "a cycle among the core's modules: {cycle:?}"
    );
}

#[test]
fn the_cycle_check_finds_a_cycle() {
    let tree = [
        source("history.rs", "use crate::prompts::Prompts;"),
        source("prompts.rs", "use crate::compaction::Style;"),
        source("compaction/mod.rs", "use crate::history::Entry;"),
        source("tokens.rs", ""),
    ];
    assert_eq!(
        find_cycle(&tree),
        Some(vec![
            "compaction".to_string(),
            "history".into(),
            "prompts".into(),
            "compaction".into()
        ])
    );
    assert_eq!(find_cycle(&tree[..2]), None);
}

#[test]
fn no_production_file_imports_its_parent_whole() {
    let mut offenders = glob_imports_of_parent(&server());
    offenders.extend(glob_imports_of_parent(&core()));
    offenders.extend(glob_imports_of_parent(&dev_kit()));
    assert!(offenders.is_empty(), "use super::* in {offenders:?}");
    let tree = [
        source("a.rs", "use super::*;\nfn a() {}"),
        source(
            "b.rs",
            "fn b() {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n}",
        ),
    ];
    let tree: Vec<Source> = tree
        .into_iter()
        .map(|s| source(&s.path, without_inline_tests(&s.code)))
        .collect();
    assert_eq!(glob_imports_of_parent(&tree), vec!["a.rs".to_string()]);
}

#[test]
fn functions_stay_short() {
    let mut sources = server();
    sources.extend(core());
    sources.extend(dev_kit());
    let problems = length_violations(&sources);
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn the_length_check_counts_from_fn_to_its_closing_brace() {
    let body = |n: usize| "    let x = 1;\n".repeat(n);
    let tree = [
        source(
            "a.rs",
            &format!(
                "pub(in crate::agent) async fn long(\n    a: u8,\n) {{\n{}}}\n",
                body(LONGEST)
            ),
        ),
        source("b.rs", "trait T {\n    fn declared(&self);\n}\n"),
        source(
            "c.rs",
            &format!("impl X {{\n    fn ok() {{\n{}    }}\n}}\n", body(10)),
        ),
    ];
    let lengths = function_lengths(&tree);
    assert_eq!(lengths[0], (LONGEST + 4, "a.rs:long".to_string()));
    assert_eq!(lengths[1], (12, "c.rs:ok".to_string()));
    assert_eq!(lengths.len(), 2);
    assert_eq!(length_violations(&tree).len(), 1);
}

#[test]
fn only_the_lsp_adapter_names_tower_lsp() {
    let offenders: Vec<String> = server()
        .into_iter()
        .filter(|s| {
            !(s.path.starts_with("lsp/") || s.path == "main.rs") && s.code.contains("tower_lsp")
        })
        .map(|s| s.path)
        .collect();
    assert!(
        offenders.is_empty(),
        "tower_lsp outside lsp/: {offenders:?}"
    );
}
