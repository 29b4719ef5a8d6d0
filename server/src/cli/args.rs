//! The command line's grammar: every subcommand, flag and value, parsed by clap.
//!
//! A bad value or an unknown flag is refused with a message and exit code 2 (clap's usage
//! error), never replaced by a default; `--help` exists for every subcommand. The defaults
//! shown in `--help` are read from the options' own `Default`, so they cannot drift.

use crate::cli::ask::AskOptions;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

const ENVIRONMENT: &str = "\
ENVIRONMENT:
    AGENTLS_LOG    log filter, RUST_LOG syntax (default: info). Logs go to stderr only.
    AGENTLS_MAX_FRAME_BYTES
                   the largest LSP frame read (default 128 MiB); a larger one is refused
                   with a log line and skipped, the session goes on.
    *_KEY, *_TOKEN, *_SECRET, *_PASSWORD
                   read at start-up and wiped from the process's initial environment
                   block (what /proc/PID/environ shows); tool commands still inherit them,
                   except the provider's key, and their values are redacted from tool
                   outputs.";

/// agentls — the language server behind an in-editor LLM coding agent.
///
/// Without a subcommand it serves LSP on stdin/stdout (what editors start).
#[derive(Parser, Debug)]
#[command(name = "agentls", version, after_help = ENVIRONMENT)]
pub struct Cli {
    /// Serve LSP on stdin/stdout (the default; accepted because editors pass it)
    #[arg(long)]
    pub stdio: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// One agent turn without an editor: the answer on stdout, tool calls on stderr, the
    /// session persisted
    Ask(AskArgs),
    /// Serve the Agent Client Protocol on stdin/stdout (Zed, JetBrains, CodeCompanion, avante,
    /// any ACP client): newline-delimited JSON-RPC, the same agent as the LSP mode
    Acp(AcpArgs),
    /// Show what the model would see for FILE at that position: sections, token counts,
    /// editor context
    Context(ContextArgs),
    /// Run a command in the command sandbox (what `shell` calls run in): writes only in the
    /// current directory and the temp directory, no network
    Sandbox(SandboxArgs),
    /// The facts kept across sessions: list them (the default), add one, remove one
    Memory(MemoryArgs),
}

#[derive(Args, Debug)]
pub struct MemoryArgs {
    #[command(subcommand)]
    pub action: Option<MemoryCommand>,
    /// The workspace whose memory this is (default: the current directory)
    #[arg(long, value_name = "DIR", global = true)]
    pub workspace: Option<PathBuf>,
    /// Settings as JSON, or @FILE holding JSON (`stateDir` places the workspace's memory)
    #[arg(long, value_name = "JSON|@FILE", global = true)]
    pub config: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum MemoryCommand {
    /// Both memories' entries, numbered, with who wrote each
    List,
    /// Keep a fact, as yours
    Add {
        #[arg(value_parser = not_blank)]
        fact: String,
        #[arg(long, value_enum, default_value_t = ScopeArg::Workspace)]
        scope: ScopeArg,
    },
    /// Remove entry N (as `list` numbers them) of one memory
    Remove {
        number: usize,
        #[arg(long, value_enum)]
        scope: ScopeArg,
    },
}

/// `user` (every workspace) or `workspace` (this one).
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum ScopeArg {
    User,
    Workspace,
}

impl MemoryArgs {
    pub fn action(&self) -> crate::cli::memory::MemoryAction {
        use crate::cli::memory::MemoryAction;
        let scope = |arg: ScopeArg| match arg {
            ScopeArg::User => agentls_core::memory::Scope::User,
            ScopeArg::Workspace => agentls_core::memory::Scope::Workspace,
        };
        match &self.action {
            None | Some(MemoryCommand::List) => MemoryAction::List,
            Some(MemoryCommand::Add { fact, scope: s }) => MemoryAction::Add {
                fact: fact.clone(),
                scope: scope(*s),
            },
            Some(MemoryCommand::Remove { number, scope: s }) => MemoryAction::Remove {
                number: *number,
                scope: scope(*s),
            },
        }
    }
}

#[derive(Args, Debug)]
pub struct SandboxArgs {
    /// The policy as JSON (agentls passes it to a client terminal); default: the current
    /// directory as the workspace, writable, no network
    #[arg(long, value_name = "JSON")]
    pub policy: Option<String>,
    /// The command and its arguments
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Args, Debug)]
pub struct AskArgs {
    /// The question (quote it)
    #[arg(value_parser = not_blank)]
    question: String,
    /// The file (and position) the question is about
    #[arg(long, value_name = "PATH[:LINE[:COL]]")]
    file: Option<String>,
    /// Continue this session instead of starting a new one
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// Approve every tool call (otherwise writes and commands are refused)
    #[arg(long)]
    approve: bool,
    /// The workspace root (default: the nearest ancestor holding .git, else the current
    /// directory)
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Settings as JSON, or @FILE holding JSON (the keys of initializationOptions)
    #[arg(long, value_name = "JSON|@FILE")]
    config: Option<String>,
    /// Append every update of the turn to FILE as JSON lines ({sessionId, turnId, update}),
    /// as an editor gets them in `agent/update` (for scripts and benchmarks)
    #[arg(long, value_name = "FILE")]
    events: Option<PathBuf>,
    /// Work in a new git worktree of the repository, on a branch of its own, leaving the
    /// working tree as it is (its work is committed on that branch at the end)
    #[arg(long, conflicts_with = "session")]
    worktree: bool,
}

