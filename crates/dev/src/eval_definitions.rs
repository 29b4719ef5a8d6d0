//! `agentls-dev eval definitions`: do the definitions a function needs reach the editor block?
//!
//! On real code not written here (crates from cargo's registry, macro-heavy ones among
//! them, packages of Python's standard library), each a workspace of its own: functions are
//! sampled by a seed; for each, the expected definitions are those of another file that the
//! code says its names mean (`definition_truth`): a name (every identifier leaf of its
//! syntax tree, its own name aside) defined exactly once in the workspace, items inside
//! macro invocations counted; a name its Python imports take from a module; `q.name`
//! through the module `q` imports; Rust's `Type::name` through `impl Type`. The editor block is then built exactly as `agentls context FILE:LINE` builds it
//! (the same gather over the disk, only the active file open, the cursor on the function's
//! name) and a definition counts as present when the `definitions` part shows its defining
//! line under its path. Reported: recall, the part's median tokens, the block's fill of its
//! budget. The cases can be exported as JSON (`scripts/eval-aider` measures Aider's repo
//! map on them). For the same cases, the repository map (`context.repoMap.maxTokens`, one
//! map per workspace, as the server renders it) is measured at 1,024, 2,048 and 4,096
//! tokens: how many expected definitions the map alone holds. And `find_symbol`'s
//! precision: at calls `q.name(…)` / `q::name(…)` of names defined in several places where
//! the qualifier says which, whether the first definition it returns for `q.name` is that.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use agentls::gather::{self, DiskSource};
use agentls_core::config::Config;
use agentls_core::context::AssemblyCache;
use agentls_core::document::DocumentSnapshot;
use agentls_core::editor_context::{EditorContext, PartReport};
use agentls_core::editor_state::EditorState;
use agentls_core::history::History;
use agentls_core::inspect;
use agentls_core::language::Language;
use agentls_core::syntax::{self, Symbol, SymbolKind};
use agentls_core::tokens::Calibration;

use crate::definition_truth;

/// Crates of cargo's registry (the newest version present) measured by default.
pub const DEFAULT_CRATES: [&str; 11] = [
    "hyper",
    "regex-automata",
    "clap_builder",
    "rustls",
    "ignore",
    "tower-lsp",
    "tracing-subscriber",
    "reqwest",
    // Macro-heavy: items inside `cfg_*! { … }` and wrapper macros.
    "tokio",
    "nix",
    "futures-util",
];

/// Packages of Python's standard library measured by default.
pub const DEFAULT_PYTHON_PACKAGES: [&str; 10] = [
    "email",
    "asyncio",
    "http",
    "importlib",
    "concurrent",
    "xml",
    "urllib",
    // Names used through their module (`from . import util` then `util.debug(…)`).
    "multiprocessing",
    "unittest",
    "json",
];

pub struct DefinitionsEvalOptions {
    /// Workspaces to measure; empty = the default crates and Python packages found here.
    pub workspaces: Vec<PathBuf>,
    /// Functions sampled per workspace.
    pub per_workspace: usize,
    pub seed: u64,
    /// Where to write the cases and the results as JSON.
    pub export: Option<PathBuf>,
}

impl Default for DefinitionsEvalOptions {
    fn default() -> Self {
        DefinitionsEvalOptions {
            workspaces: Vec::new(),
            per_workspace: 8,
            seed: 1,
            export: None,
        }
    }
}

/// A definition a case expects in the block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub name: String,
    /// Relative to the workspace root, '/'-separated.
    pub path: String,
    /// 1-based line of the definition's name.
    pub line: usize,
    /// That line's text, trimmed.
    pub text: String,
}

/// A function with the cursor on its name, and what it should bring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    pub workspace: PathBuf,
    pub path: String,
    pub function: String,
    /// 1-based line and column (chars) of the function's name: where the cursor is.
    pub line: usize,
    pub column: usize,
    pub expected: Vec<Expected>,
}

/// What the block brought for one case.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub found: Vec<bool>,
    pub definitions_tokens: usize,
    pub block_tokens: usize,
    pub budget: usize,
    pub parts: Vec<PartReport>,
}

pub struct WorkspaceReport {
    pub root: PathBuf,
    pub files: usize,
    pub candidates: usize,
    pub cases: Vec<(Case, Outcome)>,
    /// The workspace's repository map at each of [`MAP_BUDGETS`].
    pub maps: Vec<MapMeasure>,
    /// Qualified call sites of ambiguous names the code resolves, in all.
    pub site_candidates: usize,
    /// Those asked of `find_symbol` (at most [`SITES_PER_WORKSPACE`]): whether its first
    /// definition was the one meant.
    pub sites: Vec<(CallSite, bool)>,
}

