//! The one recipe that gathers a turn's context inputs: the active document (with the
//! editor state resolved in it), the AGENTS.md chain for its directory, the other open
//! buffers, the skills, the environment and the repository map. Every host runs it (the
//! editor over LSP, `agentls ask`, `agentls context`, the compaction eval); what differs
//! between them is only how documents are found, which is their [`DocumentSource`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lsp_types::Url;

use agentls_core::agents_md::{self, AgentsChain, InstructionFiles, Overlay};
use agentls_core::config::Config;
use agentls_core::document::DocumentSnapshot;
use agentls_core::editor_context::{self, resolve, ActiveFile, OutlineCache, WorkspaceDefinitions};
use agentls_core::editor_state::{self, EditorState};
use agentls_core::environment::Environment;
use agentls_core::inspect::{ActiveDocument, OtherDocument};
use agentls_core::memory::{Entry as MemoryEntry, Scope};
use agentls_core::paths;
use agentls_core::position::PositionEncoding;
use agentls_core::prompts::Prompts;
use agentls_core::repo_map::MapSettings;
use agentls_core::skills::Skill;
use agentls_core::syntax::Identifier;

use crate::store::files;

/// The inputs of a turn's context, gathered by the host.
pub struct Gathered {
    pub environment: Environment,
    pub agents: Option<AgentsChain>,
    pub skills: Vec<Skill>,
    pub active: Option<ActiveDocument>,
    pub others: Vec<OtherDocument>,
    /// What the workspace's symbol index holds for the identifiers in play around the
    /// cursor (None for a host without an index).
    pub workspace: Option<WorkspaceDefinitions>,
    /// The repository map, rendered (`context.repoMap.maxTokens`); empty when off, for a
    /// host without an index, or when nothing fits.
    pub repo_map: String,
    /// The memory block (`store::memory`), rendered; empty when off or when none is kept.
    pub memory: String,
    /// The memory entries the block left out (over `memory.maxTokens`): a turn recalls the
    /// ones its message names.
    pub memory_left_out: Vec<(Scope, MemoryEntry)>,
}

impl Gathered {
    /// The inputs of an assembly from what was gathered.
    pub fn inputs<'a>(
        &'a self,
        config: &'a Config,
        prompts: &'a Prompts,
        history: &'a agentls_core::history::History,
        calibration: agentls_core::tokens::Calibration,
    ) -> agentls_core::inspect::Inputs<'a> {
        agentls_core::inspect::Inputs {
            config,
            prompts,
            environment: &self.environment,
            agents: self.agents.as_ref(),
            skills: &self.skills,
            active: self.active.as_ref(),
            others: &self.others,
            workspace: self.workspace.as_ref(),
            repo_map: &self.repo_map,
            memory: &self.memory,
            history,
            calibration,
        }
    }
}

/// How a host finds documents.
#[async_trait::async_trait]
pub trait DocumentSource: Send + Sync {
    /// The workspace roots; the first is the working directory.
    fn roots(&self) -> Vec<PathBuf>;
    /// The root holding `path`, when it lies in the workspace.
    fn root_of(&self, path: &Path) -> Option<PathBuf> {
        self.roots()
            .into_iter()
            .filter(|root| path.starts_with(root))
            .max_by_key(|root| root.as_os_str().len())
    }
    /// The unit of the editor's columns.
    fn encoding(&self) -> PositionEncoding;
    /// The open editor buffers (unsaved text included); none for a host without an editor.
    async fn open_buffers(&self) -> Vec<(Url, DocumentSnapshot)> {
        Vec::new()
    }
    /// The open buffer of `uri`, if any.
    async fn open_buffer(&self, _uri: &Url) -> Option<DocumentSnapshot> {
        None
    }
    /// AGENTS.md files below the open buffers: the disk, cached or not.
    fn instruction_files(&self) -> Arc<dyn InstructionFiles + Send + Sync>;
    /// The workspace symbol index, open buffers brought up to date (None: the host keeps
    /// none). Its `resolve(name, from)` ranks a name's definitions for a reader of `from`.
    async fn symbols(&self) -> Option<crate::symbols::Symbols> {
        None
    }
}

