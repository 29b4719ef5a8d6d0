//! `agentls-dev bench index`: the workspace symbol index over a large tree of real code
//! (by default every crate in cargo's registry): a cold build, a restart from the persisted
//! index, one file re-indexed, and `find_symbol`'s latency, with the peak RSS growth; and
//! the repository map (`context.repoMap.maxTokens` 2,048): built the first time (the
//! unfocused ranking included), and what a turn after an edit pays for it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agentls::symbols::{BuildOptions, Symbols};
use agentls::tools::boundary::PathBoundary;
use agentls::tools::find_symbol::{find_symbol, FindSymbolInput};

use crate::bench_stream::percentile;

#[derive(Debug, Clone)]
pub struct IndexOptions {
    /// The tree to index; None: the first directory of `~/.cargo/registry/src/`.
    pub dir: Option<PathBuf>,
    pub threads: usize,
    /// `syntax.maxDocumentBytes`.
    pub max_file_bytes: u64,
    /// Lookups timed.
    pub lookups: usize,
}

impl Default for IndexOptions {
    fn default() -> Self {
        IndexOptions {
            dir: None,
            threads: BuildOptions::default_threads(),
            max_file_bytes: agentls_core::document::DEFAULT_MAX_SYNTAX_BYTES as u64,
            lookups: 2000,
        }
    }
}

pub struct IndexReport {
    pub dir: PathBuf,
    pub cold: Duration,
    /// CPU time of the cold build and of the restart (every thread).
    pub cold_cpu: Duration,
    pub restart_cpu: Duration,
    pub cold_status: agentls::symbols::SymbolsStatus,
    pub references: usize,
    /// VmHWM growth over the cold build, and VmRSS after it, in KiB.
    pub peak_growth_kib: u64,
    pub rss_after_kib: u64,
    pub store_bytes: u64,
    pub restart: Duration,
    pub restart_status: agentls::symbols::SymbolsStatus,
    /// One file re-read and re-parsed: wall p50/p99, thread CPU p50/p99, files.
    pub refresh: [Duration; 4],
    pub refreshed: usize,
    /// find_symbol: wall p50/p99, thread CPU p50/p99; without and with references.
    pub lookup: [Duration; 4],
    pub lookup_refs: [Duration; 4],
    /// The repository map at [`MAP_TOKENS`]: first built (ranking included), then again
    /// after each file re-indexed (p50/p99; the ranking reused within its slack, the map
    /// built and compared with the kept one); how many of those replaced the kept map.
    pub map_first: Duration,
    pub map_after_edit: [Duration; 2],
    pub map_replaced: usize,
    pub map_tokens: usize,
}