/// Call sites asked of `find_symbol` per workspace, drawn by the seed.
pub const SITES_PER_WORKSPACE: usize = 200;

/// Budgets the repository map is measured at (Aider's map was measured at the same).
pub const MAP_BUDGETS: [usize; 3] = [1_024, 2_048, 4_096];

/// The repository map of a workspace at one budget.
pub struct MapMeasure {
    pub budget: usize,
    pub tokens: usize,
    /// (path, 0-based line of the name, name) of every entry.
    pub entries: std::collections::HashSet<(String, u32, String)>,
}

impl MapMeasure {
    pub fn holds(&self, expected: &Expected) -> bool {
        let line = expected.line.saturating_sub(1) as u32;
        self.entries
            .contains(&(expected.path.clone(), line, expected.name.clone()))
    }
}

/// The repository map of the workspace `symbols` indexes, as the server builds it.
fn measure_maps(symbols: &agentls::symbols::Symbols, root: &Path) -> Vec<MapMeasure> {
    let config = Config::default();
    let prompts = agentls_core::prompts::Prompts::builtin();
    let ranks = symbols.ranks_for("");
    MAP_BUDGETS
        .iter()
        .map(|&budget| {
            let settings = agentls_core::repo_map::MapSettings {
                max_tokens: budget,
                tokenizer: config.tokenizer(),
                heading: prompts.repo_map.clone(),
            };
            let map = symbols.read(|index| {
                agentls_core::repo_map::build(index, &ranks, &settings, &|path: &str| {
                    relative(root, Path::new(path))
                })
            });
            MapMeasure {
                budget,
                tokens: map.tokens,
                entries: map
                    .entries
                    .into_iter()
                    .map(|e| (e.path, e.line, e.name))
                    .collect(),
            }
        })
        .collect()
}

pub struct DefinitionsEvalReport {
    pub workspaces: Vec<WorkspaceReport>,
    /// Default workspaces not found on this machine.
    pub missing: Vec<String>,
}

/// What the ground truth needs of a file, taken while its tree is at hand (a workspace's
/// trees together would take gigabytes).
struct ParsedFile {
    path: String,
    language: Language,
    /// Every definition, those inside macro invocations too.
    definitions: Vec<TruthDefinition>,
    functions: Vec<FunctionUse>,
    /// Python: the file's dotted module name and what its imports bind.
    module: Option<String>,
    imports: definition_truth::PythonImports,
}

struct TruthDefinition {
    name: String,
    /// 1-based line of the name.
    line: usize,
    /// That line, trimmed.
    text: String,
    /// The enclosing definition ("impl Foo", "Config"); None at the top level.
    container: Option<String>,
}

struct FunctionUse {
    name: String,
    /// 1-based line and column (chars) of the name.
    line: usize,
    column: usize,
    /// Identifier leaves inside it, its own name aside, in order.
    uses: Vec<String>,
    /// `q.name` and `q::name` inside it.
    qualified: Vec<definition_truth::QualifiedUse>,
}

/// The default workspaces present on this machine, and the names of those missing.
pub fn default_workspaces() -> (Vec<PathBuf>, Vec<String>) {
    let mut found = Vec::new();
    let mut missing = Vec::new();
    let registry = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")))
        .map(|home| home.join("registry").join("src"));
    for name in DEFAULT_CRATES {
        match registry.as_deref().and_then(|dir| newest_crate(dir, name)) {
            Some(dir) => found.push(dir),
            None => missing.push(format!("crate {name}")),
        }
    }
    let stdlib = std::process::Command::new("python3")
        .args([
            "-c",
            "import sysconfig;print(sysconfig.get_paths()['stdlib'])",
        ])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
    for name in DEFAULT_PYTHON_PACKAGES {
        match stdlib
            .as_ref()
            .map(|dir| dir.join(name))
            .filter(|d| d.is_dir())
        {
            Some(dir) => found.push(dir),
            None => missing.push(format!("python package {name}")),
        }
    }
    (found, missing)
}

/// `registry/src/<index>/<name>-<version>` with the highest version, over all indexes.
fn newest_crate(registry: &Path, name: &str) -> Option<PathBuf> {
    let prefix = format!("{name}-");
    let mut best: Option<(Vec<u64>, PathBuf)> = None;
    for index in std::fs::read_dir(registry).ok()?.flatten() {
        for entry in std::fs::read_dir(index.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let file_name = entry.file_name().to_string_lossy().into_owned();
            let Some(version) = file_name.strip_prefix(&prefix) else {
                continue;
            };
            // `name-x.y.z` only: `tokio-util-0.7` is not a version of `tokio`.
            if !version.starts_with(|c: char| c.is_ascii_digit()) {
                continue;
            }
            let key: Vec<u64> = version
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|part| part.parse().ok())
                .collect();
            if best.as_ref().is_none_or(|(k, _)| key > *k) {
                best = Some((key, entry.path()));
            }
        }
    }
    best.map(|(_, path)| path)
}

