//! Head-and-tail truncation of long texts (tool outputs, selections): the start and the end
//! of an output carry the command and its verdict, the middle is the least useful part.
//! Pure functions over strings.

use crate::position::{ceil_char_boundary, floor_char_boundary};
use crate::tokens::TokenizerKind;

/// How much of a text may be kept: by tokens (exact, with the session's tokenizer) or bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TruncationPolicy {
    Tokens(usize),
    Bytes(usize),
}

impl TruncationPolicy {
    /// This policy, or `tokens` when that is tighter (a byte policy keeps its bytes and is
    /// held to the tokens by a second cut: `Tokens` then).
    pub fn at_most_tokens(self, tokens: usize) -> TruncationPolicy {
        match self {
            TruncationPolicy::Tokens(limit) => TruncationPolicy::Tokens(limit.min(tokens)),
            TruncationPolicy::Bytes(limit) if limit <= tokens => TruncationPolicy::Bytes(limit),
            TruncationPolicy::Bytes(_) => TruncationPolicy::Tokens(tokens),
        }
    }
}

/// Tool outputs are cut to this unless configured otherwise (`toolOutputLimit`).
pub const DEFAULT_TOOL_OUTPUT_LIMIT: TruncationPolicy = TruncationPolicy::Tokens(10_000);

/// The middle of a text larger than this is not tokenized to report its exact size: the
/// marker then gives an estimate (`~N`). Counting 100 MB of build log would take seconds.
const EXACT_MIDDLE_LIMIT: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncated {
    pub text: String,
    /// Tokens or bytes (per the policy) removed from the middle; 0 when nothing was cut.
    pub removed: usize,
}

/// `text` cut to `policy`: the head and the tail, half the budget each, on UTF-8 boundaries,
/// with `…N tokens truncated…` (or `bytes`) where the middle was, and `Total output lines: N`
/// on top when the text has several lines. A text within budget is returned unchanged.
pub fn truncate_middle(
    text: &str,
    policy: TruncationPolicy,
    tokenizer: TokenizerKind,
) -> Truncated {
    let cut = match policy {
        TruncationPolicy::Bytes(limit) => cut_bytes(text, limit),
        TruncationPolicy::Tokens(limit) => cut_tokens(text, limit, tokenizer),
    };
    let Some(Cut {
        head_end,
        tail_start,
        marker,
        removed,
    }) = cut
    else {
        return Truncated {
            text: text.to_string(),
            removed: 0,
        };
    };
    let mut out = String::with_capacity(head_end + (text.len() - tail_start) + 64);
    if text.contains('\n') && !already_cut(text) {
        out.push_str(&format!("{LINES_HEADER}{}\n\n", line_count(text)));
    }
    out.push_str(&text[..head_end]);
    out.push_str(&marker);
    out.push_str(&text[tail_start..]);
    Truncated { text: out, removed }
}

/// What a cut text starts with (then its line count before the cut).
const LINES_HEADER: &str = "Total output lines: ";