/// The context inputs of a turn; an editor state naming a document that cannot be read is
/// an error the user sees.
pub async fn gather(
    source: &dyn DocumentSource,
    config: &Config,
    prompts: &Prompts,
    editor: Option<&EditorState>,
) -> Result<Gathered, String> {
    let roots = source.roots();
    let active = match editor {
        Some(editor) => Some(active_document(source, config, editor, &roots).await?),
        None => None,
    };
    let agents_dir = match &active {
        Some((path, _)) => path.parent().map(Path::to_path_buf),
        None => roots.first().cloned(),
    };
    let buffers = source.open_buffers().await;
    let agents = match agents_dir {
        Some(dir) => Some(agents_chain(source, config, dir, &buffers).await),
        None => None,
    };
    let active_uri = editor.map(|e| e.uri.clone());
    let others: Vec<OtherDocument> = buffers
        .into_iter()
        .filter(|(uri, _)| Some(uri) != active_uri.as_ref())
        .map(|(uri, snapshot)| OtherDocument {
            display_path: uri
                .to_file_path()
                .map(|p| paths::display(&p, &roots))
                .unwrap_or_else(|()| uri.to_string()),
            snapshot,
        })
        .collect();
    let symbols = match (&active, config.repo_map_max_tokens) {
        (None, 0) => None,
        _ => source.symbols().await,
    };
    let workspace = match (&active, &symbols) {
        (Some((path, doc)), Some(symbols)) => {
            Some(workspace_definitions(symbols, path, doc, &roots))
        }
        _ => None,
    };
    let repo_map = match &symbols {
        Some(symbols) if config.repo_map_max_tokens > 0 => {
            repo_map(symbols, config, prompts, &roots).await
        }
        _ => String::new(),
    };
    let memory = memory_block(config, prompts, roots.first()).await;
    let skill_roots = roots.clone();
    let skills = tokio::task::spawn_blocking(move || crate::store::skills::discover(&skill_roots))
        .await
        .unwrap_or_default();
    let shown: Vec<String> = roots
        .iter()
        .map(|r| r.to_string_lossy().into_owned())
        .collect();
    let cwd = shown.first().cloned().unwrap_or_default();
    let sandbox = crate::sandbox::status(&config.sandbox);
    let environment = crate::store::environment::current(cwd, shown, &config.approval, &sandbox);
    Ok(Gathered {
        environment,
        agents,
        skills,
        active: active.map(|(_, doc)| doc),
        others,
        workspace,
        repo_map,
        memory: memory.text,
        memory_left_out: memory.left_out,
    })
}

/// The memory block of the system message (`memory.*`): both scopes' files read, the
/// newest entries within `memory.maxTokens`, and the ones left out.
async fn memory_block(
    config: &Config,
    prompts: &Prompts,
    root: Option<&PathBuf>,
) -> agentls_core::memory::Rendered {
    if !config.memory_enabled {
        return agentls_core::memory::Rendered::default();
    }
    let files = crate::store::memory::MemoryFiles::new(
        root.map(PathBuf::as_path),
        config.state_dir.as_deref(),
    );
    let scopes = tokio::task::spawn_blocking(move || files.entries())
        .await
        .unwrap_or_default();
    agentls_core::memory::render(
        &prompts.memory,
        &scopes,
        config.memory_max_tokens,
        config.tokenizer(),
        &mut agentls_core::tokens::CountCache::default(),
    )
}

/// The repository map the index's handle keeps, for these settings (the core ranks and
/// renders; the handle decides whether a new one replaces the kept one). Off the async
/// threads: ranking a large workspace takes a while when the index changed.
async fn repo_map(
    symbols: &crate::symbols::Symbols,
    config: &Config,
    prompts: &Prompts,
    roots: &[PathBuf],
) -> String {
    let settings = MapSettings {
        max_tokens: config.repo_map_max_tokens,
        tokenizer: config.tokenizer(),
        heading: prompts.repo_map.clone(),
    };
    let roots: Vec<PathBuf> = roots.iter().map(|r| crate::symbols::canonical(r)).collect();
    let symbols = symbols.clone();
    tokio::task::spawn_blocking(move || {
        let map = symbols.repo_map(&settings, &|path| paths::display(Path::new(path), &roots));
        map.text.clone()
    })
    .await
    .unwrap_or_else(|err| {
        tracing::error!("repository map failed: {err}");
        String::new()
    })
}

