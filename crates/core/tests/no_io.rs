//! Architecture invariant: the core does no IO. Its dependency tree (read from the
//! workspace's Cargo.lock, so transitive dependencies count too) holds no async runtime, no
//! HTTP client, no file walker, no libc and no LSP transport.

use std::collections::{BTreeSet, HashMap};

const FORBIDDEN: [&str; 8] = [
    "tokio",
    "reqwest",
    "hyper",
    "ignore",
    "walkdir",
    "libc",
    "tower-lsp",
    "mio",
];

/// Package name → names of its dependencies, from Cargo.lock.
fn lock_graph(lock: &str) -> HashMap<String, Vec<String>> {
    let mut graph = HashMap::new();
    for package in lock.split("[[package]]").skip(1) {
        let name = package
            .lines()
            .find_map(|l| l.strip_prefix("name = "))
            .map(|n| n.trim_matches('"').to_string())
            .expect("a package has a name");
        let mut deps = Vec::new();
        let mut in_deps = false;
        for line in package.lines() {
            if line.starts_with("dependencies = [") {
                in_deps = true;
            } else if in_deps && line.starts_with(']') {
                in_deps = false;
            } else if in_deps {
                // ` "name",` or ` "name version",`
                let entry = line.trim().trim_end_matches(',').trim_matches('"');
                deps.push(entry.split(' ').next().unwrap_or("").to_string());
            }
        }
        graph.entry(name).or_insert_with(Vec::new).extend(deps);
    }
    graph
}

#[test]
fn the_core_depends_on_nothing_that_does_io() {
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock"))
        .expect("the workspace's Cargo.lock");
    let graph = lock_graph(&lock);
    let mut seen = BTreeSet::new();
    let mut todo = vec!["agentls-core".to_string()];
    while let Some(name) = todo.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        todo.extend(graph.get(&name).cloned().unwrap_or_default());
    }
    assert!(seen.len() > 5, "the lock file was read: {seen:?}");
    let found: Vec<&str> = FORBIDDEN
        .iter()
        .copied()
        .filter(|name| seen.contains(*name))
        .collect();
    assert!(
        found.is_empty(),
        "agentls-core's dependency tree holds {found:?}; the core must do no IO (move the code \
         that needs them to the server crate)"
    );
    // The check itself works: the server's tree does hold them.
    let mut server = BTreeSet::new();
    let mut todo = vec!["agentls".to_string()];
    while let Some(name) = todo.pop() {
        if server.insert(name.clone()) {
            todo.extend(graph.get(&name).cloned().unwrap_or_default());
        }
    }
    assert!(server.contains("tokio") && server.contains("tower-lsp"));
}