/// Whether `text` was cut before (a tool's own byte cap, then the history's token limit):
/// its header, on its first line or under a one-line wrapper (`<mcp_result …>`), holds the
/// real count, so a second cut adds no header counting what the first cut left.
fn already_cut(text: &str) -> bool {
    text.lines().take(2).any(|line| {
        line.strip_prefix(LINES_HEADER)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// Lines as an editor counts them: a final line without a newline counts, an empty text has
/// none.
pub fn line_count(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    newlines + usize::from(!text.ends_with('\n'))
}

struct Cut {
    head_end: usize,
    tail_start: usize,
    marker: String,
    removed: usize,
}

fn cut_bytes(text: &str, limit: usize) -> Option<Cut> {
    if text.len() <= limit {
        return None;
    }
    let head_end = floor_char_boundary(text, limit / 2);
    let tail_start = ceil_char_boundary(text, text.len() - (limit - limit / 2));
    let removed = tail_start - head_end;
    Some(Cut {
        head_end,
        tail_start,
        marker: format!("…{removed} bytes truncated…"),
        removed,
    })
}

fn cut_tokens(text: &str, limit: usize, tokenizer: TokenizerKind) -> Option<Cut> {
    // Every token is at least one byte: a text no longer than the budget in bytes fits.
    if text.len() <= limit {
        return None;
    }
    let head_tokens = limit / 2;
    let tail_tokens = limit - head_tokens;
    let head_end = floor_char_boundary(text, head_bytes(text, head_tokens, tokenizer)?);
    let tail_start = ceil_char_boundary(text, tail_start(text, tail_tokens, tokenizer)?);
    if head_end >= tail_start {
        return None;
    }
    let middle = &text[head_end..tail_start];
    let (removed, marker) = if middle.len() <= EXACT_MIDDLE_LIMIT {
        let removed = tokenizer.count(middle);
        (removed, format!("…{removed} tokens truncated…"))
    } else {
        // Estimate from the density of the kept parts, which were tokenized anyway.
        let kept_bytes = (head_end + text.len() - tail_start).max(1);
        let removed = (middle.len() as f64 * limit as f64 / kept_bytes as f64).round() as usize;
        (removed, format!("…~{removed} tokens truncated…"))
    };
    if removed == 0 {
        return None;
    }
    Some(Cut {
        head_end,
        tail_start,
        marker,
        removed,
    })
}

/// Byte length of the first `tokens` tokens of `text`, or None when the whole text has no
/// more tokens than that. Tokenizes a growing window, not the whole text.
fn head_bytes(text: &str, tokens: usize, tokenizer: TokenizerKind) -> Option<usize> {
    let mut window = (tokens * 8).max(64);
    loop {
        let end = floor_char_boundary(text, window.min(text.len()));
        let encoded = tokenizer.encode(&text[..end]);
        // One token more than needed, so the last kept token is not a fragment cut by the
        // window's edge.
        if encoded.len() > tokens {
            return Some(tokenizer.decoded_len(&encoded[..tokens]));
        }
        if end == text.len() {
            return None;
        }
        window *= 2;
    }
}

/// Byte offset where the last `tokens` tokens of `text` begin, or None when the whole text
/// has no more tokens than that.
fn tail_start(text: &str, tokens: usize, tokenizer: TokenizerKind) -> Option<usize> {
    let mut window = (tokens * 8).max(64);
    loop {
        let start = ceil_char_boundary(text, text.len().saturating_sub(window));
        let encoded = tokenizer.encode(&text[start..]);
        if encoded.len() > tokens {
            let dropped = tokenizer.decoded_len(&encoded[..encoded.len() - tokens]);
            return Some(start + dropped);
        }
        if start == 0 {
            return None;
        }
        window *= 2;
    }
}

/// How much of a running command's output is streamed to the editor: the first
/// `STREAMED_BYTES` of it, then one line that says the rest waits for the call's result. A
/// command that writes faster than the editor reads (`yes`) must not grow the queue of
/// notifications without bound; the recorded output is cut on its own (`truncate_middle`).
#[derive(Debug, Default)]
pub struct StreamedOutput {
    sent: usize,
    stopped: bool,
}

pub const STREAMED_BYTES: usize = 256 * 1024;

pub const STREAM_STOPPED: &str =
    "\n[agentls: the rest of the output is not streamed; the call's result shows it when the command ends]\n";

impl StreamedOutput {
    /// What of `chunk` to stream (None: nothing more).
    pub fn admit(&mut self, chunk: &str) -> Option<String> {
        if self.stopped {
            return None;
        }
        if self.sent + chunk.len() <= STREAMED_BYTES {
            self.sent += chunk.len();
            return Some(chunk.to_string());
        }
        self.stopped = true;
        let mut end = STREAMED_BYTES - self.sent;
        while !chunk.is_char_boundary(end) {
            end -= 1;
        }
        self.sent = STREAMED_BYTES;
        Some(format!("{}{STREAM_STOPPED}", &chunk[..end]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOK: TokenizerKind = TokenizerKind::O200kBase;

    fn numbered_lines(n: usize) -> String {
        (1..=n)
            .map(|i| format!("line {i}: some output\n"))
            .collect()
    }

    #[test]
    fn text_within_budget_is_unchanged() {
        let text = numbered_lines(10);
        for policy in [
            TruncationPolicy::Tokens(10_000),
            TruncationPolicy::Bytes(10_000),
        ] {
            let out = truncate_middle(&text, policy, TOK);
            assert_eq!(out.text, text);
            assert_eq!(out.removed, 0);
        }
        // Over the budget in bytes but not in tokens: still unchanged.
        let text = "word ".repeat(100);
        let tokens = TOK.count(&text);
        assert!(text.len() > tokens);
        assert_eq!(
            truncate_middle(&text, TruncationPolicy::Tokens(tokens), TOK).text,
            text
        );
    }

    #[test]
    fn token_policy_keeps_head_and_tail_halves_with_an_exact_marker() {
        let text = numbered_lines(2000);
        let out = truncate_middle(&text, TruncationPolicy::Tokens(200), TOK);
        assert!(out
            .text
            .starts_with("Total output lines: 2000\n\nline 1: some output\n"));
        assert!(out.text.ends_with("line 2000: some output\n"));
        let marker = format!("…{} tokens truncated…", out.removed);
        let (head, tail) = out.text.split_once(&marker).expect("marker present");
        let head = head.trim_start_matches("Total output lines: 2000\n\n");
        assert_eq!(TOK.count(head), 100);
        // The tail starts where a token starts, so counting it alone may differ by one.
        assert!((99..=101).contains(&TOK.count(tail)), "{}", TOK.count(tail));
        // Nothing is lost but the middle, and the marker says how much.
        let total = TOK.count(&text);
        assert!(out.removed + 200 >= total - 2 && out.removed + 200 <= total + 2);
        assert!(text.starts_with(head) && text.ends_with(tail));
    }

    #[test]
    fn byte_policy_cuts_on_char_boundaries() {
        // Multi-byte characters everywhere: every cut point lands inside one.
        let text = "é漢🎉".repeat(500);
        for limit in [1, 2, 3, 7, 100, 101] {
            let out = truncate_middle(&text, TruncationPolicy::Bytes(limit), TOK);
            let marker = format!("…{} bytes truncated…", out.removed);
            let (head, tail) = out.text.split_once(&marker).expect("marker");
            assert!(head.len() + tail.len() <= limit + 4, "limit {limit}");
            assert_eq!(head.len() + tail.len() + out.removed, text.len());
            assert!(!out.text.starts_with("Total output lines"), "single line");
        }
    }

    #[test]
    fn token_policy_on_multibyte_text_keeps_valid_utf8_and_loses_only_the_middle() {
        let text = "日本語のテキスト🎉とemoji👨‍👩‍👧\n".repeat(300);
        let out = truncate_middle(&text, TruncationPolicy::Tokens(101), TOK);
        let marker = format!("…{} tokens truncated…", out.removed);
        let (head, tail) = out.text.split_once(&marker).expect("marker");
        let head = head.trim_start_matches("Total output lines: 300\n\n");
        assert!(text.starts_with(head) && text.ends_with(tail));
        assert!(TOK.count(head) <= 50 && TOK.count(head) >= 45);
        assert!(out.removed > 0);
    }

    #[test]
    fn a_single_long_line_has_no_line_header_and_a_zero_budget_keeps_only_the_marker() {
        let text = "x".repeat(50_000);
        let out = truncate_middle(&text, TruncationPolicy::Tokens(0), TOK);
        assert_eq!(out.text, format!("…{} tokens truncated…", TOK.count(&text)));
        let out = truncate_middle(&text, TruncationPolicy::Bytes(0), TOK);
        assert_eq!(out.text, "…50000 bytes truncated…");
    }

    #[test]
    fn line_count_counts_a_last_line_without_newline() {
        assert_eq!(line_count(""), 0);
        assert_eq!(line_count("a"), 1);
        assert_eq!(line_count("a\n"), 1);
        assert_eq!(line_count("a\nb"), 2);
        assert_eq!(line_count("\n\n"), 2);
    }

    #[test]
    fn a_second_cut_keeps_the_first_cuts_line_count() {
        let text: String = (0..5000)
            .map(|i| format!("line {i}: some output\n"))
            .collect();
        let first = truncate_middle(&text, TruncationPolicy::Bytes(20_000), TOK).text;
        assert!(first.starts_with("Total output lines: 5000\n\n"));
        let second = truncate_middle(&first, TruncationPolicy::Tokens(500), TOK).text;
        assert_eq!(second.matches("Total output lines").count(), 1, "{second}");
        assert!(second.starts_with("Total output lines: 5000\n\nline 0: some output\n"));
        assert!(second.ends_with("line 4999: some output\n"));
        // Under a one-line wrapper too.
        let wrapped = format!("<mcp_result server=\"s\" tool=\"t\">\n{first}</mcp_result>");
        let second = truncate_middle(&wrapped, TruncationPolicy::Tokens(500), TOK).text;
        assert_eq!(second.matches("Total output lines").count(), 1, "{second}");
        assert!(second.contains("\nTotal output lines: 5000\n"));
    }

    #[test]
    fn streamed_output_stops_once_at_its_budget_on_a_char_boundary() {
        let mut stream = StreamedOutput::default();
        let chunk = "é".repeat(STREAMED_BYTES / 4); // half the budget
        assert_eq!(stream.admit(&chunk).unwrap().len(), chunk.len());
        let last = stream.admit(&format!("x{chunk}")).unwrap();
        assert!(
            last.ends_with(STREAM_STOPPED),
            "{}",
            &last[last.len() - 40..]
        );
        assert_eq!(last.len() - STREAM_STOPPED.len(), STREAMED_BYTES / 2 - 1);
        assert_eq!(stream.admit("more"), None);
    }
}
