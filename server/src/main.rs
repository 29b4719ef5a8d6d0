//! The `agentls` binary: an LSP server on stdio by default, plus a few subcommands.

use agentls::dev::bench::{self, KeystrokeOptions};
use std::path::PathBuf;
use std::process::ExitCode;

const HELP: &str = "\
agentls — the language server behind an in-editor LLM coding agent

USAGE:
    agentls [--stdio]                 Serve LSP on stdin/stdout (what editors start)
    agentls demo [DIR] [FILE]         Start agentls as a child, drive a scripted LSP session
                                      on DIR (default .) and print what it tracked
    agentls ask QUESTION [--file PATH[:LINE[:COL]]] [--session ID] [--approve]
               [--workspace DIR] [--config JSON|@FILE]
                                      One agent turn without an editor: the answer on
                                      stdout, tool calls on stderr, the session persisted
    agentls context FILE[:LINE[:COL]] [--workspace DIR] [--json]
                                      Show what the model would see for FILE at that
                                      position: sections, token counts, editor context
    agentls bench keystroke [--lines N] [--edits N] [--rounds N] [--lsp-edits N]
                                      Measure the keystroke path (document core vs bare
                                      rope + tree-sitter)
    agentls bench context [--history-tokens N] [--buffers N] [--rounds N]
                                      Context assembly for a long session, incremental vs
                                      tokenizing from scratch; tokenizer throughput
    agentls bench stream [--chunks N] [--turns N] [--first-token-ms N] [--gap-ms N]
                                      Streaming through agentls from a fake provider:
                                      chunk latency p50/p99, time to first token vs direct
    agentls bench ttft --base-url URL [--model M] [--turns N]
                                      Time to first token through agentls vs direct, on a
                                      real OpenAI-compatible server
    agentls bench compaction [--history-tokens N] [--rounds N] [--summary-ms N]
                                      Non-LLM compaction steps on a long history; LSP
                                      latency during a slow summary; prepared-swap wait
    agentls bench memory [--buffers N] [--lines N] [--history-tokens N]
                                      RSS idle and with open buffers and a long session
    agentls bench startup [--files N] initialize latency and index time on a generated
                                      workspace of N files (default 100000)
    agentls bench subagent            Tokens an `explore` run over this repository keeps
                                      out of the parent's history (run at the repo root)
    agentls eval-compaction [--sessions N] [--compactions N] [--turns N] [--window N]
                                      Recall of planted facts after 1..N compactions,
                                      poor and extractive summarizers (fake provider)
    agentls fake-provider [--script FILE]
                                      A scripted OpenAI-compatible provider on loopback
                                      (for editor plugin tests): prints its base URL,
                                      serves until stdin closes
    agentls --version                 Print the version
    agentls --help                    Print this help

ENVIRONMENT:
    AGENTLS_LOG    log filter, RUST_LOG syntax (default: info). Logs go to stderr only.
    AGENTLS_MAX_FRAME_BYTES
                   the largest LSP frame read (default 128 MiB); a larger one is refused
                   with a log line and skipped, the session goes on.
    *_KEY, *_TOKEN, *_SECRET, *_PASSWORD
                   read at start-up and wiped from the process's initial environment
                   block (what /proc/PID/environ shows); tool commands still inherit them,
                   except the provider's key, and their values are redacted from tool
                   outputs.
";

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("AGENTLS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
}