pub async fn run(options: &DefinitionsEvalOptions) -> Result<DefinitionsEvalReport, String> {
    let (workspaces, missing) = if options.workspaces.is_empty() {
        default_workspaces()
    } else {
        (options.workspaces.clone(), Vec::new())
    };
    if workspaces.is_empty() {
        return Err(format!("no workspace found ({})", missing.join(", ")));
    }
    let mut reports = Vec::new();
    for root in workspaces {
        let root = std::fs::canonicalize(&root)
            .map_err(|err| format!("cannot use workspace {}: {err}", root.display()))?;
        let files = parse_workspace(&root);
        let candidates = cases(&root, &files);
        let candidate_count = candidates.len();
        let sampled = sample(candidates, options.per_workspace, options.seed);
        let mut measured = Vec::new();
        // One index per workspace, built as `agentls context` builds it.
        let symbols = agentls::symbols::Symbols::default();
        symbols.build(
            agentls::symbols::BuildOptions {
                roots: vec![root.clone()],
                max_file_bytes: Config::default().syntax_max_document_bytes as u64,
                store: None,
                threads: agentls::symbols::BuildOptions::default_threads(),
            },
            &|_, _| {},
        );
        let source = DiskSource {
            roots: vec![root.clone()],
            symbols: Some(symbols),
        };
        let maps = source
            .symbols
            .as_ref()
            .map(|symbols| measure_maps(symbols, &root))
            .unwrap_or_default();
        for case in sampled {
            let outcome = measure(&case, &source).await?;
            measured.push((case, outcome));
        }
        let all_sites = call_sites(&files);
        let site_candidates = all_sites.len();
        let sites = match &source.symbols {
            Some(symbols) => pick(all_sites, SITES_PER_WORKSPACE, options.seed)
                .into_iter()
                .map(|site| {
                    let right = first_is_truth(symbols, &root, &site);
                    (site, right)
                })
                .collect(),
            None => Vec::new(),
        };
        reports.push(WorkspaceReport {
            root,
            files: files.len(),
            candidates: candidate_count,
            cases: measured,
            maps,
            site_candidates,
            sites,
        });
    }
    let report = DefinitionsEvalReport {
        workspaces: reports,
        missing,
    };
    if let Some(path) = &options.export {
        let text =
            serde_json::to_string_pretty(&export(&report, options)).map_err(|e| e.to_string())?;
        std::fs::write(path, text)
            .map_err(|err| format!("cannot write {}: {err}", path.display()))?;
    }
    Ok(report)
}

/// Every file of the workspace index with a grammar, parsed and summarised.
fn parse_workspace(root: &Path) -> Vec<ParsedFile> {
    let max_bytes = Config::default().syntax_max_document_bytes;
    let package = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (paths, _) = agentls::store::file_index::walk(&[root.to_path_buf()], |_| {});
    paths
        .into_iter()
        .filter(|path| Language::detect("", Some(path)).grammar().is_some())
        .filter_map(|path| {
            let snapshot = agentls::store::files::read_document(&path, max_bytes).ok()?;
            Some(summarise(relative(root, &path), &package, &snapshot))
        })
        .collect()
}

/// `package`: the workspace directory's name, a Python package's import name.
fn summarise(path: String, package: &str, snapshot: &DocumentSnapshot) -> ParsedFile {
    let mut file = ParsedFile {
        path,
        language: snapshot.language,
        definitions: Vec::new(),
        functions: Vec::new(),
        module: None,
        imports: Default::default(),
    };
    let Some(tree) = snapshot.tree.as_ref() else {
        return file;
    };
    let rope = &snapshot.rope;
    let source = rope.to_string();
    let line_text = |line: usize| rope.line(line).to_string().trim().to_string();
    let symbols = syntax::outline(snapshot.language, source.as_bytes(), tree);
    for (symbol, container) in flatten(&symbols) {
        let start = symbol.selection_range.start.min(rope.len_bytes());
        let line = rope.byte_to_line(start);
        if is_definition(symbol.kind) {
            file.definitions.push(TruthDefinition {
                name: symbol.name.clone(),
                line: line + 1,
                text: line_text(line),
                container: container.map(str::to_string),
            });
        }
        if is_function(symbol.kind) {
            file.functions.push(FunctionUse {
                name: symbol.name.clone(),
                line: line + 1,
                column: rope.byte_to_char(start) - rope.line_to_char(line) + 1,
                uses: used_names(tree, source.as_bytes(), symbol),
                qualified: definition_truth::qualified_uses(
                    snapshot.language,
                    source.as_bytes(),
                    tree,
                    symbol.range.clone(),
                ),
            });
        }
    }
    for item in definition_truth::macro_items(snapshot.language, source.as_bytes(), tree) {
        if is_definition(item.kind) && item.line < rope.len_lines() {
            file.definitions.push(TruthDefinition {
                name: item.name,
                line: item.line + 1,
                text: line_text(item.line),
                container: item.container,
            });
        }
    }
    if snapshot.language == Language::Python {
        let module = definition_truth::python_module(package, &file.path);
        let is_package = file.path.ends_with("__init__.py");
        file.imports =
            definition_truth::python_imports(source.as_bytes(), tree, &module, is_package);
        file.module = Some(module);
    }
    file
}