/// The repository map's budget the bench times.
pub const MAP_TOKENS: usize = 2_048;

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// CPU time of the whole process (user + system), every thread.
fn process_cpu() -> Duration {
    // SAFETY: getrusage fills the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// CPU time of the calling thread: the work of one call, whatever else the machine runs.
fn thread_cpu() -> Duration {
    // SAFETY: clock_gettime fills the struct it is given.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// p50 and p99 of `times`.
fn spread(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    (percentile(&times, 0.5), percentile(&times, 0.99))
}

fn registry_dir() -> Result<PathBuf, String> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .ok_or("no CARGO_HOME or HOME")?;
    let src = home.join("registry").join("src");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&src)
        .map_err(|e| format!("{}: {e}", src.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs.into_iter()
        .next()
        .ok_or_else(|| format!("nothing in {}", src.display()))
}

pub fn run(options: &IndexOptions) -> Result<IndexReport, String> {
    let dir = match &options.dir {
        Some(dir) => dir.clone(),
        None => registry_dir()?,
    };
    let dir = dir
        .canonicalize()
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let state = std::env::temp_dir().join(format!("agentls-bench-index-{}", std::process::id()));
    let store = state.join("symbols.bin");
    let build_options = BuildOptions {
        roots: vec![dir.clone()],
        max_file_bytes: options.max_file_bytes,
        store: Some(store.clone()),
        threads: options.threads,
    };
    let result = measure(options, &dir, &store, build_options);
    let _ = std::fs::remove_dir_all(&state);
    result
}

fn measure(
    options: &IndexOptions,
    dir: &Path,
    store: &Path,
    build_options: BuildOptions,
) -> Result<IndexReport, String> {
    let hwm_before = status_kib("VmHWM:");
    let symbols = Symbols::default();
    let started = Instant::now();
    let cpu = process_cpu();
    let cold_status = symbols.build(build_options.clone(), &|_, _| {});
    let cold = started.elapsed();
    let cold_cpu = process_cpu().saturating_sub(cpu);
    let peak_growth_kib = status_kib("VmHWM:").saturating_sub(hwm_before);
    let rss_after_kib = status_kib("VmRSS:");
    if let Some(error) = &cold_status.save_error {
        return Err(format!("saving the index failed: {error}"));
    }
    let references = symbols.read(|index| index.reference_count());
    let store_bytes = std::fs::metadata(store).map(|m| m.len()).unwrap_or(0);

    // Names to look up and files to re-index, spread over the tree.
    let (names, files) = symbols.read(|index| {
        let mut files: Vec<&str> = index.files().map(|f| f.path.as_str()).collect();
        files.sort();
        let step = (files.len() / options.lookups.max(1)).max(1);
        let names: Vec<String> = files
            .iter()
            .step_by(step)
            .filter_map(|path| index.file(path)?.definitions.first())
            .map(|d| d.name().to_string())
            .take(options.lookups)
            .collect();
        let refresh_step = (files.len() / 100).max(1);
        let files: Vec<PathBuf> = files
            .iter()
            .step_by(refresh_step)
            .map(PathBuf::from)
            .collect();
        (names, files)
    });
    drop(symbols);

    let restarted = Symbols::default();
    let started = Instant::now();
    let cpu = process_cpu();
    let restart_status = restarted.build(build_options, &|_, _| {});
    let restart = started.elapsed();
    let restart_cpu = process_cpu().saturating_sub(cpu);

    let (mut walls, mut cpus) = (Vec::new(), Vec::new());
    for file in &files {
        let started = Instant::now();
        let cpu = thread_cpu();
        restarted.refresh(std::slice::from_ref(file));
        cpus.push(thread_cpu().saturating_sub(cpu));
        walls.push(started.elapsed());
    }
    let (wall, cpu) = (spread(walls), spread(cpus));
    let refresh = [wall.0, wall.1, cpu.0, cpu.1];
    let map = time_repo_map(&restarted, dir, &files);

    let ws = PathBoundary {
        roots: vec![dir.to_path_buf()],
    };
    let time_lookups = |references: bool| -> Result<[Duration; 4], String> {
        let (mut walls, mut cpus) = (Vec::new(), Vec::new());
        for name in &names {
            let input = FindSymbolInput {
                name: name.clone(),
                kind: None,
                path: None,
                references: Some(references),
                limit: None,
            };
            let started = Instant::now();
            let cpu = thread_cpu();
            find_symbol(&restarted, &ws, &input).map_err(|e| e.0)?;
            cpus.push(thread_cpu().saturating_sub(cpu));
            walls.push(started.elapsed());
        }
        let (wall, cpu) = (spread(walls), spread(cpus));
        Ok([wall.0, wall.1, cpu.0, cpu.1])
    };
    let lookup = time_lookups(false)?;
    let lookup_refs = time_lookups(true)?;
    Ok(IndexReport {
        dir: dir.to_path_buf(),
        cold,
        cold_cpu,
        restart_cpu,
        cold_status,
        references,
        peak_growth_kib,
        rss_after_kib,
        store_bytes,
        restart,
        restart_status,
        refresh,
        refreshed: files.len(),
        lookup,
        lookup_refs,
        map_first: map.0,
        map_after_edit: map.1,
        map_replaced: map.2,
        map_tokens: map.3,
    })
}

/// The repository map as a turn gets it (`Symbols::repo_map`): first, then after each of
/// `files` is re-indexed (its text unchanged, the index's revision moved).
fn time_repo_map(
    symbols: &Symbols,
    dir: &Path,
    files: &[PathBuf],
) -> (Duration, [Duration; 2], usize, usize) {
    let settings = agentls_core::repo_map::MapSettings {
        max_tokens: MAP_TOKENS,
        tokenizer: agentls_core::tokens::TokenizerKind::O200kBase,
        heading: agentls_core::prompts::Prompts::builtin().repo_map,
    };
    let display = |path: &str| {
        Path::new(path)
            .strip_prefix(dir)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| path.to_string())
    };
    let started = Instant::now();
    let first = symbols.repo_map(&settings, &display);
    let map_first = started.elapsed();
    let mut walls = Vec::new();
    let mut replaced = 0;
    for file in files {
        symbols.refresh(std::slice::from_ref(file));
        let before = symbols.repo_map(&settings, &display);
        // Re-indexing a file moves the revision even when its text is the same.
        symbols.refresh(std::slice::from_ref(file));
        let started = Instant::now();
        let after = symbols.repo_map(&settings, &display);
        walls.push(started.elapsed());
        replaced += usize::from(after.text != before.text);
    }
    let (p50, p99) = spread(walls);
    (map_first, [p50, p99], replaced, first.tokens)
}

pub fn print(options: &IndexOptions, report: &IndexReport) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let s = &report.cold_status;
    println!(
        "symbol index of {} ({} threads)",
        report.dir.display(),
        options.threads
    );
    println!(
        "  cold build: {:.2} s wall, {:.2} s CPU: {} files indexed ({} parsed), {} skipped {:?}; {} definitions, {} references",
        report.cold.as_secs_f64(),
        report.cold_cpu.as_secs_f64(),
        s.files,
        s.parsed,
        s.skipped_total,
        s.skipped,
        s.definitions,
        report.references
    );
    println!(
        "  peak RSS growth {:.1} MB (VmHWM), RSS after {:.1} MB; persisted index {:.1} MB",
        report.peak_growth_kib as f64 / 1024.0,
        report.rss_after_kib as f64 / 1024.0,
        report.store_bytes as f64 / 1e6
    );
    let r = &report.restart_status;
    println!(
        "  restart with the persisted index: {:.0} ms wall, {:.0} ms CPU ({} reused, {} parsed, persisted: {:?})",
        ms(report.restart),
        ms(report.restart_cpu),
        r.reused,
        r.parsed,
        r.persisted
    );
    let [w50, w99, c50, c99] = report.refresh;
    println!(
        "  one file re-indexed ({} files): wall p50 {:.2} ms p99 {:.2} ms; CPU p50 {:.2} ms p99 {:.2} ms",
        report.refreshed,
        ms(w50),
        ms(w99),
        ms(c50),
        ms(c99)
    );
    for (what, [w50, w99, c50, c99]) in [
        ("definitions", report.lookup),
        ("with references", report.lookup_refs),
    ] {
        println!(
            "  find_symbol, {what} ({} names): wall p50 {:.3} ms p99 {:.3} ms; CPU p50 {:.3} ms p99 {:.3} ms",
            options.lookups,
            ms(w50),
            ms(w99),
            ms(c50),
            ms(c99)
        );
    }
    println!(
        "  repository map (budget {} tokens, {} used): first {:.0} ms (the unfocused ranking included); after a file re-indexed ({} files): p50 {:.1} ms p99 {:.1} ms, {} replaced the kept map",
        MAP_TOKENS,
        report.map_tokens,
        ms(report.map_first),
        report.refreshed,
        ms(report.map_after_edit[0]),
        ms(report.map_after_edit[1]),
        report.map_replaced
    );
}
