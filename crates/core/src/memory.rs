//! Memory across sessions: facts kept in Markdown files the user can read and edit, one per
//! scope (the user's, every workspace; the workspace's, under agentls's state, never in the
//! repository), and the block of them each new request carries in its system message.
//!
//! An entry is one list item: `- [model 2026-11-28] fact` (the model kept it with
//! `save_memory`), `- [user 2026-11-28] fact` (the user did), or any other `- fact` line the
//! user wrote by hand (the user's). Lines that are not list items (headings, notes) are the
//! user's to keep and are not entries. The block says who wrote each entry: what the model
//! wrote is its own note from an earlier session, not the user's instruction. Pure: the
//! server reads and writes the files.

use crate::tokens::{CountCache, TokenizerKind};

/// Where an entry is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every session of this user, in every workspace.
    User,
    /// The sessions of one workspace.
    Workspace,
}

impl Scope {
    pub const ALL: [Scope; 2] = [Scope::User, Scope::Workspace];

    pub fn name(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Workspace => "workspace",
        }
    }

    pub fn from_name(name: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|scope| scope.name() == name)
    }
}

/// Who wrote an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Author {
    User,
    Model,
}

impl Author {
    pub fn name(self) -> &'static str {
        match self {
            Author::User => "user",
            Author::Model => "model",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub author: Author,
    /// `YYYY-MM-DD`, or empty for a line the user wrote without one.
    pub date: String,
    pub text: String,
}

impl Entry {
    /// The entry's line in its file.
    pub fn line(&self) -> String {
        if self.date.is_empty() && self.author == Author::User {
            return format!("- {}", self.text);
        }
        format!("- [{} {}] {}", self.author.name(), self.date, self.text)
    }
}

/// The longest fact kept, in characters: a memory holds facts, not documents.
pub const MAX_FACT_CHARS: usize = 500;

/// A fact as it is kept: on one line, trimmed; Err says why it cannot be.
pub fn check_fact(fact: &str) -> Result<String, String> {
    let one_line = fact.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.is_empty() {
        return Err("the fact is empty: give the fact to remember".into());
    }
    let chars = one_line.chars().count();
    if chars > MAX_FACT_CHARS {
        return Err(format!(
            "the fact has {chars} characters, more than {MAX_FACT_CHARS}: keep one short fact (a preference, a convention, a command that works)"
        ));
    }
    Ok(one_line)
}

/// The entries of a memory file, in its order.
pub fn parse(text: &str) -> Vec<Entry> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Entry> {
    let item = line
        .strip_prefix("- ")
        .or_else(|| line.strip_prefix("* "))?
        .trim();
    if item.is_empty() {
        return None;
    }
    let labelled = item.strip_prefix('[').and_then(|rest| {
        let (label, text) = rest.split_once(']')?;
        let (who, date) = label.split_once(' ').unwrap_or((label, ""));
        let author = match who {
            "model" => Author::Model,
            "user" => Author::User,
            _ => return None,
        };
        Some(Entry {
            author,
            date: date.trim().to_string(),
            text: text.trim().to_string(),
        })
    });
    Some(labelled.unwrap_or_else(|| Entry {
        author: Author::User,
        date: String::new(),
        text: item.to_string(),
    }))
}

/// A memory file's text with `entry` added at its end (a new file gets a heading); None
/// when the same fact is kept already.
pub fn with_entry(text: &str, scope: Scope, entry: &Entry) -> Option<String> {
    if parse(text).iter().any(|kept| kept.text == entry.text) {
        return None;
    }
    let mut next = if text.trim().is_empty() {
        format!(
            "# agentls memory ({})\n\nOne fact per line. Edit or delete lines freely.\n\n",
            scope.name()
        )
    } else {
        text.to_string()
    };
    if !next.ends_with('\n') {
        next.push('\n');
    }
    next.push_str(&entry.line());
    next.push('\n');
    Some(next)
}

/// A memory file's text without its `index`th entry (0-based, in `parse`'s order): the other
/// lines stay as they were. None when there is no such entry.
pub fn without_entry(text: &str, index: usize) -> Option<String> {
    let mut seen = 0;
    let mut removed = false;
    let mut kept = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        if parse_line(line.trim_end_matches(['\n', '\r'])).is_some() {
            seen += 1;
            if seen - 1 == index {
                removed = true;
                continue;
            }
        }
        kept.push_str(line);
    }
    removed.then_some(kept)
}