fn relative(root: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(root).unwrap_or(path);
    relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// Kinds a name can be "defined" as: an impl is not a name, an inline module is a namespace.
fn is_definition(kind: SymbolKind) -> bool {
    !matches!(kind, SymbolKind::Impl | SymbolKind::Module)
}

fn is_function(kind: SymbolKind) -> bool {
    matches!(kind, SymbolKind::Function | SymbolKind::Method)
}

/// Every symbol with its container's name, outermost first.
fn flatten(symbols: &[Symbol]) -> Vec<(&Symbol, Option<&str>)> {
    let mut all = Vec::new();
    let mut stack: Vec<(&Symbol, Option<&str>)> = symbols.iter().rev().map(|s| (s, None)).collect();
    while let Some((symbol, container)) = stack.pop() {
        all.push((symbol, container));
        stack.extend(
            symbol
                .children
                .iter()
                .rev()
                .map(|child| (child, Some(symbol.name.as_str()))),
        );
    }
    all
}

/// The workspace's definitions by name, and its Python modules by dotted name: what the
/// expectations are looked up in.
struct Tables<'f> {
    files: &'f [ParsedFile],
    /// Name → (file, definition) of each definition.
    definitions: HashMap<&'f str, Vec<(usize, usize)>>,
    modules: HashMap<&'f str, usize>,
}

