//! The `agentls` binary: an LSP server on stdio by default, plus `ask`, `acp`, `context` and
//! `sandbox`.
//! The grammar of the command line is `agentls::cli::args`; the dev commands (benchmarks,
//! demo, fake provider) are `agentls-dev`'s (crates/dev).

use agentls::cli::args::{Cli, Command};
use agentls::cli::process::runtime;
use clap::{CommandFactory, FromArgMatches};
use std::process::ExitCode;

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("AGENTLS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}

fn main() -> ExitCode {
    // The warden, the keys out of the environment, TLS: before anything else.
    if let Some(warden) = agentls::cli::process::start() {
        return warden;
    }
    // A usage error (unknown flag, bad value) exits with 2 and a message; --help and
    // --version exit with 0.
    // The version names the commit (build.rs); only this file reads it, so a new commit
    // relinks the binary without rebuilding the library.
    let matches = Cli::command()
        .version(env!("AGENTLS_VERSION"))
        .get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|err| err.exit());
    match cli.command {
        None => serve_stdio(),
        Some(Command::Ask(args)) => {
            let options = args.into();
            match runtime()
                .map_err(|e| e.to_string())
                .and_then(|rt| rt.block_on(agentls::cli::ask::run(options)))
            {
                Ok(0) => ExitCode::SUCCESS,
                Ok(code) => ExitCode::from(code as u8),
                Err(err) => fail(&err),
            }
        }
        Some(Command::Acp(args)) => {
            init_logging();
            // Without a provider, initialize still answers; session/new says what is missing.
            let config = agentls::cli::ask::config(&agentls::cli::ask::AskOptions {
                config: args.config,
                ..Default::default()
            });
            match runtime() {
                Ok(rt) => {
                    rt.block_on(agentls::acp::serve_stdio(config));
                    agentls::process_groups::kill_all();
                    rt.shutdown_timeout(std::time::Duration::from_millis(100));
                    ExitCode::SUCCESS
                }
                Err(err) => fail(&err.to_string()),
            }
        }
        Some(Command::Sandbox(args)) => ExitCode::from(
            agentls::sandbox::run_confined(args.policy.as_deref(), &args.command).clamp(0, 255)
                as u8,
        ),
        Some(Command::Memory(args)) => match agentls::cli::memory::run(
            &args.action(),
            args.workspace.as_deref(),
            args.config.as_deref(),
        ) {
            Ok(output) => {
                println!("{output}");
                ExitCode::SUCCESS
            }
            Err(err) => fail(&err),
        },
        Some(Command::Context(args)) => match agentls::cli::context::run(&args.into()) {
            Ok(output) => {
                // `agentls context … | head` closes the pipe early: not an error to panic on.
                use std::io::Write;
                match writeln!(std::io::stdout().lock(), "{output}") {
                    Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
                        fail(&err.to_string())
                    }
                    _ => ExitCode::SUCCESS,
                }
            }
            Err(err) => fail(&err),
        },
    }
}

fn serve_stdio() -> ExitCode {
    init_logging();
    match runtime() {
        Ok(rt) => {
            let end = rt.block_on(agentls::lsp::serve_stdio());
            // Shell commands the agent started run in their own process groups: they must not
            // outlive the editor's session.
            agentls::process_groups::kill_all();
            // A blocking read of stdin may still be parked in tokio's pool: don't wait for it.
            rt.shutdown_timeout(std::time::Duration::from_millis(100));
            match end {
                agentls::lsp::SessionEnd::Clean => ExitCode::SUCCESS,
                agentls::lsp::SessionEnd::Unclean => ExitCode::from(1),
            }
        }
        Err(err) => fail(&format!("cannot start the runtime: {err}")),
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("agentls: {message}");
    ExitCode::FAILURE
}
