//! `agentls-dev bench sandbox`: what the command sandbox adds to a `shell` call. The same
//! command (`true` by default) runs through agentls's own `run_shell` with the sandbox the
//! default settings give the current directory (Landlock, the mount namespace, the network
//! filter) and unconfined (`sandbox: off`), alternately, so both see the same machine.

use std::time::{Duration, Instant};

use agentls::tools::shell::run_shell;
use agentls::tools::shell_process::ChildSetup;
use agentls_core::config::Config;
use tokio_util::sync::CancellationToken;

pub struct SandboxOptions {
    pub runs: usize,
    pub command: String,
}

pub struct SandboxReport {
    pub sandboxed: Vec<Duration>,
    pub unconfined: Vec<Duration>,
    /// Whether the sandbox was in force (a machine without Landlock measures nothing).
    pub enforced: bool,
}

pub async fn run(options: &SandboxOptions) -> Result<SandboxReport, String> {
    let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
    let config = Config::default();
    let places = agentls::sandbox::places(vec![cwd.clone()], &config);
    let policy = agentls::sandbox::policy_for(&config.sandbox, false, &places);
    let enforced = policy.is_some();
    let mut report = SandboxReport {
        sandboxed: Vec::new(),
        unconfined: Vec::new(),
        enforced,
    };
    let cancel = CancellationToken::new();
    for _ in 0..options.runs {
        for confined in [true, false] {
            let sandbox = if confined { policy.as_ref() } else { None };
            let start = Instant::now();
            let outcome = run_shell(
                &options.command,
                &cwd,
                Duration::from_secs(60),
                64 * 1024,
                |_: &str| {},
                &cancel,
                ChildSetup {
                    hidden_env: &[],
                    sandbox,
                },
            )
            .await
            .map_err(|e| e.0)?;
            let took = start.elapsed();
            if outcome.exit_code != Some(0) {
                return Err(format!("`{}` failed: {}", options.command, outcome.output));
            }
            if confined {
                report.sandboxed.push(took);
            } else {
                report.unconfined.push(took);
            }
        }
    }
    Ok(report)
}

/// The `p` quantile of unsorted `samples`.
fn percentile(samples: &[Duration], p: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    crate::bench_stream::percentile(&sorted, p)
}

pub fn print(options: &SandboxOptions, report: &SandboxReport) {
    if !report.enforced {
        println!("no sandbox on this machine: both columns run unconfined");
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for (name, samples) in [
        ("sandboxed", &report.sandboxed),
        ("sandbox off", &report.unconfined),
    ] {
        println!(
            "{name:>12}: `{}` x{}: p50 {:.2} ms, p99 {:.2} ms",
            options.command,
            samples.len(),
            ms(percentile(samples, 0.5)),
            ms(percentile(samples, 0.99))
        );
    }
    println!(
        "{:>12}: p50 {:+.2} ms, p99 {:+.2} ms",
        "added",
        ms(percentile(&report.sandboxed, 0.5)) - ms(percentile(&report.unconfined, 0.5)),
        ms(percentile(&report.sandboxed, 0.99)) - ms(percentile(&report.unconfined, 0.99))
    );
}