impl<'f> Tables<'f> {
    fn new(files: &'f [ParsedFile]) -> Tables<'f> {
        let mut definitions: HashMap<&str, Vec<(usize, usize)>> = HashMap::new();
        let mut modules = HashMap::new();
        for (index, file) in files.iter().enumerate() {
            for (i, definition) in file.definitions.iter().enumerate() {
                definitions
                    .entry(&definition.name)
                    .or_default()
                    .push((index, i));
            }
            if let Some(module) = &file.module {
                modules.insert(module.as_str(), index);
            }
        }
        Tables {
            files,
            definitions,
            modules,
        }
    }

    fn places(&self, name: &str) -> &[(usize, usize)] {
        self.definitions.get(name).map_or(&[], Vec::as_slice)
    }

    /// The one place among `name`'s definitions that `keep` admits.
    fn only(
        &self,
        name: &str,
        keep: impl Fn(usize, &TruthDefinition) -> bool,
    ) -> Option<(usize, usize)> {
        let mut admitted = self
            .places(name)
            .iter()
            .filter(|(file, i)| keep(*file, &self.files[*file].definitions[*i]));
        let first = *admitted.next()?;
        admitted.next().is_none().then_some(first)
    }

    /// The top-level definition of `name` in the Python module `module` of the workspace.
    fn in_module(&self, module: &str, name: &str) -> Option<(usize, usize)> {
        let file = *self.modules.get(module)?;
        self.only(name, |f, d| f == file && d.container.is_none())
    }

    /// Where the code says `q.name` / `q::name` is defined: the module the qualifier
    /// imports (Python), or the impl of the type it names (Rust).
    fn qualified(&self, file: &ParsedFile, qualifier: &str, name: &str) -> Option<(usize, usize)> {
        match file.language {
            Language::Python => {
                let module = definition_truth::qualifier_module(&file.imports, qualifier)?;
                self.in_module(&module, name)
            }
            Language::Rust => {
                let ty = qualifier.rsplit("::").next().unwrap_or(qualifier);
                if !ty.starts_with(|c: char| c.is_ascii_uppercase()) || ty == "Self" {
                    return None;
                }
                self.only(name, |_, d| {
                    d.container.as_deref().and_then(definition_truth::impl_type) == Some(ty)
                })
            }
            _ => None,
        }
    }

    /// The definitions `function` (of file `index`) uses that the code says where to find,
    /// in another file: a name defined once in the workspace; a name its Python imports
    /// take from a module; `q.name` through its module, `Type::name` through its impl.
    fn expected(&self, index: usize, function: &FunctionUse) -> Vec<Expected> {
        let file = &self.files[index];
        let mut places: Vec<(&str, (usize, usize))> = Vec::new();
        for name in &function.uses {
            if *name == function.name {
                continue;
            }
            let once = match self.places(name) {
                [only] => Some(*only),
                _ => None,
            };
            let imported = || {
                let (module, original) = file.imports.names.get(name.as_str())?;
                (original == name).then(|| self.in_module(module, name))?
            };
            places.extend(once.or_else(imported).map(|p| (name.as_str(), p)));
        }
        for used in &function.qualified {
            if used.name != function.name {
                let place = self.qualified(file, &used.qualifier, &used.name);
                places.extend(place.map(|p| (used.name.as_str(), p)));
            }
        }
        let mut expected: Vec<Expected> = Vec::new();
        for (name, (home, i)) in places {
            let definition = &self.files[home].definitions[i];
            let entry = Expected {
                name: name.to_string(),
                path: self.files[home].path.clone(),
                line: definition.line,
                text: definition.text.clone(),
            };
            if home != index && !expected.contains(&entry) {
                expected.push(entry);
            }
        }
        expected
    }
}

/// Every function of the workspace that uses at least one definition of another file the
/// code says where to find (see `Tables::expected`); in (path, line) order.
fn cases(root: &Path, files: &[ParsedFile]) -> Vec<Case> {
    let tables = Tables::new(files);
    let mut cases = Vec::new();
    for (index, file) in files.iter().enumerate() {
        for function in &file.functions {
            let expected = tables.expected(index, function);
            if expected.is_empty() {
                continue;
            }
            cases.push(Case {
                workspace: root.to_path_buf(),
                path: file.path.clone(),
                function: function.name.clone(),
                line: function.line,
                column: function.column,
                expected,
            });
        }
    }
    cases
}

/// A call `q.name(…)` or `q::name(…)` of a name defined in several places, with the one the
/// code says it means.
#[derive(Debug, Clone)]
pub struct CallSite {
    /// The reader's file.
    pub path: String,
    /// As the model would ask for it: `errors.HeaderParseError`, `Runtime::new`.
    pub query: String,
    pub truth: Expected,
}

/// The call sites of the workspace whose callee is defined in several places and whose
/// qualifier says which (see `Tables::qualified`), in (path, line) order.
fn call_sites(files: &[ParsedFile]) -> Vec<CallSite> {
    let tables = Tables::new(files);
    let mut sites = Vec::new();
    // A nested function's calls are its outer function's too: each call once.
    let mut seen = std::collections::HashSet::new();
    for file in files {
        let separator = if file.language == Language::Rust {
            "::"
        } else {
            "."
        };
        for used in files_calls(file) {
            if tables.places(&used.name).len() < 2 || !seen.insert((&file.path, used)) {
                continue;
            }
            let Some((home, i)) = tables.qualified(file, &used.qualifier, &used.name) else {
                continue;
            };
            let definition = &files[home].definitions[i];
            sites.push(CallSite {
                path: file.path.clone(),
                query: format!("{}{separator}{}", used.qualifier, used.name),
                truth: Expected {
                    name: used.name.clone(),
                    path: files[home].path.clone(),
                    line: definition.line,
                    text: definition.text.clone(),
                },
            });
        }
    }
    sites
}

/// The calls inside the file's functions.
fn files_calls(file: &ParsedFile) -> impl Iterator<Item = &definition_truth::QualifiedUse> {
    file.functions
        .iter()
        .flat_map(|f| &f.qualified)
        .filter(|used| used.call)
}

/// The distinct names of the identifier leaves inside the function, in order.
fn used_names(tree: &tree_sitter::Tree, source: &[u8], function: &Symbol) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let range = function.range.clone();
    let mut cursor = tree.walk();
    loop {
        let node = cursor.node();
        let inside = node.start_byte() < range.end && range.start < node.end_byte();
        if inside {
            if node.child_count() == 0
                && node.is_named()
                && node.kind().contains("identifier")
                && node.start_byte() != function.selection_range.start
            {
                if let Some(text) = source.get(node.byte_range()) {
                    let name = String::from_utf8_lossy(text).into_owned();
                    if !names.contains(&name) {
                        names.push(name);
                    }
                }
            }
            if cursor.goto_first_child() {
                continue;
            }
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return names;
            }
        }
    }
}

