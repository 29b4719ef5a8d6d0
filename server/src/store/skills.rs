//! Skills on disk: each root's `.agents/skills/<name>/SKILL.md`, parsed by the core's
//! `skills::parse`.

use std::path::Path;

use super::untrusted_file::{read_config_file, ConfigRead, MAX_CONFIG_FILE_BYTES};
use agentls_core::paths;
use agentls_core::skills::{parse, Skill};

/// The skills of every workspace root, sorted by path. Unreadable files are skipped with a
/// log line: a broken skill must not break the prompt.
pub fn discover(roots: &[impl AsRef<Path>]) -> Vec<Skill> {
    let mut skills = Vec::new();
    // One root: paths relative to it, as the model passes them to read_file. Several roots:
    // absolute paths, since the same relative path may exist under each.
    let shown_against: &[_] = if roots.len() > 1 { &[] } else { roots };
    for root in roots {
        let root = root.as_ref();
        let Ok(dirs) = std::fs::read_dir(root.join(".agents").join("skills")) else {
            continue;
        };
        for dir in dirs.flatten() {
            let file = dir.path().join("SKILL.md");
            // Only a regular file inside the root: a committed link to /dev/stdin, a FIFO
            // or a file out of the tree must not wedge or leak into the prompt.
            let text = match read_config_file(&file, Some(root), MAX_CONFIG_FILE_BYTES) {
                ConfigRead::Text(text) => text,
                ConfigRead::Missing => continue,
                ConfigRead::Refused(why) => {
                    tracing::warn!("skipping the skill {}: {why}", file.display());
                    continue;
                }
            };
            let display = paths::display(&file, shown_against);
            skills.push(parse(&dir.file_name().to_string_lossy(), &display, &text));
        }
    }
    skills.sort_by(|a, b| a.path.cmp(&b.path));
    skills
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentls_core::skills::render;

    #[test]
    fn discovery_finds_skills_under_each_root_and_renders_one_line_each() {
        let root = tempfile::tempdir().unwrap();
        for (dir, text) in [
            ("b-skill", "---\nname: bee\ndescription: second\n---\n"),
            ("a-skill", "---\nname: ay\ndescription: first\n---\n"),
        ] {
            let d = root.path().join(".agents/skills").join(dir);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("SKILL.md"), text).unwrap();
        }
        std::fs::create_dir_all(root.path().join(".agents/skills/empty-dir")).unwrap();
        let skills = discover(&[root.path()]);
        let text = render(&skills, "## Skills");
        assert_eq!(
            text,
            "## Skills\n- ay: first (file: .agents/skills/a-skill/SKILL.md)\n\
             - bee: second (file: .agents/skills/b-skill/SKILL.md)"
        );
        assert_eq!(render(&[], "## Skills"), "");
        assert!(discover(&[root.path().join("nowhere")]).is_empty());
    }

    #[test]
    fn with_several_roots_skill_paths_are_absolute() {
        let roots = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        for root in &roots {
            let d = root.path().join(".agents/skills/same");
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("SKILL.md"), "---\nname: same\n---\n").unwrap();
        }
        let dirs: Vec<&Path> = roots.iter().map(|r| r.path()).collect();
        let mut expected: Vec<String> = dirs
            .iter()
            .map(|r| {
                r.join(".agents/skills/same/SKILL.md")
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        expected.sort();
        let found: Vec<String> = discover(&dirs).into_iter().map(|s| s.path).collect();
        assert_eq!(found, expected);
    }
}
