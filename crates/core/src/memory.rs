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

/// The memory block and the entries it left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rendered {
    /// The block of the system message; empty when there is no entry or no room.
    pub text: String,
    /// The entries over the budget, oldest first within each scope: [`recall`] brings back
    /// the ones a message names.
    pub left_out: Vec<(Scope, Entry)>,
}

/// The memory block of the system message: `heading`, then each scope's entries labelled
/// with their author, within `max_tokens`. When not all fit, the newest are kept (the end of
/// each file) and a line says how many older ones were left out.
pub fn render(
    heading: &str,
    scopes: &[(Scope, Vec<Entry>)],
    max_tokens: usize,
    tokenizer: TokenizerKind,
    cache: &mut CountCache,
) -> Rendered {
    let total: usize = scopes.iter().map(|(_, entries)| entries.len()).sum();
    if total == 0 {
        return Rendered::default();
    }
    // Drop the oldest entries, the workspace's last (they are the most specific), until
    // the block fits.
    let mut skip: Vec<usize> = vec![0; scopes.len()];
    let text = loop {
        let text = render_kept(heading, scopes, &skip);
        if max_tokens > 0 && cache.count(tokenizer, &text) <= max_tokens {
            break text;
        }
        let Some(scope) = (0..scopes.len()).find(|&i| skip[i] < scopes[i].1.len()) else {
            break String::new();
        };
        skip[scope] += 1;
    };
    let left_out = scopes
        .iter()
        .zip(&skip)
        .flat_map(|((scope, entries), &skipped)| {
            entries[..skipped]
                .iter()
                .map(|entry| (*scope, entry.clone()))
        })
        .collect();
    Rendered { text, left_out }
}

/// The entries left out of the memory block that share the most telling words with
/// `message` (what the user just wrote), at most `limit`, best first: just-in-time
/// retrieval, so a memory larger than its budget still answers when a message names what an
/// old entry is about. A word counts more the fewer entries hold it; short and common words
/// do not count.
pub fn recall<'a>(
    left_out: &'a [(Scope, Entry)],
    message: &str,
    limit: usize,
) -> Vec<&'a (Scope, Entry)> {
    let asked = words(message);
    if asked.is_empty() || left_out.is_empty() {
        return Vec::new();
    }
    let entry_words: Vec<std::collections::BTreeSet<String>> = left_out
        .iter()
        .map(|(_, entry)| words(&entry.text))
        .collect();
    let n = left_out.len() as f64;
    let weight = |word: &String| {
        let holding = entry_words.iter().filter(|w| w.contains(word)).count() as f64;
        (1.0 + n / holding).ln()
    };
    let mut scored: Vec<(f64, usize)> = entry_words
        .iter()
        .enumerate()
        .filter_map(|(i, held)| {
            let score: f64 = held.intersection(&asked).map(weight).sum();
            (score > 0.0).then_some((score, i))
        })
        .collect();
    // Best first; among equals the newest (later in the file).
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
    scored
        .into_iter()
        .take(limit)
        .map(|(_, i)| &left_out[i])
        .collect()
}

/// A fact of a session that could be kept in memory: what the user set as a rule, or a
/// check command that worked. Offered to the user, never kept by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    pub text: String,
    /// `constraint` (the user's own sentence) or `command` (a check that exited 0).
    pub source: &'static str,
}

/// Offers shown at most: a list to pick from, not the session again.
const MAX_OFFERS: usize = 12;

/// Words that make a command a check worth remembering (`cargo test`, `npm run lint`).
const CHECK_WORDS: &[&str] = &[
    "test",
    "tests",
    "check",
    "build",
    "lint",
    "fmt",
    "format",
    "clippy",
    "pytest",
    "tox",
    "mypy",
    "ruff",
    "eslint",
    "tsc",
    "typecheck",
    "vet",
];

/// The ledger's durable facts not kept already: the user's rules (newest first), then the
/// check commands that worked (exit 0; each once, newest first).
pub fn offers(ledger: &crate::ledger::Ledger, kept: &[(Scope, Vec<Entry>)]) -> Vec<Offer> {
    let kept_texts: Vec<&str> = kept
        .iter()
        .flat_map(|(_, entries)| entries.iter().map(|e| e.text.as_str()))
        .collect();
    let known = |fact: &str| kept_texts.iter().any(|kept| kept.contains(fact));
    let mut offers: Vec<Offer> = Vec::new();
    for constraint in ledger.constraints.iter().rev() {
        let Ok(fact) = check_fact(constraint) else {
            continue;
        };
        if !known(&fact) && !offers.iter().any(|o| o.text == fact) {
            offers.push(Offer {
                text: fact,
                source: "constraint",
            });
        }
    }
    let mut commands: Vec<&str> = Vec::new();
    for run in ledger.commands.iter().rev() {
        let command = run.command.trim();
        let is_check = command
            .split(|c: char| c.is_whitespace() || c == ':' || c == '-')
            .any(|word| CHECK_WORDS.contains(&word));
        let fresh = !commands.contains(&command) && !known(command);
        if run.outcome == "exit 0" && is_check && !command.contains('\n') && fresh {
            commands.push(command);
        }
    }
    for command in commands {
        if let Ok(text) = check_fact(&format!("`{command}` works (it exited 0)")) {
            offers.push(Offer {
                text,
                source: "command",
            });
        }
    }
    offers.truncate(MAX_OFFERS);
    offers
}