fn main() -> ExitCode {
    // First, before any thread starts: the API keys are taken out of the initial environment
    // block, where tool processes could read them through /proc/$PPID/environ.
    agentls::store::secrets::take_from_environment();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        [] | ["--stdio"] => {
            init_logging();
            match runtime() {
                Ok(rt) => {
                    let end = rt.block_on(agentls::lsp::serve_stdio());
                    // Shell commands the agent started run in their own process groups:
                    // they must not outlive the editor's session.
                    agentls::tools::shell::kill_running_commands();
                    // A blocking read of stdin may still be parked in tokio's pool: don't
                    // wait for it.
                    rt.shutdown_timeout(std::time::Duration::from_millis(100));
                    match end {
                        agentls::lsp::SessionEnd::Clean => ExitCode::SUCCESS,
                        agentls::lsp::SessionEnd::Unclean => ExitCode::from(1),
                    }
                }
                Err(err) => fail(&format!("cannot start the runtime: {err}")),
            }
        }
        ["--version" | "-V"] => {
            println!("agentls {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        ["--help" | "-h" | "help"] => {
            print!("{HELP}");
            ExitCode::SUCCESS
        }
        ["demo", rest @ ..] if rest.len() <= 2 => {
            let dir = PathBuf::from(rest.first().copied().unwrap_or("."));
            let file = rest.get(1).map(PathBuf::from);
            let result = runtime()
                .map_err(|e| e.to_string())
                .and_then(|rt| rt.block_on(agentls::dev::demo::run(&dir, file.as_deref())));
            match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(err) => fail(&err),
            }
        }
        ["ask", rest @ ..] => {
            let result = agentls::cli::ask::parse_args(rest).and_then(|options| {
                runtime()
                    .map_err(|e| e.to_string())
                    .and_then(|rt| rt.block_on(agentls::cli::ask::run(options)))
            });
            match result {
                Ok(0) => ExitCode::SUCCESS,
                Ok(code) => ExitCode::from(code as u8),
                Err(err) => fail(&err),
            }
        }
        ["context", rest @ ..] => {
            match agentls::cli::context::parse_args(rest)
                .and_then(|o| agentls::cli::context::run(&o))
            {
                Ok(output) => {
                    println!("{output}");
                    ExitCode::SUCCESS
                }
                Err(err) => fail(&err),
            }
        }
        ["bench", "keystroke", rest @ ..] => match keystroke_options(rest) {
            Ok(options) => {
                let report = bench::keystroke(&options);
                bench::print_keystroke(&options, &report);
                let over_lsp = runtime()
                    .map_err(|e| e.to_string())
                    .and_then(|rt| rt.block_on(bench::keystroke_over_lsp(&options)));
                match over_lsp {
                    Ok(report) => {
                        bench::print_keystroke_over_lsp(&options, &report);
                        ExitCode::SUCCESS
                    }
                    Err(err) => fail(&err),
                }
            }
            Err(err) => fail(&err),
        },
        // The floor of `bench keystroke`: a tower-lsp server that does nothing.
        ["bench", "null-server"] => match runtime() {
            Ok(rt) => {
                rt.block_on(agentls::dev::null_server::serve());
                ExitCode::SUCCESS
            }
            Err(err) => fail(&err.to_string()),
        },
        ["bench", "context", rest @ ..] => match context_options(rest) {
            Ok(options) => {
                let report = agentls::dev::bench_context::context(&options);
                agentls::dev::bench_context::print_context(&options, &report);
                ExitCode::SUCCESS
            }
            Err(err) => fail(&err),
        },
        ["bench", "stream", rest @ ..] => {
            let result = stream_options(rest).and_then(|options| {
                runtime()
                    .map_err(|e| e.to_string())
                    .and_then(|rt| rt.block_on(agentls::dev::bench_stream::stream(&options)))
                    .map(|report| (options, report))
            });
            match result {
                Ok((options, report)) => {
                    agentls::dev::bench_stream::print_stream(&options, &report);
                    ExitCode::SUCCESS
                }
                Err(err) => fail(&err),
            }
        }
        ["bench", "ttft", rest @ ..] => {
            let mut base_url = None;
            let mut model = "smollm2".to_string();
            let mut turns = 10;
            let mut args = rest.iter();
            let mut problem = None;
            while let Some(flag) = args.next() {
                match (*flag, args.next()) {
                    ("--base-url", Some(v)) => base_url = Some(v.to_string()),
                    ("--model", Some(v)) => model = v.to_string(),
                    ("--turns", Some(v)) => turns = v.parse().unwrap_or(10),
                    (other, _) => problem = Some(format!("unknown or incomplete option {other}")),
                }
            }
            let result = match (problem, base_url) {
                (Some(problem), _) => Err(problem),
                (None, None) => Err("--base-url is required".to_string()),
                (None, Some(url)) => runtime().map_err(|e| e.to_string()).and_then(|rt| {
                    rt.block_on(agentls::dev::bench_stream::ttft_real(&url, &model, turns))
                }),
            };
            match result {
                Ok((through, direct, rounds)) => {
                    println!(
                        "time to first token on {model}, median of {rounds} rounds: through agentls {:.1} ms, direct {:.1} ms, ratio {:.3}",
                        through.as_secs_f64() * 1e3,
                        direct.as_secs_f64() * 1e3,
                        through.as_secs_f64() / direct.as_secs_f64().max(1e-9)
                    );
                    ExitCode::SUCCESS
                }
                Err(err) => fail(&err),
            }
        }
        ["bench", "memory", rest @ ..] => {
            let mut options = agentls::dev::bench_memory::MemoryOptions::default();
            let parsed = numeric_flags(rest, |flag, value| {
                match flag {
                    "--buffers" => options.buffers = value,
                    "--lines" => options.lines = value.max(1),
                    "--history-tokens" => options.history_tokens = value.max(1000),
                    other => return Err(format!("unknown option {other}")),
                }
                Ok(())
            });
            let result = parsed.and_then(|()| {
                runtime()
                    .map_err(|e| e.to_string())
                    .and_then(|rt| rt.block_on(agentls::dev::bench_memory::run(&options)))
            });
            match result {
                Ok(report) => {
                    agentls::dev::bench_memory::print(&options, &report);
                    ExitCode::SUCCESS
                }
                Err(err) => fail(&err),
            }
        }
        ["bench", "subagent"] => {
            let result = runtime()
                .map_err(|e| e.to_string())
                .and_then(|rt| rt.block_on(agentls::dev::bench_subagent::run()));
            match result {
                Ok(report) => {
                    agentls::dev::bench_subagent::print(&report);
                    ExitCode::SUCCESS
                }
                Err(err) => fail(&err),
            }
        }
        ["bench", "compaction", rest @ ..] => {
            let mut options = agentls::dev::bench_compaction::CompactionBenchOptions::default();
            let parsed = numeric_flags(rest, |flag, value| {
                match flag {
                    "--history-tokens" => options.history_tokens = value.max(1000),
                    "--rounds" => options.rounds = value.max(1),
                    "--summary-ms" => options.summary_ms = (value as u64).max(500),
                    other => return Err(format!("unknown option {other}")),
                }
                Ok(())
            });
            let result = parsed.and_then(|()| {
                runtime()
                    .map_err(|e| e.to_string())
                    .and_then(|rt| rt.block_on(agentls::dev::bench_compaction::run(&options)))
            });
            match result {
                Ok(report) => {
                    agentls::dev::bench_compaction::print(&options, &report);
                    ExitCode::SUCCESS
                }
                Err(err) => fail(&err),
            }
        }
        ["fake-provider", rest @ ..] => {
            let script = match rest {
                [] => Ok(None),
                ["--script", path] => Ok(Some(path.to_string())),
                _ => Err("usage: agentls fake-provider [--script FILE]".to_string()),
            };
            let result = script.and_then(|script| {
                runtime().map_err(|e| e.to_string()).and_then(|rt| {
                    rt.block_on(agentls::dev::fake_provider::run_process(script.as_deref()))
                })
            });
            match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(err) => fail(&err),
            }
        }
        ["eval-compaction", rest @ ..] => {
            let mut options = agentls::dev::eval_compaction::EvalOptions::default();
            let parsed = numeric_flags(rest, |flag, value| {
                match flag {
                    "--sessions" => options.sessions = value.max(1),
                    "--compactions" => options.compactions = value.max(1),
                    "--turns" => options.turns = value.max(1),
                    "--window" => options.context_window = value.max(4096),
                    other => return Err(format!("unknown option {other}")),
                }
                Ok(())
            });
            let result = parsed.and_then(|()| {
                runtime()
                    .map_err(|e| e.to_string())
                    .and_then(|rt| rt.block_on(agentls::dev::eval_compaction::run(&options)))
            });
            match result {
                Ok(report) => {
                    agentls::dev::eval_compaction::print(&options, &report);
                    ExitCode::SUCCESS
                }
                Err(err) => fail(&err),
            }
        }
        ["bench", "startup", rest @ ..] => {
            let report = startup_files(rest).and_then(|files| {
                runtime()
                    .map_err(|e| e.to_string())
                    .and_then(|rt| rt.block_on(bench::startup(files)))
            });
            match report {
                Ok(report) => {
                    bench::print_startup(&report);
                    ExitCode::SUCCESS
                }
                Err(err) => fail(&err),
            }
        }
        _ => fail(&format!("unknown arguments: {}\n\n{HELP}", args.join(" "))),
    }
}