/// The document an editor state names: the open buffer, else the file on disk when it lies
/// in the workspace and is text; the editor state resolved in it.
async fn active_document(
    source: &dyn DocumentSource,
    config: &Config,
    editor: &EditorState,
    roots: &[PathBuf],
) -> Result<(PathBuf, ActiveDocument), String> {
    let uri = &editor.uri;
    let path = uri
        .to_file_path()
        .map_err(|()| format!("{uri} is not a file: uri"))?;
    let snapshot = match source.open_buffer(uri).await {
        Some(snapshot) => snapshot,
        None => {
            if source.root_of(&path).is_none() {
                return Err(format!(
                    "{uri} is not open and not inside the workspace ({})",
                    list(roots)
                ));
            }
            let max_syntax = config.syntax_max_document_bytes;
            let disk_path = path.clone();
            tokio::task::spawn_blocking(move || files::read_document(&disk_path, max_syntax))
                .await
                .map_err(|err| err.to_string())?
                .map_err(|refused| refused.0)?
        }
    };
    let resolved = editor_state::resolve(editor, &snapshot.rope, source.encoding());
    let document = ActiveDocument {
        display_path: paths::display(&path, roots),
        snapshot,
        editor: resolved,
    };
    Ok((path, document))
}

/// What the symbol index holds for the identifiers in play around the cursor: the core
/// names the identifiers and ranks their definitions; this only holds the index's read lock
/// while the core looks them up.
fn workspace_definitions(
    symbols: &crate::symbols::Symbols,
    path: &Path,
    doc: &ActiveDocument,
    roots: &[PathBuf],
) -> WorkspaceDefinitions {
    let identifiers = identifiers_in_play(doc);
    let canonical = crate::symbols::canonical(path);
    let Some(key) = canonical.to_str() else {
        return WorkspaceDefinitions::default();
    };
    let roots: Vec<PathBuf> = roots.iter().map(|r| crate::symbols::canonical(r)).collect();
    let ranks = symbols.ranks_for(key);
    symbols.read(|index| {
        resolve::fetch(index, Some(&ranks), &identifiers, key, |path| {
            paths::display(Path::new(path), &roots)
        })
    })
}

/// The identifiers whose definitions the editor block looks for (the core decides which).
fn identifiers_in_play(doc: &ActiveDocument) -> Vec<Identifier> {
    let file = ActiveFile {
        display_path: &doc.display_path,
        snapshot: &doc.snapshot,
        cursor: doc.editor.cursor,
        selection: doc.editor.selection.clone(),
        visible: doc.editor.visible.clone(),
        diagnostics: Vec::new(),
    };
    editor_context::identifiers_in_play(&file, &mut OutlineCache::default())
}

/// The AGENTS.md chain for a directory, open buffers winning over the disk.
pub async fn agents_chain(
    source: &dyn DocumentSource,
    config: &Config,
    dir: PathBuf,
    buffers: &[(Url, DocumentSnapshot)],
) -> AgentsChain {
    let buffers: HashMap<PathBuf, String> = buffers
        .iter()
        .filter_map(|(uri, doc)| {
            let path = uri.to_file_path().ok()?;
            agents_md::is_instruction_file(&path).then(|| (path, doc.rope.to_string()))
        })
        .collect();
    let max_bytes = config.agents_md_max_bytes;
    let root = source.root_of(&dir);
    let below = source.instruction_files();
    let chain = tokio::task::spawn_blocking(move || {
        let overlay = Overlay {
            buffers,
            below: below.as_ref(),
        };
        agents_md::collect(&dir, root.as_deref(), &overlay, max_bytes)
    })
    .await;
    chain.unwrap_or_else(|err| {
        tracing::error!("AGENTS.md lookup failed: {err}");
        AgentsChain {
            dir: PathBuf::new(),
            git_root: None,
            files: Vec::new(),
            text: String::new(),
            omitted_bytes: 0,
            warnings: vec![format!("AGENTS.md lookup failed: {err}")],
        }
    })
}

fn list(roots: &[PathBuf]) -> String {
    roots
        .iter()
        .map(|r| r.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The documents of a host without an editor (`agentls ask`, `agentls context`, the eval):
/// the disk under fixed roots.
pub struct DiskSource {
    pub roots: Vec<PathBuf>,
    /// The symbol index of `roots`, when the host has one (`symbols::Symbols::open`).
    pub symbols: Option<crate::symbols::Symbols>,
}

#[async_trait::async_trait]
impl DocumentSource for DiskSource {
    fn roots(&self) -> Vec<PathBuf> {
        self.roots.clone()
    }

    /// A CLI takes `line:col` in characters.
    fn encoding(&self) -> PositionEncoding {
        PositionEncoding::Utf32
    }

    fn instruction_files(&self) -> Arc<dyn InstructionFiles + Send + Sync> {
        Arc::new(crate::store::agents_md::DiskFiles::default())
    }

    async fn symbols(&self) -> Option<crate::symbols::Symbols> {
        self.symbols.clone()
    }
}