impl From<AskArgs> for AskOptions {
    fn from(args: AskArgs) -> Self {
        AskOptions {
            question: args.question,
            file: args.file,
            session: args.session,
            approve: args.approve,
            workspace: args.workspace,
            config: args.config,
            events: args.events,
            worktree: args.worktree,
        }
    }
}

#[derive(Args, Debug)]
pub struct AcpArgs {
    /// Settings as JSON, or @FILE holding JSON (the keys of initializationOptions)
    #[arg(long, value_name = "JSON|@FILE")]
    pub config: Option<String>,
}

#[derive(Args, Debug)]
pub struct ContextArgs {
    /// The file, optionally with a 1-based line and column
    #[arg(value_name = "FILE[:LINE[:COL]]")]
    pub location: String,
    /// The workspace root (default: the nearest ancestor holding .git)
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
    /// Add the repository map to the system message, cut to N tokens (the setting
    /// context.repoMap.maxTokens; default 0: none)
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub repo_map_tokens: usize,
}

fn not_blank(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        Err("the question is empty".to_string())
    } else {
        Ok(text.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_grammar_is_consistent() {
        Cli::command().debug_assert();
    }

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("agentls").chain(args.iter().copied()))
    }

    #[test]
    fn bad_values_are_refused_not_replaced() {
        for args in [
            &["ask", " "][..],
            &["context"],
            &["sandbox"],
            &["sandbox", "--policy"],
            &["--frobnicate"],
            // The dev kit's commands are agentls-dev's, not the product's.
            &["demo"],
            &["bench", "keystroke"],
            &["eval-compaction"],
            &["fake-provider"],
        ] {
            let err = parse(args).expect_err(&args.join(" "));
            assert_eq!(err.exit_code(), 2, "{}: {err}", args.join(" "));
        }
    }

    #[test]
    fn values_reach_the_options() {
        let Some(Command::Ask(args)) = parse(&["ask", "why?", "--file", "a.rs:3", "--approve"])
            .unwrap()
            .command
        else {
            panic!("not ask")
        };
        let options = AskOptions::from(args);
        assert_eq!(
            (
                options.question.as_str(),
                options.file.as_deref(),
                options.approve
            ),
            ("why?", Some("a.rs:3"), true)
        );
    }
}