/// `count` cases picked by the seed (all of them when there are fewer), in (path, line)
/// order.
pub fn sample(cases: Vec<Case>, count: usize, seed: u64) -> Vec<Case> {
    let mut cases = pick(cases, count, seed);
    cases.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
    cases
}

/// `count` items picked by the seed (all of them when there are fewer), in the draw's order.
fn pick<T>(mut items: Vec<T>, count: usize, seed: u64) -> Vec<T> {
    let mut state = seed ^ 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        // splitmix64: deterministic on every machine.
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    // A partial Fisher–Yates shuffle.
    let count = count.min(items.len());
    for i in 0..count {
        let j = i + (next() % (items.len() - i) as u64) as usize;
        items.swap(i, j);
    }
    items.truncate(count);
    items
}

/// Whether `find_symbol`, asked for the site's qualified name as the model would ask, shows
/// the definition the code means first.
fn first_is_truth(symbols: &agentls::symbols::Symbols, root: &Path, site: &CallSite) -> bool {
    let boundary = agentls::tools::boundary::PathBoundary {
        roots: vec![root.to_path_buf()],
    };
    let input = agentls::tools::find_symbol::FindSymbolInput {
        name: site.query.clone(),
        kind: None,
        path: None,
        references: None,
        limit: Some(1),
    };
    let Ok(answer) = agentls::tools::find_symbol::find_symbol(symbols, &boundary, &input) else {
        return false;
    };
    // "N definitions of `x`:" then "path:line kind…".
    let first = answer.lines().nth(1).unwrap_or_default();
    let place = first.split_whitespace().next().unwrap_or_default();
    place == format!("{}:{}", site.truth.path, site.truth.line)
}

/// The editor block of the case, built as `agentls context FILE:LINE:COL` builds it.
pub async fn editor_block(
    case: &Case,
    source: &DiskSource,
) -> Result<(EditorContext, usize), String> {
    let config = Config::default();
    let file = case.workspace.join(&case.path);
    let uri = lsp_types_url(&file)?;
    let state = EditorState {
        uri,
        position: tower_lsp::lsp_types::Position::new(
            case.line.saturating_sub(1) as u32,
            case.column.saturating_sub(1) as u32,
        ),
        selection: None,
        visible_range: None,
        diagnostics: Vec::new(),
    };
    let (prompts, _) = agentls::store::prompts::load(
        agentls::store::prompts::override_dir(None).as_deref(),
        config.compaction.prompt_file.as_deref(),
    );
    let gathered = gather::gather(source, &config, &prompts, Some(&state)).await?;
    let history = History::new(config.tokenizer());
    let inputs = gathered.inputs(&config, &prompts, &history, Calibration::default());
    let prepared = inspect::prepare(&inputs, &mut AssemblyCache::default());
    let editor = prepared
        .block
        .editor
        .ok_or_else(|| format!("{}: no editor block", case.path))?;
    Ok((editor, config.editor_context_max_tokens))
}

fn lsp_types_url(path: &Path) -> Result<tower_lsp::lsp_types::Url, String> {
    tower_lsp::lsp_types::Url::from_file_path(path)
        .map_err(|()| format!("{} has no file: uri", path.display()))
}

async fn measure(case: &Case, source: &DiskSource) -> Result<Outcome, String> {
    let (editor, budget) = editor_block(case, source).await?;
    let part = definitions_part(&editor.text);
    let found = case
        .expected
        .iter()
        .map(|expected| shows_definition(part, expected))
        .collect();
    let definitions_tokens = editor
        .parts
        .iter()
        .find(|p| p.name == "definitions")
        .map_or(0, |p| p.tokens);
    Ok(Outcome {
        found,
        definitions_tokens,
        block_tokens: editor.tokens,
        budget,
        parts: editor.parts,
    })
}

/// The text of the block's `definitions` part (empty when it has none).
pub fn definitions_part(block: &str) -> &str {
    let Some(start) = block.find("<definitions>\n") else {
        return "";
    };
    let rest = &block[start..];
    match rest.find("</definitions>\n") {
        Some(end) => &rest[..end],
        None => rest,
    }
}

/// Whether one `<definition … path="P" …>` entry of the part shows line `L{line}:`.
pub fn shows_definition(part: &str, expected: &Expected) -> bool {
    let path = format!("path=\"{}\"", expected.path.replace('"', "&quot;"));
    let line = format!("\nL{}: ", expected.line);
    part.split("<definition ").skip(1).any(|entry| {
        entry
            .split('\n')
            .next()
            .is_some_and(|open| open.contains(&path))
            && entry.contains(&line)
    })
}

