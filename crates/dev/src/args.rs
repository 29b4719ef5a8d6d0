//! The dev command line's grammar: every subcommand, flag and value of `agentls-dev`, parsed
//! by clap, with the same rules as agentls's own (`agentls::cli::args`): a bad value or an
//! unknown flag is refused with exit code 2, never replaced by a default; `--help` exists for
//! every subcommand; the defaults shown are read from the options' own `Default`.

use crate::bench::KeystrokeOptions;
use crate::bench_compaction::CompactionBenchOptions;
use crate::bench_context::ContextOptions;
use crate::bench_memory::MemoryOptions;
use crate::bench_prefix::PrefixOptions;
use crate::bench_stream::StreamOptions;
use crate::eval_compaction::EvalOptions;
use crate::eval_definitions::DefinitionsEvalOptions;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// agentls-dev — agentls's dev kit: benchmarks, the compaction eval, the demo and the scripted
/// fake provider the editor tiers use. Never shipped.
///
/// The commands that drive a server start the `agentls` beside this binary (cargo builds both
/// into one target directory), or $AGENTLS_BIN when it is set.
#[derive(Parser, Debug)]
#[command(name = "agentls-dev", version)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Start agentls as a child, drive a scripted LSP session on DIR and print what it tracked
    Demo {
        /// The workspace to open
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// The file to open in it (default: one the demo picks)
        file: Option<PathBuf>,
    },
    /// Measure a hot path (see BENCHMARKS.md for the figures and the machine)
    #[command(subcommand)]
    Bench(Bench),
    /// Recall of planted facts after 1..N compactions, poor and extractive summarizers (fake
    /// provider)
    EvalCompaction(EvalArgs),
    /// Evaluations of what the model is given
    #[command(subcommand)]
    Eval(Eval),
    /// A scripted OpenAI-compatible provider on loopback (for editor plugin tests): prints its
    /// base URL, serves until stdin closes
    FakeProvider {
        /// A JSON script of replies and routes
        #[arg(long, value_name = "FILE")]
        script: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum Eval {
    /// Share of the definitions a function uses (defined once elsewhere in the workspace)
    /// that reach the editor block, on crates of cargo's registry and Python's standard
    /// library; the `definitions` part's tokens and the block's fill
    Definitions(DefinitionsEvalArgs),
}

#[derive(Args, Debug)]
pub struct DefinitionsEvalArgs {
    /// A workspace to measure (repeatable); default: a fixed list of crates from cargo's
    /// registry and packages of Python's standard library, those present on this machine
    #[arg(long = "workspace", value_name = "DIR")]
    workspaces: Vec<PathBuf>,
    /// Functions sampled per workspace
    #[arg(long, default_value_t = DefinitionsEvalOptions::default().per_workspace, value_parser = at_least::<1>)]
    per_workspace: usize,
    /// The sampling seed
    #[arg(long, default_value_t = DefinitionsEvalOptions::default().seed)]
    seed: u64,
    /// Write the cases, expected definitions and results as JSON to FILE (input of
    /// scripts/eval-aider)
    #[arg(long, value_name = "FILE")]
    export: Option<PathBuf>,
}

impl From<DefinitionsEvalArgs> for DefinitionsEvalOptions {
    fn from(args: DefinitionsEvalArgs) -> Self {
        DefinitionsEvalOptions {
            workspaces: args.workspaces,
            per_workspace: args.per_workspace,
            seed: args.seed,
            export: args.export,
        }
    }
}

#[derive(Subcommand, Debug)]
pub enum Bench {
    /// The keystroke path: document core vs bare rope + tree-sitter in process, and over LSP
    /// against a do-nothing server
    Keystroke(KeystrokeArgs),
    /// The floor of `bench keystroke`: a tower-lsp server that does nothing
    #[command(hide = true)]
    NullServer,
    /// Context assembly for a long session, incremental vs tokenizing from scratch;
    /// tokenizer throughput
    Context(ContextBenchArgs),
    /// Streaming through agentls from a fake provider: chunk latency p50/p99, time to first
    /// token vs direct
    Stream(StreamArgs),
    /// Time to first token through agentls vs direct, on a real OpenAI-compatible server
    Ttft(TtftArgs),
    /// Non-LLM compaction steps on a long history; LSP latency during a slow summary;
    /// prepared-swap wait
    Compaction(CompactionArgs),
    /// RSS idle and with open buffers and a long session
    Memory(MemoryArgs),
    /// agentls's peak RSS while a sandboxed shell call floods its output (`yes`), beside a
    /// quiet one
    Flood(FloodArgs),
    /// initialize latency and index time on a generated workspace
    Startup(StartupArgs),
    /// Tokens an `explore` subagent run over this repository keeps out of the parent's
    /// history (run at the repository's root)
    Subagent,
    /// How much of each request of a multi-step turn repeats the one before, byte for byte
    /// (what a local server's prompt cache reuses; run at the repository's root)
    Prefix(PrefixArgs),
    /// What an image costs before it reaches a provider: the largest accepted (5 MB)
    /// decoded, checked and encoded; a request body with 8 of them assembled and written
    Images(ImagesArgs),
    /// What the command sandbox adds to a `shell` call: the same command sandboxed and not,
    /// alternately (run in a workspace-like directory)
    Sandbox(SandboxArgs),
    /// The workspace symbol index over a large tree (default: cargo's registry): cold build,
    /// restart from the persisted index, one file re-indexed, find_symbol latency, peak RSS
    Index(IndexArgs),
    /// What checkpoints cost a turn, on a copy of this repository and on a generated
    /// workspace (run at the repository's root); the store's growth per turn
    Checkpoint(CheckpointArgs),
    /// What preparing a turn's review costs (`agent/session/changes`) on the generated
    /// workspace, and one undo of it
    Review(ReviewArgs),
}

#[derive(Args, Debug)]
pub struct ReviewArgs {
    /// Files of the generated workspace
    #[arg(long, default_value_t = 20_000, value_parser = at_least::<1>)]
    files: usize,
    /// Files the turn changes
    #[arg(long, default_value_t = 3, value_parser = at_least::<1>)]
    changed: usize,
    /// Listings timed
    #[arg(long, default_value_t = 50, value_parser = at_least::<1>)]
    runs: usize,
}

impl From<ReviewArgs> for crate::bench_review::ReviewOptions {
    fn from(args: ReviewArgs) -> Self {
        crate::bench_review::ReviewOptions {
            files: args.files,
            changed: args.changed,
            runs: args.runs,
        }
    }
}

#[derive(Args, Debug)]
pub struct IndexArgs {
    /// The tree to index (default: the first directory of ~/.cargo/registry/src/)
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Indexing threads (default: the server's, every core but one)
    #[arg(long, value_parser = at_least::<1>)]
    threads: Option<usize>,
    /// find_symbol lookups timed
    #[arg(long, default_value_t = 2000, value_parser = at_least::<1>)]
    lookups: usize,
}

impl From<IndexArgs> for crate::bench_index::IndexOptions {
    fn from(args: IndexArgs) -> Self {
        let defaults = crate::bench_index::IndexOptions::default();
        crate::bench_index::IndexOptions {
            dir: args.dir,
            threads: args.threads.unwrap_or(defaults.threads),
            lookups: args.lookups,
            ..defaults
        }
    }
}

#[derive(Args, Debug)]
pub struct CheckpointArgs {
    /// Turns measured per workspace
    #[arg(long, default_value_t = 200, value_parser = at_least::<1>)]
    turns: usize,
    /// Files of the generated workspace
    #[arg(long, default_value_t = 20_000, value_parser = at_least::<1>)]
    files: usize,
    /// Files each turn changes
    #[arg(long, default_value_t = 3, value_parser = at_least::<1>)]
    changed: usize,
}

impl From<CheckpointArgs> for crate::bench_checkpoint::CheckpointOptions {
    fn from(args: CheckpointArgs) -> Self {
        crate::bench_checkpoint::CheckpointOptions {
            turns: args.turns,
            files: args.files,
            changed: args.changed,
            limits: agentls_core::checkpoints::CheckpointSettings::default(),
        }
    }
}

#[derive(Args, Debug)]
pub struct SandboxArgs {
    /// Runs of each
    #[arg(long, default_value_t = 200, value_parser = at_least::<1>)]
    runs: usize,
    /// The command
    #[arg(long, default_value = "true")]
    command: String,
}

impl From<SandboxArgs> for crate::bench_sandbox::SandboxOptions {
    fn from(args: SandboxArgs) -> Self {
        crate::bench_sandbox::SandboxOptions {
            runs: args.runs,
            command: args.command,
        }
    }
}

#[derive(Args, Debug)]
pub struct ImagesArgs {
    /// Rounds measured (the medians are printed)
    #[arg(long, default_value_t = 9, value_parser = at_least::<1>)]
    pub rounds: usize,
}

#[derive(Args, Debug)]
pub struct PrefixArgs {
    /// The model's window, in tokens
    #[arg(long, default_value_t = PrefixOptions::default().window, value_parser = at_least::<2048>)]
    window: usize,
}

impl From<PrefixArgs> for PrefixOptions {
    fn from(args: PrefixArgs) -> Self {
        PrefixOptions {
            window: args.window,
        }
    }
}

#[derive(Args, Debug)]
pub struct KeystrokeArgs {
    /// Lines of the generated Rust file
    #[arg(long, default_value_t = KeystrokeOptions::default().lines, value_parser = at_least::<1>)]
    lines: usize,
    /// Edits per in-process round
    #[arg(long, default_value_t = KeystrokeOptions::default().edits, value_parser = at_least::<0>)]
    edits: usize,
    /// Rounds, in process and over LSP (the median is reported)
    #[arg(long, default_value_t = KeystrokeOptions::default().rounds, value_parser = at_least::<1>)]
    rounds: usize,
    /// Edits of the burst sent over LSP
    #[arg(long, default_value_t = KeystrokeOptions::default().lsp_edits, value_parser = at_least::<0>)]
    lsp_edits: usize,
    /// The agentls binary measured over LSP (default: the one beside this binary; another
    /// build, to compare); the floor is always this binary's do-nothing server
    #[arg(long)]
    server: Option<PathBuf>,
    /// A workspace for agentls (its root in `initialize`): the burst starts once its file
    /// index and symbol index are built, so the keystrokes are measured with them present
    #[arg(long)]
    workspace: Option<PathBuf>,
}

impl From<KeystrokeArgs> for KeystrokeOptions {
    fn from(args: KeystrokeArgs) -> Self {
        KeystrokeOptions {
            lines: args.lines,
            edits: args.edits,
            rounds: args.rounds,
            lsp_edits: args.lsp_edits,
            server: args.server,
            workspace: args.workspace,
        }
    }
}

#[derive(Args, Debug)]
pub struct ContextBenchArgs {
    /// Tokens of the generated history
    #[arg(long, default_value_t = ContextOptions::default().history_tokens, value_parser = at_least::<0>)]
    history_tokens: usize,
    /// Open buffers
    #[arg(long, default_value_t = ContextOptions::default().buffers, value_parser = at_least::<1>)]
    buffers: usize,
    /// Rounds (the median is reported)
    #[arg(long, default_value_t = ContextOptions::default().rounds, value_parser = at_least::<1>)]
    rounds: usize,
}

impl From<ContextBenchArgs> for ContextOptions {
    fn from(args: ContextBenchArgs) -> Self {
        ContextOptions {
            history_tokens: args.history_tokens,
            buffers: args.buffers,
            rounds: args.rounds,
        }
    }
}

#[derive(Args, Debug)]
pub struct StreamArgs {
    /// Content chunks per streamed answer
    #[arg(long, default_value_t = StreamOptions::default().chunks, value_parser = at_least::<1>)]
    chunks: usize,
    /// Turns (answers) per figure
    #[arg(long, default_value_t = StreamOptions::default().turns, value_parser = at_least::<1>)]
    turns: usize,
    /// The fake model's thinking time before its first token
    #[arg(long, default_value_t = StreamOptions::default().first_token_ms)]
    first_token_ms: u64,
    /// Time between two chunks
    #[arg(long, default_value_t = StreamOptions::default().gap_ms)]
    gap_ms: u64,
}

impl From<StreamArgs> for StreamOptions {
    fn from(args: StreamArgs) -> Self {
        StreamOptions {
            chunks: args.chunks,
            turns: args.turns,
            first_token_ms: args.first_token_ms,
            gap_ms: args.gap_ms,
        }
    }
}

#[derive(Args, Debug)]
pub struct TtftArgs {
    /// The server's OpenAI-compatible base URL (e.g. http://127.0.0.1:8080/v1)
    #[arg(long, value_name = "URL")]
    pub base_url: String,
    /// The model name sent to the server
    #[arg(long, default_value = "smollm2")]
    pub model: String,
    /// Rounds (the median is reported)
    #[arg(long, default_value_t = 10, value_parser = at_least::<1>)]
    pub turns: usize,
}

#[derive(Args, Debug)]
pub struct CompactionArgs {
    /// Tokens of the generated history
    #[arg(long, default_value_t = CompactionBenchOptions::default().history_tokens, value_parser = at_least::<1000>)]
    history_tokens: usize,
    /// Rounds (the median is reported)
    #[arg(long, default_value_t = CompactionBenchOptions::default().rounds, value_parser = at_least::<1>)]
    rounds: usize,
    /// How long the slow summary call takes, in ms
    #[arg(long, default_value_t = CompactionBenchOptions::default().summary_ms, value_parser = at_least_u64::<500>)]
    summary_ms: u64,
}

impl From<CompactionArgs> for CompactionBenchOptions {
    fn from(args: CompactionArgs) -> Self {
        CompactionBenchOptions {
            history_tokens: args.history_tokens,
            rounds: args.rounds,
            summary_ms: args.summary_ms,
        }
    }
}

#[derive(Args, Debug)]
pub struct FloodArgs {
    /// How long the command runs, in seconds
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub seconds: u32,
}

#[derive(Args, Debug)]
pub struct MemoryArgs {
    /// Open buffers
    #[arg(long, default_value_t = MemoryOptions::default().buffers, value_parser = at_least::<0>)]
    buffers: usize,
    /// Lines per buffer
    #[arg(long, default_value_t = MemoryOptions::default().lines, value_parser = at_least::<1>)]
    lines: usize,
    /// Tokens of the loaded session
    #[arg(long, default_value_t = MemoryOptions::default().history_tokens, value_parser = at_least::<1000>)]
    history_tokens: usize,
}

impl From<MemoryArgs> for MemoryOptions {
    fn from(args: MemoryArgs) -> Self {
        MemoryOptions {
            buffers: args.buffers,
            lines: args.lines,
            history_tokens: args.history_tokens,
        }
    }
}

#[derive(Args, Debug)]
pub struct StartupArgs {
    /// Files of the generated workspace
    #[arg(long, default_value_t = 100_000, value_parser = at_least::<0>)]
    pub files: usize,
}

#[derive(Args, Debug)]
pub struct EvalArgs {
    /// Sessions (each plants its own facts)
    #[arg(long, default_value_t = EvalOptions::default().sessions, value_parser = at_least::<1>)]
    sessions: usize,
    /// Compactions per session
    #[arg(long, default_value_t = EvalOptions::default().compactions, value_parser = at_least::<1>)]
    compactions: usize,
    /// Turns before the first compaction, and between two
    #[arg(long, default_value_t = EvalOptions::default().turns, value_parser = at_least::<1>)]
    turns: usize,
    /// The context window, in tokens
    #[arg(long, default_value_t = EvalOptions::default().context_window, value_parser = at_least::<4096>)]
    window: usize,
}

impl From<EvalArgs> for EvalOptions {
    fn from(args: EvalArgs) -> Self {
        EvalOptions {
            sessions: args.sessions,
            compactions: args.compactions,
            turns: args.turns,
            context_window: args.window,
        }
    }
}

/// A whole number no smaller than `MIN` (a count, a size): anything else is refused.
fn at_least<const MIN: usize>(text: &str) -> Result<usize, String> {
    let value: usize = text
        .parse()
        .map_err(|_| format!("`{text}` is not a whole number"))?;
    if value < MIN {
        return Err(format!("must be at least {MIN}"));
    }
    Ok(value)
}

fn at_least_u64<const MIN: u64>(text: &str) -> Result<u64, String> {
    at_least::<0>(text).and_then(|v| {
        let v = v as u64;
        if v < MIN {
            Err(format!("must be at least {MIN}"))
        } else {
            Ok(v)
        }
    })
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
        Cli::try_parse_from(std::iter::once("agentls-dev").chain(args.iter().copied()))
    }

    #[test]
    fn bad_values_are_refused_not_replaced() {
        for args in [
            &["bench", "ttft", "--base-url", "http://x", "--turns", "x"][..],
            &["bench", "keystroke", "--lines", "many"],
            &["bench", "keystroke", "--rounds", "0"],
            &["bench", "memory", "--frobnicate", "1"],
            &["eval-compaction", "--window", "100"],
            &["eval", "definitions", "--per-workspace", "0"],
            &["eval", "definitions", "--seed", "x"],
            &["--frobnicate"],
        ] {
            let err = parse(args).expect_err(&args.join(" "));
            assert_eq!(err.exit_code(), 2, "{}: {err}", args.join(" "));
        }
    }

    #[test]
    fn values_reach_the_options() {
        let Command::Bench(Bench::Keystroke(args)) = parse(&["bench", "keystroke", "--lines", "7"])
            .unwrap()
            .command
        else {
            panic!("not keystroke")
        };
        let options = KeystrokeOptions::from(args);
        assert_eq!(options.lines, 7);
        assert_eq!(options.rounds, KeystrokeOptions::default().rounds);
    }
}
