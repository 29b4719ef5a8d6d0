//! `agentls context <file>[:line[:col]] [--workspace DIR] [--json] [--repo-map-tokens N]`:
//! the sections and token counts the model would see for a file on disk, without an
//! editor. Gathers the inputs from disk and hands them to [`inspect::report`], the same
//! function the LSP request uses.

use std::path::{Path, PathBuf};

use lsp_types::{Position, Url};

use crate::gather::{self, DiskSource};
use agentls_core::config::Config;
use agentls_core::context::AssemblyCache;
use agentls_core::editor_state::EditorState;
use agentls_core::history::History;
use agentls_core::inspect::{self, ContextReport};
use agentls_core::tokens::Calibration;

#[derive(Debug)]
pub struct Options {
    pub file: PathBuf,
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub column: usize,
    pub workspace: Option<PathBuf>,
    pub json: bool,
    /// `context.repoMap.maxTokens` (`--repo-map-tokens`).
    pub repo_map_tokens: usize,
}

impl From<crate::cli::args::ContextArgs> for Options {
    fn from(args: crate::cli::args::ContextArgs) -> Self {
        let (file, line, column) = parse_location(&args.location);
        Options {
            file,
            line,
            column,
            workspace: args.workspace,
            json: args.json,
            repo_map_tokens: args.repo_map_tokens,
        }
    }
}

/// `path[:line[:col]]`, read from the right so that a path holding `:` still works; a path
/// that exists as written is taken whole.
fn parse_location(spec: &str) -> (PathBuf, usize, usize) {
    if Path::new(spec).exists() {
        return (PathBuf::from(spec), 1, 1);
    }
    let parts: Vec<&str> = spec.rsplitn(3, ':').collect();
    let number = |s: &str| s.parse::<usize>().ok().filter(|&n| n > 0);
    match parts.as_slice() {
        [col, line, path] if number(line).is_some() && number(col).is_some() => (
            PathBuf::from(path),
            number(line).unwrap_or(1),
            number(col).unwrap_or(1),
        ),
        [line, rest @ ..] if number(line).is_some() => {
            let path = rest.iter().rev().copied().collect::<Vec<_>>().join(":");
            (PathBuf::from(path), number(line).unwrap_or(1), 1)
        }
        _ => (PathBuf::from(spec), 1, 1),
    }
}

/// The nearest ancestor holding `.git`, else the file's directory.
fn default_workspace(file: &Path) -> PathBuf {
    let dir = file.parent().unwrap_or(file);
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(dir)
        .to_path_buf()
}

pub fn run(options: &Options) -> Result<String, String> {
    let file = std::fs::canonicalize(&options.file)
        .map_err(|err| format!("cannot read {}: {err}", options.file.display()))?;
    let root = match &options.workspace {
        Some(dir) => std::fs::canonicalize(dir)
            .map_err(|err| format!("cannot use workspace {}: {err}", dir.display()))?,
        None => default_workspace(&file),
    };
    if !file.starts_with(&root) {
        return Err(format!(
            "{} is outside the workspace {}",
            file.display(),
            root.display()
        ));
    }
    let config = Config {
        repo_map_max_tokens: options
            .repo_map_tokens
            .min(agentls_core::repo_map::MAX_TOKENS),
        ..Config::default()
    };
    let (mut prompts, problems) = crate::store::prompts::load(
        crate::store::prompts::override_dir(None).as_deref(),
        config.compaction.prompt_file.as_deref(),
    );
    // The terminal has no editor language servers: the tools `agentls ask` describes.
    prompts
        .tools
        .retain(|tool| crate::tools::lsp::described(&tool.name, false));
    for problem in problems {
        eprintln!("agentls: {problem}");
    }
    let uri =
        Url::from_file_path(&file).map_err(|()| format!("{} has no file: uri", file.display()))?;
    let state = EditorState {
        uri,
        position: Position::new(
            options.line.saturating_sub(1) as u32,
            options.column.saturating_sub(1) as u32,
        ),
        selection: None,
        visible_range: None,
        diagnostics: Vec::new(),
    };
    // The same index the editor's server keeps: the persisted one brought up to date, or
    // built on the spot.
    let roots = vec![root.clone()];
    let symbols = crate::symbols::Symbols::open(&roots, &config);
    let source = DiskSource {
        roots,
        symbols: Some(symbols),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let gathered = runtime.block_on(gather::gather(&source, &config, &prompts, Some(&state)))?;
    let history = History::new(config.tokenizer());
    let inputs = gathered.inputs(&config, &prompts, &history, Calibration::default());
    let display_path = gathered
        .active
        .as_ref()
        .map(|active| active.display_path.clone())
        .unwrap_or_default();
    let report = inspect::report(&inputs, "", &mut AssemblyCache::default());
    if options.json {
        return serde_json::to_string_pretty(&report).map_err(|e| e.to_string());
    }
    Ok(render(&report, &display_path, options, &root))
}

fn render(report: &ContextReport, path: &str, options: &Options, root: &Path) -> String {
    let mut out = format!(
        "context for {path}:{}:{} in {}\ntokenizer {}, context window {}, counts estimated\n\n",
        options.line,
        options.column,
        root.display(),
        report.tokenizer,
        report.context_window
    );
    out.push_str(&format!("{:<24}{:>9}  trust\n", "section", "tokens"));
    for section in &report.sections {
        let trust = serde_json::to_value(section.trust).unwrap_or_default();
        out.push_str(&format!(
            "{:<24}{:>9}  {}\n",
            section.name,
            section.tokens,
            trust.as_str().unwrap_or("")
        ));
    }
    out.push_str(&format!(
        "{:<24}{:>9}  {:.1}% of the window\n",
        "total",
        report.total_tokens,
        report.fill * 100.0
    ));
    if !report.editor_parts.is_empty() {
        out.push_str("\neditor context parts:\n");
        for part in &report.editor_parts {
            let mut note = if part.omitted {
                format!("omitted ({} tokens did not fit)", part.cut_tokens)
            } else if part.cut_tokens > 0 {
                format!("cut ({} tokens removed)", part.cut_tokens)
            } else {
                String::new()
            };
            if let (Some(shown), Some(cut)) = (part.entries, part.cut_entries) {
                note = format!("{shown} shown, {cut} left out {note}");
            }
            out.push_str(&format!(
                "  {:<22}{:>9}  of {:<7}{}\n",
                part.name,
                part.tokens,
                part.max_tokens,
                note.trim_end()
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse_from_the_right() {
        assert_eq!(
            parse_location("no/such/a.rs:12:5"),
            (PathBuf::from("no/such/a.rs"), 12, 5)
        );
        assert_eq!(
            parse_location("no/such/a.rs:12"),
            (PathBuf::from("no/such/a.rs"), 12, 1)
        );
        assert_eq!(
            parse_location("no/such/a.rs"),
            (PathBuf::from("no/such/a.rs"), 1, 1)
        );
        assert_eq!(
            parse_location("c:/x/a.rs:3"),
            (PathBuf::from("c:/x/a.rs"), 3, 1)
        );
        assert_eq!(parse_location("a.rs:0"), (PathBuf::from("a.rs:0"), 1, 1));
    }
}