/// The memory block of the system message: `heading`, then each scope's entries labelled
/// with their author, within `max_tokens`. When not all fit, the newest are kept (the end of
/// each file) and a line says how many older ones were left out. Empty when there is no
/// entry or no room.
pub fn render(
    heading: &str,
    scopes: &[(Scope, Vec<Entry>)],
    max_tokens: usize,
    tokenizer: TokenizerKind,
    cache: &mut CountCache,
) -> String {
    let total: usize = scopes.iter().map(|(_, entries)| entries.len()).sum();
    if total == 0 || max_tokens == 0 {
        return String::new();
    }
    // Drop the oldest entries, the workspace's last (they are the most specific), until
    // the block fits.
    let mut skip: Vec<usize> = vec![0; scopes.len()];
    loop {
        let text = render_kept(heading, scopes, &skip);
        if cache.count(tokenizer, &text) <= max_tokens {
            return text;
        }
        let Some(scope) = (0..scopes.len()).find(|&i| skip[i] < scopes[i].1.len()) else {
            return String::new();
        };
        skip[scope] += 1;
    }
}

fn render_kept(heading: &str, scopes: &[(Scope, Vec<Entry>)], skip: &[usize]) -> String {
    let mut text = format!("{}\n<memory>\n", heading.trim_end());
    for ((scope, entries), &skipped) in scopes.iter().zip(skip) {
        if entries.is_empty() {
            continue;
        }
        text.push_str(&format!("<{}>\n", scope.name()));
        if skipped > 0 {
            text.push_str(&format!(
                "({skipped} older entr{} not shown: over memory.maxTokens)\n",
                if skipped == 1 { "y" } else { "ies" }
            ));
        }
        for entry in &entries[skipped..] {
            text.push_str(&format!("- ({}) {}\n", entry.author.name(), entry.text));
        }
        text.push_str(&format!("</{}>\n", scope.name()));
    }
    text.push_str("</memory>");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# agentls memory (user)\n\nNotes of mine.\n\n- [model 2026-11-27] Tests run with `make check`.\n- Prefer tabs.\n* [user 2026-11-28] Answer in French.\n-not an item\n";

    #[test]
    fn entries_are_the_list_items_with_their_author_and_the_rest_is_kept() {
        let entries = parse(FILE);
        let shown: Vec<(Author, &str, &str)> = entries
            .iter()
            .map(|e| (e.author, e.date.as_str(), e.text.as_str()))
            .collect();
        assert_eq!(
            shown,
            [
                (Author::Model, "2026-11-27", "Tests run with `make check`."),
                (Author::User, "", "Prefer tabs."),
                (Author::User, "2026-11-28", "Answer in French."),
            ]
        );
        let without = without_entry(FILE, 1).unwrap();
        assert!(!without.contains("Prefer tabs"));
        assert!(without.contains("Notes of mine.") && without.contains("-not an item"));
        assert_eq!(parse(&without).len(), 2);
        assert_eq!(without_entry(FILE, 3), None);
    }

    #[test]
    fn a_fact_is_one_short_line_kept_once() {
        assert_eq!(
            check_fact("  use\n `cargo nextest`  "),
            Ok("use `cargo nextest`".into())
        );
        assert!(check_fact(" \n ").is_err());
        assert!(check_fact(&"x".repeat(MAX_FACT_CHARS + 1)).is_err());
        let entry = Entry {
            author: Author::Model,
            date: "2026-11-28".into(),
            text: "Prefer tabs.".into(),
        };
        assert_eq!(with_entry(FILE, Scope::User, &entry), None, "kept already");
        let new = with_entry("", Scope::Workspace, &entry).unwrap();
        assert!(new.starts_with("# agentls memory (workspace)\n"));
        assert!(new.ends_with("- [model 2026-11-28] Prefer tabs.\n"));
        assert_eq!(parse(&new), [entry]);
    }

    #[test]
    fn the_block_labels_the_author_and_keeps_the_newest_within_its_budget() {
        let tok = TokenizerKind::O200kBase;
        let mut cache = CountCache::default();
        let scopes = [
            (Scope::User, parse(FILE)),
            (
                Scope::Workspace,
                vec![Entry {
                    author: Author::Model,
                    date: String::new(),
                    text: "The API lives in api/.".into(),
                }],
            ),
        ];
        let block = render("## Memory", &scopes, 2_000, tok, &mut cache);
        assert_eq!(
            block,
            "## Memory\n<memory>\n<user>\n- (model) Tests run with `make check`.\n- (user) Prefer tabs.\n- (user) Answer in French.\n</user>\n<workspace>\n- (model) The API lives in api/.\n</workspace>\n</memory>"
        );
        let full = cache.count(tok, &block);
        let cut = render("## Memory", &scopes, full - 5, tok, &mut cache);
        assert!(cut.contains("older entries not shown"), "{cut}");
        assert!(!cut.contains("make check") && cut.contains("Answer in French"));
        assert!(
            cut.contains("The API lives in api/."),
            "the workspace's are dropped last"
        );
        assert!(cache.count(tok, &cut) <= full - 5);
        assert_eq!(render("## Memory", &scopes, 3, tok, &mut cache), "");
        assert_eq!(render("## Memory", &[], 2_000, tok, &mut cache), "");
    }
}