/// Words too common to tell entries apart.
const COMMON_WORDS: &[&str] = &[
    "about", "after", "all", "also", "and", "any", "are", "before", "but", "can", "could", "did",
    "does", "each", "for", "from", "had", "has", "have", "here", "how", "into", "its", "just",
    "like", "more", "not", "one", "only", "our", "should", "some", "than", "that", "the", "them",
    "then", "there", "they", "this", "use", "was", "were", "what", "when", "which", "who", "why",
    "will", "with", "would", "you", "your",
];

/// The telling words of a text: lowercase runs of letters, digits and `_` of at least
/// three characters, common words out, a plural's `s` off (so `tests` meets `test`).
fn words(text: &str) -> std::collections::BTreeSet<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() >= 3 && !COMMON_WORDS.contains(&w.as_str()))
        .map(|w| match w.strip_suffix('s') {
            Some(stem) if stem.chars().count() >= 3 && !stem.ends_with('s') => stem.to_string(),
            _ => w,
        })
        .collect()
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
                "({skipped} older entr{} not shown)\n",
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
        let rendered = render("## Memory", &scopes, 2_000, tok, &mut cache);
        assert!(rendered.left_out.is_empty());
        let block = rendered.text;
        assert_eq!(
            block,
            "## Memory\n<memory>\n<user>\n- (model) Tests run with `make check`.\n- (user) Prefer tabs.\n- (user) Answer in French.\n</user>\n<workspace>\n- (model) The API lives in api/.\n</workspace>\n</memory>"
        );
        let full = cache.count(tok, &block);
        let one_less = cache.count(tok, &render_kept("## Memory", &scopes, &[1, 0]));
        assert!(one_less < full);
        let rendered = render("## Memory", &scopes, one_less, tok, &mut cache);
        assert_eq!(
            rendered.left_out,
            [(Scope::User, parse(FILE)[0].clone())],
            "the oldest of the user's"
        );
        let cut = rendered.text;
        assert!(cut.contains("(1 older entry not shown)"), "{cut}");
        assert!(!cut.contains("make check") && cut.contains("Answer in French"));
        assert!(
            cut.contains("The API lives in api/."),
            "the workspace's are dropped last"
        );
        assert!(cache.count(tok, &cut) <= one_less);
        let none = render("## Memory", &scopes, 3, tok, &mut cache);
        assert_eq!(none.text, "");
        assert_eq!(none.left_out.len(), 4, "all of them left out");
        assert_eq!(
            render("## Memory", &[], 2_000, tok, &mut cache),
            Rendered::default()
        );
    }

    fn model(text: &str) -> (Scope, Entry) {
        (
            Scope::Workspace,
            Entry {
                author: Author::Model,
                date: "2026-11-28".into(),
                text: text.into(),
            },
        )
    }

    #[test]
    fn recall_brings_the_entries_a_message_names_rarest_words_first() {
        let left_out = [
            model("The integration tests need `docker compose up db` first."),
            model("Release notes go in CHANGELOG.md under Unreleased."),
            model("Run the tests with `make check`, not pytest directly."),
            model("The billing service talks to Stripe through api/billing.py."),
        ];
        let texts = |found: Vec<&(Scope, Entry)>| -> Vec<String> {
            found.iter().map(|(_, e)| e.text.clone()).collect()
        };
        // `tests` meets `test`; `integration` is held by one entry only, so it wins.
        assert_eq!(
            texts(recall(&left_out, "Why does the integration test fail?", 3)),
            [left_out[0].1.text.clone(), left_out[2].1.text.clone()]
        );
        assert_eq!(
            texts(recall(&left_out, "fix the billing webhook", 3)),
            [left_out[3].1.text.clone()]
        );
        assert_eq!(
            recall(&left_out, "what is this and why?", 3),
            Vec::<&(Scope, Entry)>::new(),
            "common words recall nothing"
        );
        assert_eq!(recall(&left_out, "tests", 1).len(), 1, "at most the limit");
        assert!(recall(&[], "tests", 3).is_empty());
    }

    #[test]
    fn offers_are_the_users_rules_and_the_checks_that_worked_not_kept_yet() {
        use crate::ledger::{CommandRun, Ledger};
        let run = |command: &str, outcome: &str| CommandRun {
            command: command.into(),
            outcome: outcome.into(),
        };
        let mut ledger = Ledger::default();
        ledger.constraints = vec![
            "Never push to main.".into(),
            "Always answer in French.".into(),
        ];
        ledger.commands = vec![
            run("cargo test -p core", "exit 101"),
            run("ls src", "exit 0"),
            run("cargo test -p core", "exit 0"),
            run("npm run lint:fix", "exit 0"),
            run("cargo test -p core", "exit 0"),
            run("make check", "exit 0"),
        ];
        let kept = [(
            Scope::Workspace,
            vec![Entry {
                author: Author::User,
                date: String::new(),
                text: "Run `make check` before a commit.".into(),
            }],
        )];
        let offered = offers(&ledger, &kept);
        let offered: Vec<(&str, &str)> = offered
            .iter()
            .map(|o| (o.source, o.text.as_str()))
            .collect();
        assert_eq!(
            offered,
            [
                ("constraint", "Always answer in French."),
                ("constraint", "Never push to main."),
                ("command", "`cargo test -p core` works (it exited 0)"),
                ("command", "`npm run lint:fix` works (it exited 0)"),
            ]
        );
    }
}
