//! The commit the binary is built from, for `agentls --version`: `AGENTLS_COMMIT` when the
//! builder sets it (a package built outside a checkout), else the checkout's HEAD, else
//! none (a source tarball). Only HEAD and the ref it names are watched, so a build reruns
//! this when the commit moves and at no other time.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=AGENTLS_COMMIT");
    let commit = std::env::var("AGENTLS_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(checkout_head);
    let version = env!("CARGO_PKG_VERSION");
    let line = match commit {
        Some(commit) => format!("{version} ({})", commit.trim()),
        None => version.to_string(),
    };
    println!("cargo:rustc-env=AGENTLS_VERSION={line}");
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

fn checkout_head() -> Option<String> {
    let head = git(&["rev-parse", "--short=12", "HEAD"])?;
    // Watched files must exist: a missing one would rerun this (and rebuild) every time.
    let watch = |path: &Path| {
        if path.is_file() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    };
    if let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        watch(&Path::new(&git_dir).join("HEAD"));
    }
    if let (Some(common), Some(reference)) = (
        git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]),
        git(&["symbolic-ref", "-q", "HEAD"]),
    ) {
        watch(&Path::new(&common).join(reference));
        watch(&Path::new(&common).join("packed-refs"));
    }
    Some(head)
}
