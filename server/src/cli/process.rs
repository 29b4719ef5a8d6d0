//! What every agentls executable does first (`agentls`, and `agentls-dev`, whose eval and
//! benchmarks run the agent in process): be the warden when started as one, else take the
//! keys out of the environment and install the TLS provider, before any thread starts.

use std::process::ExitCode;

/// The start of `main`. Some(exit code) when this process was started as the warden (see
/// `process_groups`: it is this same executable, dispatched before anything is set up);
/// None when `main` goes on.
pub fn start() -> Option<ExitCode> {
    if std::env::args_os().nth(1).as_deref()
        == Some(std::ffi::OsStr::new(
            crate::process_groups::WARDEN_SUBCOMMAND,
        ))
    {
        return Some(crate::process_groups::run_warden());
    }
    crate::process_groups::enable_warden();
    // First, before any thread starts: the API keys are taken out of the initial environment
    // block, where tool processes could read them through /proc/$PPID/environ.
    crate::store::secrets::take_from_environment();
    // rustls's crypto provider (ring), before any HTTPS client exists.
    crate::provider::tls::install();
    None
}

/// The multi-threaded runtime the commands run on.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
}
