//! Prompt overrides on disk: the built-in prompts (`agentls_core::prompts`) with the user's
//! files from `prompts.dir` taking their place.

use std::path::{Path, PathBuf};

use super::untrusted_file::{read_config_file, ConfigRead, MAX_CONFIG_FILE_BYTES};
use agentls_core::prompts::Prompts;

/// The built-in prompts with every file present in `dir` taking the place of its
/// built-in, and the file of `compaction.promptFile` (`compact_file`) as the compaction
/// prompt of every style. Problems (an unreadable file, an invalid JSON file) keep the
/// built-in and are returned for the caller to show.
pub fn load(dir: Option<&Path>, compact_file: Option<&Path>) -> (Prompts, Vec<String>) {
    let mut problems = Vec::new();
    let (prompts, mut more) = Prompts::from_sources(|name| {
        let dir = dir?;
        let path = dir.join(name);
        // Only a regular file inside the override folder.
        match read_config_file(&path, Some(dir), MAX_CONFIG_FILE_BYTES) {
            ConfigRead::Text(text) => Some(text),
            ConfigRead::Missing => None,
            ConfigRead::Refused(why) => {
                problems.push(format!("cannot read prompt {}: {why}", path.display()));
                None
            }
        }
    });
    problems.append(&mut more);
    // The file the user named, wherever it is; still a regular file, never /proc, /dev, /sys.
    let compact =
        compact_file.map(|path| (path, read_config_file(path, None, MAX_CONFIG_FILE_BYTES)));
    let prompts = match compact {
        None => prompts,
        Some((_, ConfigRead::Text(text))) => prompts.with_compact_custom(&text),
        Some((path, ConfigRead::Missing)) => {
            problems.push(format!(
                "cannot read compaction.promptFile {}: it does not exist; using the built-in compaction prompts",
                path.display()
            ));
            prompts
        }
        Some((path, ConfigRead::Refused(why))) => {
            problems.push(format!(
                "cannot read compaction.promptFile {}: {why}; using the built-in compaction prompts",
                path.display()
            ));
            prompts
        }
    };
    (prompts, problems)
}

/// Where the user's prompt overrides live: `prompts.dir` when configured, else
/// `$XDG_CONFIG_HOME/agentls/prompts` (`~/.config/agentls/prompts`).
pub fn override_dir(configured: Option<&Path>) -> Option<PathBuf> {
    if let Some(dir) = configured {
        return Some(dir.to_path_buf());
    }
    super::user_config::path("prompts")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_in_the_override_dir_replaces_its_builtin_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("system.md"), "You are a test.\n").unwrap();
        std::fs::write(dir.path().join("tools.json"), "{not json").unwrap();
        let (prompts, problems) = load(Some(dir.path()), None);
        assert_eq!(prompts.system, "You are a test.");
        assert_eq!(prompts.data_boundary, Prompts::builtin().data_boundary);
        assert_eq!(prompts.tools, Prompts::builtin().tools);
        assert_eq!(problems.len(), 1);
        assert!(problems[0].contains("tools.json"), "{problems:?}");
        // A missing directory is not a problem.
        let (prompts, problems) = load(Some(&dir.path().join("absent")), None);
        assert_eq!(prompts, Prompts::builtin());
        assert!(problems.is_empty());
    }

    #[test]
    fn the_compaction_prompt_file_goes_through_the_same_loader() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("compact.md");
        std::fs::write(&file, "Summarize the session.\n").unwrap();
        let (prompts, problems) = load(None, Some(&file));
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            prompts.compact_custom.as_deref(),
            Some("Summarize the session.")
        );
        // An unreadable file keeps the built-in prompts and is reported.
        let (prompts, problems) = load(None, Some(&dir.path().join("absent.md")));
        assert_eq!(prompts, Prompts::builtin());
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].starts_with("cannot read compaction.promptFile"),
            "{problems:?}"
        );
    }
}
