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
    cycle_in(&graph)
}

/// A cycle in a graph of names, as the path that closes it, if there is one.
fn cycle_in(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
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
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

/// A file's module path from the crate root (`agent/turn/mod.rs` → `[agent, turn]`,
/// `tools/shell.rs` → `[tools, shell]`, `lib.rs` → `[]`).
fn module_path(path: &str) -> Vec<String> {
    let path = path.strip_suffix(".rs").unwrap_or(path);
    let mut segments: Vec<String> = path.split('/').map(String::from).collect();
    if segments.last().is_some_and(|s| s == "mod") || matches!(path, "lib" | "main") {
        segments.pop();
    }
    segments
}

/// The inline modules of a file (`mod linux { … }`), as (name, start, end) byte ranges: a
/// `super::` inside one is relative to it. Like `function_lengths`, it relies on rustfmt: the
/// closing brace is the first line at the `mod` line's indent.
fn inline_modules(code: &str) -> Vec<(String, usize, usize)> {
    let mut found = Vec::new();
    let mut open: Vec<(String, String, usize)> = Vec::new();
    let mut at = 0;
    for line in code.split_inclusive('\n') {
        let text = line.trim_end();
        let indent = &text[..text.len() - text.trim_start().len()];
        if open
            .last()
            .is_some_and(|(_, i, _)| text == format!("{i}}}"))
        {
            let (name, _, start) = open.pop().unwrap();
            found.push((name, start, at + line.len()));
        } else if let Some(name) = inline_mod_name(text.trim_start()) {
            open.push((name.to_string(), indent.to_string(), at));
        }
        at += line.len();
    }
    found
}

/// `pub(crate) mod linux {` → `linux`.
fn inline_mod_name(line: &str) -> Option<&str> {
    let mut rest = line;
    if rest.starts_with("pub(") {
        rest = rest[rest.find(") ")? + 2..].trim_start();
    }
    rest = rest.strip_prefix("pub ").unwrap_or(rest);
    rest.strip_prefix("mod ")?.strip_suffix(" {")
}

/// Every path a source names from `crate::`, `super::` or `self::`, resolved to a module path
/// from the crate root, use groups expanded: `super::{a::X, b}` in `m::n` → `m::a::X`, `m::b`.
/// `pub(in crate::x)` names no item.
fn named_paths(source: &Source) -> Vec<Vec<String>> {
    let file_module = module_path(&source.path);
    let inline = inline_modules(&source.code);
    let code = &source.code;
    let mut found = Vec::new();
    let mut at = 0;
    while at < code.len() {
        let rest = &code.as_bytes()[at..];
        let starts = [&b"crate::"[..], b"super::", b"self::"]
            .iter()
            .any(|k| rest.starts_with(k));
        let before = code[..at].chars().next_back();
        if !starts
            || before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
            || code[..at].ends_with("in ")
        {
            at += 1;
            while !code.is_char_boundary(at) {
                at += 1;
            }
            continue;
        }
        let mut module = file_module.clone();
        module.extend(
            inline
                .iter()
                .filter(|(_, start, end)| (*start..*end).contains(&at))
                .map(|(name, _, _)| name.clone()),
        );
        at += use_tree(&code[at..], module, &mut found);
    }
    found
}

/// Reads one path or use tree at the start of `code`, from `path`, into `out`; returns how
/// many bytes it read.
fn use_tree(code: &str, mut path: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let skip_space = |at: usize| at + code[at..].len() - code[at..].trim_start().len();
    let mut at = 0;
    loop {
        at = skip_space(at);
        if code[at..].starts_with('{') {
            at += 1;
            loop {
                at += use_tree(&code[at..], path.clone(), out);
                at = skip_space(at);
                if code[at..].starts_with(',') {
                    at += 1;
                } else {
                    if code[at..].starts_with('}') {
                        at += 1;
                    }
                    return at;
                }
            }
        }
        if code[at..].starts_with('}') {
            return at;
        }
        let ident = code[at..]
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(code.len() - at);
        match &code[at..at + ident] {
            "" => {
                // `*`, or the end of an expression's path.
                at += usize::from(code[at..].starts_with('*'));
                out.push(path);
                return at;
            }
            "super" => {
                path.pop();
            }
            "self" => {}
            "crate" => path.clear(),
            name => path.push(name.to_string()),
        }
        at += ident;
        if code[at..].starts_with("::") {
            at += 2;
            continue;
        }
        out.push(path);
        // `a as b`: the alias names nothing.
        let after = skip_space(at);
        if let Some(alias) = code[after..].strip_prefix("as ") {
            let alias = alias.trim_start();
            let end = alias
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(alias.len());
            at = code.len() - alias.len() + end;
        }
        return at;
    }
}

/// Every edge between two files (or subfolders) of one folder: a source under `a` names
/// `crate::<folder>::b` or `super::b`. Keyed by folder, then (a, b), with the files that name it.
type FolderEdges = BTreeMap<Vec<String>, BTreeMap<(String, String), BTreeSet<String>>>;

fn folder_edges(sources: &[Source]) -> FolderEdges {
    let modules: Vec<Vec<String>> = sources.iter().map(|s| module_path(&s.path)).collect();
    // A folder's nodes: its files and subfolders, each the first segment below it.
    let is_node = |folder: &[String], name: &str| {
        modules
            .iter()
            .any(|m| m.len() > folder.len() && m.starts_with(folder) && m[folder.len()] == name)
    };
    let mut edges = FolderEdges::new();
    for source in sources {
        for path in named_paths(source) {
            let module = module_path(&source.path);
            let common = module.iter().zip(&path).take_while(|(a, b)| a == b).count();
            let (Some(from), Some(to)) = (module.get(common), path.get(common)) else {
                continue;
            };
            let folder = &module[..common];
            if is_node(folder, from) && is_node(folder, to) {
                edges
                    .entry(folder.to_vec())
                    .or_default()
                    .entry((from.clone(), to.clone()))
                    .or_default()
                    .insert(source.path.clone());
            }
        }
    }
    edges
}

/// A cycle among the files of each folder, with the files that make each edge.
fn folder_cycles(sources: &[Source]) -> Vec<String> {
    let mut problems = Vec::new();
    for (folder, edges) in folder_edges(sources) {
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (from, to) in edges.keys() {
            graph.entry(from.clone()).or_default().insert(to.clone());
        }
        let folder = if folder.is_empty() {
            "src".to_string()
        } else {
            folder.join("/")
        };
        // Each cycle found loses its closing edge, so that the next one is seen too.
        while let Some(cycle) = cycle_in(&graph) {
            let steps: Vec<String> = cycle
                .windows(2)
                .map(|pair| {
                    let files = &edges[&(pair[0].clone(), pair[1].clone())];
                    let files: Vec<&str> = files.iter().map(String::as_str).collect();
                    format!("{} → {} ({})", pair[0], pair[1], files.join(", "))
                })
                .collect();
            problems.push(format!("{folder}/: {}", steps.join("; ")));
            let [.., last, first] = &cycle[..] else {
                unreachable!("a cycle has an edge")
            };
            graph.get_mut(last).unwrap().remove(first);
        }
    }
    problems
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
fn the_files_of_each_folder_form_no_cycle() {
    let mut problems = folder_cycles(&server());
    problems.extend(
        folder_cycles(&core())
            .into_iter()
            .map(|p| format!("core: {p}")),
    );
    assert!(
        problems.is_empty(),
        "files of one folder import each other in a cycle (a → b: a file under a names \
         crate::<folder>::b or super::b):\n{problems:#?}"
    );
}

#[test]
fn the_folder_cycle_check_finds_a_cycle_between_two_files() {
    let tree = [
        // A cycle through `crate::` paths, one of them in a use group.
        source("agent/compact/mod.rs", "use crate::agent::sessions::Job;"),
        source(
            "agent/sessions/mod.rs",
            "use crate::agent::{\n    compact::{Prepared, Outcome},\n    Agent,\n};",
        ),
        // A cycle through `super::`, from a file and from a subfolder's file.
        source("tools/shell.rs", "fn f() { super::background::start(); }"),
        source("tools/background/mod.rs", ""),
        source(
            "tools/background/reap.rs",
            "use super::super::shell as sh;\nuse super::Sessions;",
        ),
        // One way only: no cycle.
        source("tools/grep.rs", "use crate::tools::shell::Shell;"),
        // `super::` in an inline module is relative to it; `pub(in …)` names nothing.
        source(
            "store/watch.rs",
            "mod linux {\n    use super::max_dirs;\n}\npub(in crate::store::paths) fn f() {}",
        ),
        source("store/max_dirs.rs", "use super::watch::Watch;"),
        source("store/paths.rs", "use super::watch;"),
    ];
    expect_test::expect![[r#"
        [
            "agent/: compact → sessions (agent/compact/mod.rs); sessions → compact (agent/sessions/mod.rs)",
            "tools/: background → shell (tools/background/reap.rs); shell → background (tools/shell.rs)",
        ]
    "#]]
    .assert_debug_eq(&folder_cycles(&tree));
    assert_eq!(folder_cycles(&tree[1..]).len(), 1);
    assert_eq!(folder_cycles(&tree[3..]), Vec::<String>::new());
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