fn median(mut values: Vec<usize>) -> usize {
    if values.is_empty() {
        return 0;
    }
    values.sort_unstable();
    values[values.len() / 2]
}

fn export(report: &DefinitionsEvalReport, options: &DefinitionsEvalOptions) -> Value {
    let cases: Vec<Value> = report
        .workspaces
        .iter()
        .flat_map(|workspace| &workspace.cases)
        .map(|(case, outcome)| {
            json!({
                "workspace": case.workspace,
                "path": case.path,
                "function": case.function,
                "line": case.line,
                "column": case.column,
                "expected": case.expected.iter().zip(&outcome.found).map(|(e, found)| json!({
                    "name": e.name, "path": e.path, "line": e.line, "text": e.text,
                    "foundByAgentls": found,
                })).collect::<Vec<_>>(),
                "agentls": {
                    "definitionsTokens": outcome.definitions_tokens,
                    "blockTokens": outcome.block_tokens,
                    "budget": outcome.budget,
                    "parts": outcome.parts,
                },
            })
        })
        .collect();
    let sites: Vec<Value> = report
        .workspaces
        .iter()
        .flat_map(|workspace| workspace.sites.iter().map(move |site| (workspace, site)))
        .map(|(workspace, (site, right))| {
            json!({
                "workspace": workspace.root, "path": site.path, "query": site.query,
                "truth": {"path": site.truth.path, "line": site.truth.line},
                "findSymbolFirst": right,
            })
        })
        .collect();
    json!({
        "seed": options.seed,
        "perWorkspace": options.per_workspace,
        "workspaces": report.workspaces.iter().map(|w| json!({
            "root": w.root, "files": w.files, "candidates": w.candidates,
        })).collect::<Vec<_>>(),
        "cases": cases,
        "sites": sites,
    })
}

pub struct Totals {
    pub cases: usize,
    pub expected: usize,
    pub found: usize,
    pub definitions_median: usize,
    pub definitions_max: usize,
    pub block_median: usize,
    pub block_max: usize,
    pub over_budget: usize,
    pub budget: usize,
}

pub fn totals<'a>(cases: impl IntoIterator<Item = &'a (Case, Outcome)>) -> Totals {
    let mut totals = Totals {
        cases: 0,
        expected: 0,
        found: 0,
        definitions_median: 0,
        definitions_max: 0,
        block_median: 0,
        block_max: 0,
        over_budget: 0,
        budget: 0,
    };
    let mut definitions = Vec::new();
    let mut blocks = Vec::new();
    for (case, outcome) in cases {
        totals.cases += 1;
        totals.expected += case.expected.len();
        totals.found += outcome.found.iter().filter(|f| **f).count();
        definitions.push(outcome.definitions_tokens);
        blocks.push(outcome.block_tokens);
        totals.over_budget += usize::from(outcome.block_tokens > outcome.budget);
        totals.budget = outcome.budget;
    }
    totals.definitions_max = definitions.iter().copied().max().unwrap_or(0);
    totals.block_max = blocks.iter().copied().max().unwrap_or(0);
    totals.definitions_median = median(definitions);
    totals.block_median = median(blocks);
    totals
}

fn percent(found: usize, expected: usize) -> f64 {
    if expected == 0 {
        0.0
    } else {
        found as f64 * 100.0 / expected as f64
    }
}

pub fn print(options: &DefinitionsEvalOptions, report: &DefinitionsEvalReport) {
    if !report.missing.is_empty() {
        println!(
            "not on this machine (skipped): {}",
            report.missing.join(", ")
        );
    }
    println!(
        "{:<44}{:>6}{:>7}{:>10}{:>9}{:>11}{:>10}{:>12}",
        "workspace", "files", "cases", "recall", "found", "defs med", "block max", "precision"
    );
    for workspace in &report.workspaces {
        let t = totals(&workspace.cases);
        let name = workspace
            .root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let right = workspace.sites.iter().filter(|(_, right)| *right).count();
        println!(
            "{:<44}{:>6}{:>7}{:>9.1}%{:>9}{:>11}{:>10}{:>12}",
            name,
            workspace.files,
            t.cases,
            percent(t.found, t.expected),
            format!("{}/{}", t.found, t.expected),
            t.definitions_median,
            t.block_max,
            format!("{right}/{}", workspace.sites.len())
        );
    }
    let t = totals(report.workspaces.iter().flat_map(|w| &w.cases));
    println!(
        "\nagentls editor block (seed {}, {} functions per workspace): {:.1}% of the expected definitions ({}/{} over {} functions)",
        options.seed,
        options.per_workspace,
        percent(t.found, t.expected),
        t.found,
        t.expected,
        t.cases
    );
    println!(
        "definitions part: median {} tokens, max {}; block: median {} tokens, max {} of its {} budget, {} over it",
        t.definitions_median, t.definitions_max, t.block_median, t.block_max, t.budget, t.over_budget
    );
    print_precision(report);
    print_maps(report);
}