/// Parses `--flag N` pairs, handing each (flag, N) to `set`, which rejects unknown flags.
fn numeric_flags(
    args: &[&str],
    mut set: impl FnMut(&str, usize) -> Result<(), String>,
) -> Result<(), String> {
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .and_then(|v| v.parse::<usize>().ok())
            .ok_or_else(|| format!("{flag} needs a number"))?;
        set(flag, value)?;
    }
    Ok(())
}

fn keystroke_options(args: &[&str]) -> Result<KeystrokeOptions, String> {
    let mut options = KeystrokeOptions::default();
    numeric_flags(args, |flag, value| {
        match flag {
            "--lines" => options.lines = value.max(1),
            "--edits" => options.edits = value,
            "--rounds" => options.rounds = value.max(1),
            "--lsp-edits" => options.lsp_edits = value,
            other => return Err(format!("unknown option {other}")),
        }
        Ok(())
    })?;
    Ok(options)
}

fn context_options(args: &[&str]) -> Result<agentls::dev::bench_context::ContextOptions, String> {
    let mut options = agentls::dev::bench_context::ContextOptions::default();
    numeric_flags(args, |flag, value| {
        match flag {
            "--history-tokens" => options.history_tokens = value,
            "--buffers" => options.buffers = value.max(1),
            "--rounds" => options.rounds = value.max(1),
            other => return Err(format!("unknown option {other}")),
        }
        Ok(())
    })?;
    Ok(options)
}

fn stream_options(args: &[&str]) -> Result<agentls::dev::bench_stream::StreamOptions, String> {
    let mut options = agentls::dev::bench_stream::StreamOptions::default();
    numeric_flags(args, |flag, value| {
        match flag {
            "--chunks" => options.chunks = value.max(1),
            "--turns" => options.turns = value.max(1),
            "--first-token-ms" => options.first_token_ms = value as u64,
            "--gap-ms" => options.gap_ms = value as u64,
            other => return Err(format!("unknown option {other}")),
        }
        Ok(())
    })?;
    Ok(options)
}

fn startup_files(args: &[&str]) -> Result<usize, String> {
    let mut files = 100_000;
    numeric_flags(args, |flag, value| match flag {
        "--files" => {
            files = value;
            Ok(())
        }
        other => Err(format!("unknown option {other}")),
    })?;
    Ok(files)
}

fn fail(message: &str) -> ExitCode {
    eprintln!("agentls: {message}");
    ExitCode::FAILURE
}
