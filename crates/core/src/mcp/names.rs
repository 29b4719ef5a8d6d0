//! The names the model sees for MCP tools: `mcp__SERVER__TOOL`, made of what every provider
//! accepts (at most 64 characters of `[a-zA-Z0-9_-]`), unique across all servers, and
//! stable: the same servers and tools always give the same names in the same order, so the
//! provider's cached prompt prefix changes only when the tool set does.

/// The longest tool name OpenAI and Anthropic accept.
pub const MAX_NAME: usize = 64;
/// What every MCP tool's (and prompt's) model-facing name starts with.
pub const PREFIX: &str = "mcp__";

/// `text` with every character outside `[a-zA-Z0-9_-]` replaced by `_`.
pub fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// One tool (or prompt) to name: its server and its name on that server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub server: String,
    pub tool: String,
    /// The model-facing name.
    pub name: String,
}

/// Names for `tools` (server, tool) pairs, in the stable order (server name, then tool name),
/// with collisions (two names that sanitise or truncate alike) resolved by a suffix derived
/// from the original names. Returns the names and one message per collision resolved.
pub fn assign(tools: &[(String, String)]) -> (Vec<Named>, Vec<String>) {
    let mut sorted: Vec<&(String, String)> = tools.iter().collect();
    sorted.sort();
    sorted.dedup();
    let mut out: Vec<Named> = Vec::with_capacity(sorted.len());
    let mut notes = Vec::new();
    for (server, tool) in sorted {
        let base = fit(
            &format!("{PREFIX}{}__{}", sanitize(server), sanitize(tool)),
            None,
        );
        let mut name = base.clone();
        let mut attempt = 0u32;
        while out.iter().any(|n| n.name == name) {
            attempt += 1;
            let suffix = format!("_{:06x}", hash(&format!("{server}\0{tool}\0{attempt}")));
            name = fit(&base, Some(&suffix));
        }
        if name != base {
            notes.push(format!(
                "{tool:?} of MCP server {server:?} is named {name} (\
                 {base} was taken)"
            ));
        }
        out.push(Named {
            server: server.clone(),
            tool: tool.clone(),
            name,
        });
    }
    (out, notes)
}

/// `name` cut to fit `MAX_NAME` with `suffix` appended. A name too long on its own gets a
/// hash of the whole as its suffix, so two long names sharing a prefix stay apart.
fn fit(name: &str, suffix: Option<&str>) -> String {
    let long_suffix;
    let suffix = match suffix {
        Some(s) => s,
        None if name.len() > MAX_NAME => {
            long_suffix = format!("_{:06x}", hash(name));
            &long_suffix
        }
        None => return name.to_string(),
    };
    // ASCII only after sanitising, so byte cuts are character cuts.
    let keep = MAX_NAME.saturating_sub(suffix.len()).min(name.len());
    format!("{}{suffix}", &name[..keep])
}

/// FNV-1a, 24 bits: a short, deterministic tag (no randomness, same on every run).
fn hash(text: &str) -> u32 {
    let mut h: u32 = 0x811c9dc5;
    for b in text.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x01000193);
    }
    h & 0xff_ffff
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(s, t)| (s.to_string(), t.to_string()))
            .collect()
    }

    #[test]
    fn names_are_prefixed_sanitised_sorted_and_unique() {
        let (named, notes) = assign(&pairs(&[
            ("time", "get_current_time"),
            ("every thing", "echo"),
            ("every.thing", "echo"),
            ("time", "convert.time"),
        ]));
        let names: Vec<_> = named.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names[0], "mcp__every_thing__echo");
        assert!(names[1].starts_with("mcp__every_thing__echo_"), "{names:?}");
        assert_eq!(names[2], "mcp__time__convert_time");
        assert_eq!(names[3], "mcp__time__get_current_time");
        assert_eq!(notes.len(), 1);
        assert_eq!(named[1].server, "every.thing");
        // Stable: the same input in another order gives the same names.
        let (again, _) = assign(&pairs(&[
            ("time", "convert.time"),
            ("every.thing", "echo"),
            ("time", "get_current_time"),
            ("every thing", "echo"),
        ]));
        assert_eq!(again, named);
    }

    #[test]
    fn long_names_fit_in_64_characters_and_stay_apart() {
        let long = "a".repeat(80);
        let (named, _) = assign(&pairs(&[
            ("srv", &format!("{long}1")),
            ("srv", &format!("{long}2")),
        ]));
        assert!(named.iter().all(|n| n.name.len() <= MAX_NAME), "{named:?}");
        assert_ne!(named[0].name, named[1].name);
        assert!(named.iter().all(|n| n
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')));
    }
}