/// `find_symbol` at the call sites, over every workspace.
fn print_precision(report: &DefinitionsEvalReport) {
    let sites: Vec<&(CallSite, bool)> = report.workspaces.iter().flat_map(|w| &w.sites).collect();
    let right = sites.iter().filter(|(_, right)| *right).count();
    let candidates: usize = report.workspaces.iter().map(|w| w.site_candidates).sum();
    println!(
        "find_symbol at qualified calls of names defined in several places: the first place is the one meant {:.1}% ({right}/{} sites asked, of {candidates})",
        percent(right, sites.len()),
        sites.len()
    );
}

/// The repository map alone, per budget: the expected definitions it holds, over every
/// case, and its tokens (median over the workspaces).
fn print_maps(report: &DefinitionsEvalReport) {
    for (i, budget) in MAP_BUDGETS.iter().enumerate() {
        let (mut found, mut expected) = (0, 0);
        let mut tokens = Vec::new();
        for workspace in &report.workspaces {
            let Some(map) = workspace.maps.get(i) else {
                continue;
            };
            tokens.push(map.tokens);
            for (case, _) in &workspace.cases {
                expected += case.expected.len();
                found += case.expected.iter().filter(|e| map.holds(e)).count();
            }
        }
        println!(
            "repository map alone at {budget} tokens: {:.1}% ({found}/{expected}); map median {} tokens over the workspaces",
            percent(found, expected),
            median(tokens)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, path: &str, text: &str) {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn expected_definitions_are_the_names_defined_once_in_another_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            root,
            "src/a.rs",
            "pub struct Unique { x: u8 }\npub fn twice() {}\npub fn helper() {}\n",
        );
        write(root, "src/b.rs", "pub fn twice() {}\n");
        write(
            root,
            "src/c.rs",
            "fn local() {}\npub fn user(u: Unique) {\n    twice();\n    helper();\n    local();\n}\n",
        );
        let files = parse_workspace(root);
        let cases = cases(root, &files);
        let user = cases
            .iter()
            .find(|c| c.function == "user")
            .expect("user is a case");
        assert_eq!(
            (user.path.as_str(), user.line, user.column),
            ("src/c.rs", 2, 8)
        );
        let expected: Vec<(&str, &str, usize)> = user
            .expected
            .iter()
            .map(|e| (e.name.as_str(), e.path.as_str(), e.line))
            .collect();
        // `twice` is defined twice, `local` in the same file: neither is expected.
        assert_eq!(
            expected,
            [("Unique", "src/a.rs", 1), ("helper", "src/a.rs", 3)]
        );
        assert_eq!(user.expected[0].text, "pub struct Unique { x: u8 }");
        // Functions needing nothing from elsewhere are not cases.
        assert!(cases.iter().all(|c| c.function != "local"));
    }

    #[test]
    fn sampling_is_deterministic_and_keeps_source_order() {
        let case = |line| Case {
            workspace: PathBuf::new(),
            path: "a.rs".into(),
            function: format!("f{line}"),
            line,
            column: 1,
            expected: Vec::new(),
        };
        let all: Vec<Case> = (1..=50).map(case).collect();
        let a = sample(all.clone(), 5, 7);
        assert_eq!(a, sample(all.clone(), 5, 7));
        assert_ne!(a, sample(all.clone(), 5, 8));
        assert_eq!(a.len(), 5);
        assert!(a.windows(2).all(|w| w[0].line < w[1].line));
        assert_eq!(sample(all.clone(), 100, 7).len(), 50);
    }

    #[test]
    fn a_definition_is_present_when_its_line_is_shown_under_its_path() {
        let part = "<definitions>\n<definition name=\"A\" kind=\"struct\" path=\"src/a.rs\" lines=\"3-4\">\nL3: pub struct A;\n</definition>\n";
        let expected = |path: &str, line| Expected {
            name: "A".into(),
            path: path.into(),
            line,
            text: String::new(),
        };
        assert!(shows_definition(part, &expected("src/a.rs", 3)));
        assert!(!shows_definition(part, &expected("src/a.rs", 4)));
        assert!(!shows_definition(part, &expected("src/b.rs", 3)));
        assert_eq!(
            definitions_part("x\n<definitions>\nA</definitions>\ny"),
            "<definitions>\nA"
        );
    }
}
