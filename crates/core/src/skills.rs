//! The skills index: each `.agents/skills/<name>/SKILL.md` of the workspace, by name and
//! description only. The model reads a skill's file itself (read_file) when a task matches,
//! so skills cost a line each in the prompt, not their whole text.

use crate::front_matter::FrontMatter;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// As the model passes it to read_file: relative to the workspace root when there is one
    /// root, absolute when there are several (see `store::skills::discover`).
    pub path: String,
}

/// Skills index entries are one line each; a description longer than this is cut.
const MAX_DESCRIPTION_CHARS: usize = 300;

/// Name and description from a SKILL.md: its YAML front matter (`name:`, `description:`,
/// plain, quoted or folded `>`/`|` scalars), falling back to the directory name and the
/// first paragraph line.
pub fn parse(dir_name: &str, path: &str, text: &str) -> Skill {
    let front = FrontMatter::parse(text);
    let name = front.get("name");
    let description = front.get("description");
    let body = front.body;
    let description = description.unwrap_or_else(|| {
        body.lines()
            .map(|l| l.trim().trim_start_matches('#').trim())
            .find(|l| !l.is_empty())
            .unwrap_or("")
            .to_string()
    });
    Skill {
        name: name.unwrap_or_else(|| dir_name.to_string()),
        description: one_line(&description),
        path: path.to_string(),
    }
}

fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= MAX_DESCRIPTION_CHARS {
        return joined;
    }
    let cut: String = joined.chars().take(MAX_DESCRIPTION_CHARS).collect();
    format!("{cut}…")
}

/// The index as the model sees it: the header prompt, then one line per skill. Empty when
/// there are no skills.
pub fn render(skills: &[Skill], header: &str) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut out = header.trim_end().to_string();
    out.push('\n');
    for skill in skills {
        out.push_str(&format!(
            "- {}: {} (file: {})\n",
            skill.name, skill.description, skill.path
        ));
    }
    out.truncate(out.trim_end().len());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_gives_name_and_description() {
        let skill = parse(
            "release",
            ".agents/skills/release/SKILL.md",
            "---\nname: cut-release\ndescription: \"Tag and publish a release\"\n---\n# Body\n",
        );
        assert_eq!(skill.name, "cut-release");
        assert_eq!(skill.description, "Tag and publish a release");
        let folded = parse(
            "x",
            "p",
            "---\ndescription: >\n  Spans\n  two lines\nname: folded\n---\n",
        );
        assert_eq!(folded.name, "folded");
        assert_eq!(folded.description, "Spans two lines");
    }

    #[test]
    fn without_front_matter_the_directory_and_first_line_are_used() {
        let skill = parse("db-migrate", "p", "\n# Migrate the database\n\nSteps…");
        assert_eq!(skill.name, "db-migrate");
        assert_eq!(skill.description, "Migrate the database");
        let long = parse("l", "p", &"word ".repeat(200));
        assert!(long.description.chars().count() <= MAX_DESCRIPTION_CHARS + 1);
        assert!(long.description.ends_with('…'));
    }
}
