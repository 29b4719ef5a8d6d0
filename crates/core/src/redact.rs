//! Known secret values cut out of a text before it is recorded (a tool's output): the second
//! line of defence behind keeping keys out of tool processes' reach.

use std::borrow::Cow;

/// What stands for a secret in a redacted text.
pub const REDACTED: &str = "[redacted]";

/// Shorter values are not redacted: they would match ordinary text.
pub const MIN_SECRET_LEN: usize = 8;

/// Whether an environment variable of this name holds a secret: every name ending in
/// `_KEY`, `_TOKEN`, `_SECRET` or `_PASSWORD` (case insensitive), longer than the suffix.
pub fn secret_name(name: &[u8]) -> bool {
    let name = name.to_ascii_uppercase();
    [&b"_KEY"[..], b"_TOKEN", b"_SECRET", b"_PASSWORD"]
        .iter()
        .any(|suffix| name.len() > suffix.len() && name.ends_with(suffix))
}

/// `text` with every occurrence of each of `secrets` (those of at least `MIN_SECRET_LEN`
/// bytes) replaced by `REDACTED`, longest first, so a secret holding another is cut whole.
pub fn redact<'a>(text: &'a str, secrets: &[String]) -> Cow<'a, str> {
    let mut found: Vec<&str> = secrets
        .iter()
        .map(String::as_str)
        .filter(|s| s.len() >= MIN_SECRET_LEN && text.contains(s))
        .collect();
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    found.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let mut text = text.to_string();
    for secret in found {
        text = text.replace(secret, REDACTED);
    }
    Cow::Owned(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_are_replaced_and_short_ones_left() {
        let secrets = [
            "sk-live-abcdef123".to_string(),
            "sk-live-abcdef123-extended".to_string(),
            "short".to_string(),
        ];
        assert!(matches!(redact("nothing here", &secrets), Cow::Borrowed(_)));
        assert_eq!(
            redact(
                "KEY=sk-live-abcdef123\nX=sk-live-abcdef123-extended short",
                &secrets
            ),
            "KEY=[redacted]\nX=[redacted] short"
        );
        assert_eq!(redact("", &[]), "");
    }
}
