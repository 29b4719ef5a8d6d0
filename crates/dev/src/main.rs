//! The `agentls-dev` binary: the dev kit's commands (benchmarks, the compaction eval, the
//! demo, the fake provider). The grammar of its command line is `agentls_dev::args`.

use agentls::cli::process::runtime;
use agentls_dev::args::{Bench, Cli, Command, Eval};
use agentls_dev::{
    bench, bench_checkpoint, bench_compaction, bench_context, bench_flood, bench_images,
    bench_index, bench_memory, bench_prefix, bench_review, bench_sandbox, bench_stream,
    bench_subagent, demo, eval_compaction, eval_definitions, fake_provider, null_server,
};
use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    // The warden, the keys out of the environment, TLS: before anything else.
    if let Some(warden) = agentls::cli::process::start() {
        return warden;
    }
    // A usage error (unknown flag, bad value) exits with 2 and a message; --help and
    // --version exit with 0.
    match Cli::parse().command {
        Command::Demo { dir, file } => run_async(|| demo::run(&dir, file.as_deref())),
        Command::Bench(which) => run_bench(which),
        Command::EvalCompaction(args) => {
            let options = args.into();
            report(block_on(eval_compaction::run(&options)), |report| {
                eval_compaction::print(&options, report)
            })
        }
        Command::Eval(Eval::Definitions(args)) => {
            let options = args.into();
            report(block_on(eval_definitions::run(&options)), |report| {
                eval_definitions::print(&options, report)
            })
        }
        Command::FakeProvider { script } => {
            run_async(|| fake_provider::run_process(script.as_deref()))
        }
    }
}

fn run_bench(which: Bench) -> ExitCode {
    match which {
        Bench::Keystroke(args) => {
            let options = args.into();
            let in_process = bench::keystroke(&options);
            bench::print_keystroke(&options, &in_process);
            report(block_on(bench::keystroke_over_lsp(&options)), |report| {
                bench::print_keystroke_over_lsp(&options, report)
            })
        }
        Bench::NullServer => run_async(|| async {
            null_server::serve().await;
            Ok(())
        }),
        Bench::Context(args) => {
            let options = args.into();
            let report = bench_context::context(&options);
            bench_context::print_context(&options, &report);
            ExitCode::SUCCESS
        }
        Bench::Stream(args) => {
            let options = args.into();
            report(block_on(bench_stream::stream(&options)), |report| {
                bench_stream::print_stream(&options, report)
            })
        }
        Bench::Ttft(args) => run_ttft(args),
        Bench::Compaction(args) => {
            let options = args.into();
            report(block_on(bench_compaction::run(&options)), |report| {
                bench_compaction::print(&options, report)
            })
        }
        Bench::Memory(args) => {
            let options = args.into();
            report(block_on(bench_memory::run(&options)), |report| {
                bench_memory::print(&options, report)
            })
        }
        Bench::Startup(args) => report(block_on(bench::startup(args.files)), bench::print_startup),
        Bench::Subagent => report(block_on(bench_subagent::run()), bench_subagent::print),
        Bench::Flood(args) => report(block_on(bench_flood::run(args.seconds)), bench_flood::print),
        Bench::Sandbox(args) => {
            let options = args.into();
            report(block_on(bench_sandbox::run(&options)), |report| {
                bench_sandbox::print(&options, report)
            })
        }
        Bench::Index(args) => {
            let options = args.into();
            report(bench_index::run(&options), |report| {
                bench_index::print(&options, report)
            })
        }
        Bench::Checkpoint(args) => {
            let options = args.into();
            report(bench_checkpoint::run(&options), |report| {
                bench_checkpoint::print(&options, report)
            })
        }
        Bench::Review(args) => {
            let options = args.into();
            report(block_on(bench_review::run(&options)), |report| {
                bench_review::print(&options, report)
            })
        }
        Bench::Images(args) => {
            bench_images::print(&bench_images::run(args.rounds));
            ExitCode::SUCCESS
        }
        Bench::Prefix(args) => {
            let options = args.into();
            report(block_on(bench_prefix::run(&options)), |report| {
                bench_prefix::print(&options, report)
            })
        }
    }
}

fn run_ttft(args: agentls_dev::args::TtftArgs) -> ExitCode {
    report(
        block_on(bench_stream::ttft_real(
            &args.base_url,
            &args.model,
            args.turns,
        )),
        |(through, direct, rounds)| {
            println!(
                "time to first token on {}, median of {rounds} rounds: through agentls {:.1} ms, direct {:.1} ms, ratio {:.3}",
                args.model,
                through.as_secs_f64() * 1e3,
                direct.as_secs_f64() * 1e3,
                through.as_secs_f64() / direct.as_secs_f64().max(1e-9)
            )
        },
    )
}

/// Runs `job` on a new multi-threaded runtime; a runtime that cannot start is an error.
fn block_on<T>(job: impl std::future::Future<Output = Result<T, String>>) -> Result<T, String> {
    runtime()
        .map_err(|e| e.to_string())
        .and_then(|rt| rt.block_on(job))
}

/// Runs an async job that only reports success or an error.
fn run_async<F: std::future::Future<Output = Result<(), String>>>(
    job: impl FnOnce() -> F,
) -> ExitCode {
    report(block_on(job()), |()| {})
}

/// Prints a job's report, or its error with exit code 1.
fn report<T>(result: Result<T, String>, print: impl FnOnce(&T)) -> ExitCode {
    match result {
        Ok(value) => {
            print(&value);
            ExitCode::SUCCESS
        }
        Err(err) => fail(&err),
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("agentls-dev: {message}");
    ExitCode::FAILURE
}
