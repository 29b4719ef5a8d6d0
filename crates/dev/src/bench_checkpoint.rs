//! `agentls-dev bench checkpoint`: what checkpoints cost a turn. A turn takes two
//! snapshots of the workspace's files (the checkpoint before it, the files as it left them
//! after) and keeps them with a ref each; between them it changes a few files. Measured on
//! a copy of the repository the command runs in (the files git lists) and on a generated
//! workspace of `--files` files, each turn changing `--changed` of them; with the store's
//! growth per turn (`git count-objects`). The first snapshot of a workspace, which hashes
//! every file once, is reported apart.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agentls::store::checkpoints::CheckpointStore;

pub struct CheckpointOptions {
    pub turns: usize,
    pub files: usize,
    pub changed: usize,
    pub limits: agentls_core::checkpoints::CheckpointSettings,
}

pub struct Workload {
    pub name: String,
    pub files: usize,
    pub first: Duration,
    /// Per turn: both snapshots and their refs.
    pub turns: Vec<Duration>,
    /// Per turn: the CPU time (user + system) of the git processes (what the machine's
    /// other load does not inflate).
    pub cpu: Vec<Duration>,
    pub growth_per_turn: u64,
    /// The machine's 1-minute load average before and after the turns (`/proc/loadavg`):
    /// the wall times depend on it, the CPU times much less.
    pub load: (String, String),
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split(' ').next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

pub fn run(options: &CheckpointOptions) -> Result<Vec<Workload>, String> {
    let mut workloads = Vec::new();
    let here = std::env::current_dir().map_err(|e| e.to_string())?;
    let copy = tempdir("repo")?;
    let files = copy_repository(&here, &copy)?;
    workloads.push(measure(
        &format!("this repository ({})", here.display()),
        &copy,
        files,
        options,
    )?);
    let generated = tempdir("generated")?;
    generate(&generated, options.files)?;
    workloads.push(measure(
        "generated workspace",
        &generated,
        options.files,
        options,
    )?);
    let _ = std::fs::remove_dir_all(&copy);
    let _ = std::fs::remove_dir_all(&generated);
    Ok(workloads)
}

fn tempdir(name: &str) -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!(
        "agentls-bench-checkpoint-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    Ok(dir)
}

/// The files git lists in `from` (tracked and untracked, not ignored), copied to `to`.
fn copy_repository(from: &Path, to: &Path) -> Result<usize, String> {
    let listed = std::process::Command::new("git")
        .args(["ls-files", "-z", "-co", "--exclude-standard"])
        .current_dir(from)
        .output()
        .map_err(|e| e.to_string())?;
    if !listed.status.success() {
        return Err("run it in a git repository (git ls-files failed)".into());
    }
    let mut count = 0;
    for path in listed.stdout.split(|&b| b == 0).filter(|p| !p.is_empty()) {
        let relative = String::from_utf8_lossy(path).into_owned();
        let source = from.join(&relative);
        if !source.is_file() {
            continue;
        }
        let target = to.join(&relative);
        std::fs::create_dir_all(target.parent().expect("a file's parent"))
            .map_err(|e| e.to_string())?;
        std::fs::copy(&source, &target).map_err(|e| e.to_string())?;
        count += 1;
    }
    Ok(count)
}

/// `files` files of about 1 KB in directories of 100.
pub(crate) fn generate(root: &Path, files: usize) -> Result<(), String> {
    for n in 0..files {
        let dir = root.join(format!("dir{:03}", n / 100));
        if n % 100 == 0 {
            std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        }
        let text = format!(
            "// file {n}\n{}",
            "let value = compute(input);\n".repeat(36)
        );
        std::fs::write(dir.join(format!("file{n}.rs")), text).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The regular files under `root`, sorted (the ones a turn changes are picked from them).
fn some_files(root: &Path, wanted: usize) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.is_file() {
                found.push(path);
            }
        }
    }
    found.sort();
    let step = (found.len() / wanted.max(1)).max(1);
    found.into_iter().step_by(step).take(wanted * 4).collect()
}

fn measure(
    name: &str,
    root: &Path,
    files: usize,
    options: &CheckpointOptions,
) -> Result<Workload, String> {
    let state = tempdir(&format!("state-{}", name.len()))?;
    let store = CheckpointStore::at(&state);
    let roots = vec![root.to_path_buf()];
    let started = Instant::now();
    store.snapshot(&roots, options.limits)?;
    let first = started.elapsed();
    let size_before = store.size()?;
    let candidates = some_files(root, options.changed);
    let load_before = load_average();
    let mut turns = Vec::new();
    let mut cpu = Vec::new();
    for turn in 0..options.turns {
        let cpu_before = children_cpu();
        let started = Instant::now();
        let before = store.snapshot(&roots, options.limits)?;
        store.keep("bench", &format!("t{turn}"), &before.trees)?;
        let mut took = started.elapsed();
        for k in 0..options.changed {
            let path = &candidates[(turn * options.changed + k) % candidates.len()];
            let mut text = std::fs::read(path).map_err(|e| e.to_string())?;
            text.extend_from_slice(format!("// turn {turn}\n").as_bytes());
            std::fs::write(path, text).map_err(|e| e.to_string())?;
        }
        let started = Instant::now();
        let after = store.snapshot(&roots, options.limits)?;
        store.keep("bench", &format!("t{turn}-end"), &after.trees)?;
        took += started.elapsed();
        turns.push(took);
        // The edits between the snapshots are this process's own: not in the children's.
        cpu.push(children_cpu().saturating_sub(cpu_before));
    }
    let growth = store.size()?.saturating_sub(size_before) / options.turns.max(1) as u64;
    let _ = std::fs::remove_dir_all(&state);
    Ok(Workload {
        name: name.to_string(),
        files,
        first,
        turns,
        cpu,
        growth_per_turn: growth,
        load: (load_before, load_average()),
    })
}

/// The user + system CPU time of this process's ended children.
fn children_cpu() -> Duration {
    // SAFETY: a zeroed rusage is a valid value, and getrusage only writes into it.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

pub fn print(options: &CheckpointOptions, workloads: &[Workload]) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for workload in workloads {
        let mut sorted = workload.turns.clone();
        sorted.sort();
        println!(
            "{} — {} files, {} changed per turn, {} turns",
            workload.name, workload.files, options.changed, options.turns
        );
        println!(
            "  first snapshot (hashes every file once): {:.0} ms",
            ms(workload.first)
        );
        println!(
            "  per turn (checkpoint + end snapshot + refs): p50 {:.1} ms, p99 {:.1} ms",
            ms(crate::bench_stream::percentile(&sorted, 0.5)),
            ms(crate::bench_stream::percentile(&sorted, 0.99))
        );
        let mut cpu = workload.cpu.clone();
        cpu.sort();
        println!(
            "  CPU of the git processes per turn: p50 {:.1} ms, p99 {:.1} ms",
            ms(crate::bench_stream::percentile(&cpu, 0.5)),
            ms(crate::bench_stream::percentile(&cpu, 0.99))
        );
        println!(
            "  store growth per turn: {:.1} KiB",
            workload.growth_per_turn as f64 / 1024.0
        );
        println!(
            "  load average (1 min) before and after the turns: {} / {}",
            workload.load.0, workload.load.1
        );
    }
}
