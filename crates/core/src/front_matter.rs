//! The front matter of a markdown file (commands, subagents, skills): the `---` block of
//! `key: value` lines at its top, and the body after it. Only the YAML those files use:
//! plain, quoted and folded (`>`/`|`) scalars and lists (`[a, b]` or `- a` lines).

/// A file's front matter fields, in order, and its body.
pub struct FrontMatter<'a> {
    pub fields: Vec<(String, String)>,
    pub body: &'a str,
}

impl<'a> FrontMatter<'a> {
    /// Values are plain, quoted, folded (`>`/`|`) or lists (`[a, b]`, or `- a` lines, joined
    /// with `, `). A text without a closed front matter block is all body.
    pub fn parse(text: &'a str) -> FrontMatter<'a> {
        let Some(rest) = text
            .strip_prefix("---\n")
            .or_else(|| text.strip_prefix("---\r\n"))
        else {
            return FrontMatter {
                fields: Vec::new(),
                body: text,
            };
        };
        let (front, body) = if let Some(body) = rest
            .strip_prefix("---\n")
            .or_else(|| rest.strip_prefix("---\r\n"))
        {
            ("", body)
        } else {
            match rest.find("\n---") {
                Some(end) => {
                    let after = &rest[end + 4..];
                    let body = after
                        .strip_prefix("\r\n")
                        .or_else(|| after.strip_prefix('\n'))
                        .unwrap_or(after);
                    (&rest[..end], body)
                }
                None => {
                    return FrontMatter {
                        fields: Vec::new(),
                        body: text,
                    }
                }
            }
        };
        let lines: Vec<&str> = front.lines().collect();
        let mut fields = Vec::new();
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i];
            i += 1;
            if line.starts_with([' ', '\t', '#']) {
                continue;
            }
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let mut value = value.trim().to_string();
            if matches!(value.as_str(), ">" | "|" | ">-" | "|-" | "") {
                let mut parts = Vec::new();
                let mut items = Vec::new();
                while i < lines.len() && (lines[i].starts_with([' ', '\t']) || lines[i].is_empty())
                {
                    let part = lines[i].trim();
                    match part.strip_prefix("- ") {
                        Some(item) if value.is_empty() => items.push(unquote(item)),
                        _ if !part.is_empty() => parts.push(part),
                        _ => {}
                    }
                    i += 1;
                }
                value = if items.is_empty() {
                    parts.join(" ")
                } else {
                    items.join(", ")
                };
            } else if let Some(list) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
                value = list
                    .split(',')
                    .map(unquote)
                    .filter(|item| !item.is_empty())
                    .collect::<Vec<_>>()
                    .join(", ");
            }
            fields.push((key.trim().to_string(), unquote(&value)));
        }
        FrontMatter { fields, body }
    }

    /// The value of `key`, trimmed; None when absent or empty.
    pub fn get(&self, key: &str) -> Option<String> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.trim().to_string())
            .filter(|v| !v.is_empty())
    }

    /// `description`, else the body's first non-empty line (a heading's `#` dropped, at most
    /// 120 characters): what a command or subagent is listed with.
    pub fn description(&self) -> String {
        self.get("description").unwrap_or_else(|| {
            self.body
                .lines()
                .map(|l| l.trim().trim_start_matches('#').trim())
                .find(|l| !l.is_empty())
                .unwrap_or("")
                .chars()
                .take(120)
                .collect()
        })
    }
}

fn unquote(value: &str) -> String {
    let v = value.trim();
    for quote in ['"', '\''] {
        if v.len() >= 2 && v.starts_with(quote) && v.ends_with(quote) {
            return v[1..v.len() - 1].to_string();
        }
    }
    v.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_body_and_files_without_front_matter() {
        let front = FrontMatter::parse(
            "---\nname: 'review'\ndescription: >\n  Reads the diff\n  and comments\ntools: [grep, read_file]\nempty:\n---\nThe body.\n",
        );
        assert_eq!(front.get("name").as_deref(), Some("review"));
        assert_eq!(
            front.get("description").as_deref(),
            Some("Reads the diff and comments")
        );
        assert_eq!(front.get("tools").as_deref(), Some("grep, read_file"));
        assert_eq!(front.get("empty"), None);
        assert_eq!(front.get("model"), None);
        assert_eq!(front.body, "The body.\n");
        // An unclosed block is not front matter: the whole text is the body.
        let open = FrontMatter::parse("---\nname: x\nno end");
        assert!(open.fields.is_empty());
        assert_eq!(open.body, "---\nname: x\nno end");
    }
}
