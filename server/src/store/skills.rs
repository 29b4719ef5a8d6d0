//! Skills on disk: each root's `.agents/skills/<name>/SKILL.md`, parsed by the core's
//! `skills::parse`.

use std::path::Path;

use agentls_core::skills::{parse, Skill};

/// The skills of every workspace root, sorted by path. Unreadable files are skipped with a
/// log line: a broken skill must not break the prompt.
pub fn discover(roots: &[impl AsRef<Path>]) -> Vec<Skill> {
    let mut skills = Vec::new();
    for root in roots {
        let root = root.as_ref();
        let Ok(dirs) = std::fs::read_dir(root.join(".agents").join("skills")) else {
            continue;
        };
        for dir in dirs.flatten() {
            let file = dir.path().join("SKILL.md");
            let Ok(text) = std::fs::read_to_string(&file) else {
                if file.exists() {
                    tracing::warn!("skipping unreadable skill {}", file.display());
                }
                continue;
            };
            let relative = file.strip_prefix(root).unwrap_or(&file);
            let display = if roots.len() > 1 {
                // Several roots: name the root so the path is unambiguous.
                file.to_string_lossy().into_owned()
            } else {
                relative.to_string_lossy().into_owned()
            };
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
}
