//! Token accounting: exact counts with OpenAI's vocabularies (our compact encoder, `bpe`,
//! equal to tiktoken's), message framing overhead, and calibration against the counts a
//! provider reports.
//!
//! Pure apart from the encoders themselves, which are built once per process, only for the
//! vocabulary in use (lazily, or ahead of time with [`TokenizerKind::warm`] so that no
//! request pays for it).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::OnceLock;

use crate::bpe::Vocabulary;

/// The pre-tokenization pattern of `cl100k_base`, as tiktoken defines the encoding (tiktoken-rs
/// keeps it private); `o200k_base`'s is tiktoken-rs's public constant.
const CL100K_BASE_PATTERN: &str = "'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}++|\\p{N}{1,3}+| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*+|\\s++$|\\s*[\\r\\n]|\\s+(?!\\S)|\\s";

/// The tokenizers agentls counts with. `o200k_base` (GPT-4o and later) is the default;
/// `cl100k_base` (GPT-4, GPT-3.5) is chosen by model name or configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
pub enum TokenizerKind {
    #[default]
    #[serde(rename = "o200k_base")]
    O200kBase,
    #[serde(rename = "cl100k_base")]
    Cl100kBase,
}

/// Tokens a chat message costs beyond its content (role and separators), and tokens that
/// prime the reply: the figures OpenAI documents for its chat models. Other providers frame
/// differently; calibration absorbs the difference.
pub const TOKENS_PER_MESSAGE: usize = 3;
pub const REPLY_PRIMING_TOKENS: usize = 3;

impl TokenizerKind {
    pub const NAMES: [&'static str; 2] = ["o200k_base", "cl100k_base"];

    pub fn from_name(name: &str) -> Option<TokenizerKind> {
        match name {
            "o200k_base" => Some(TokenizerKind::O200kBase),
            "cl100k_base" => Some(TokenizerKind::Cl100kBase),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            TokenizerKind::O200kBase => "o200k_base",
            TokenizerKind::Cl100kBase => "cl100k_base",
        }
    }

    /// The tokenizer OpenAI uses for `model`; `o200k_base` for every model it does not
    /// know (newer OpenAI models and most others are closer to it than to cl100k).
    pub fn for_model(model: &str) -> TokenizerKind {
        match tiktoken_rs::tokenizer::get_tokenizer(model) {
            Some(tiktoken_rs::tokenizer::Tokenizer::Cl100kBase) => TokenizerKind::Cl100kBase,
            _ => TokenizerKind::O200kBase,
        }
    }

    fn cell(self) -> &'static OnceLock<Vocabulary> {
        static O200K: OnceLock<Vocabulary> = OnceLock::new();
        static CL100K: OnceLock<Vocabulary> = OnceLock::new();
        match self {
            TokenizerKind::O200kBase => &O200K,
            TokenizerKind::Cl100kBase => &CL100K,
        }
    }

    /// Whether this vocabulary was built in this process (only the ones in use are).
    pub fn is_built(self) -> bool {
        self.cell().get().is_some()
    }

    fn encoder(self) -> &'static Vocabulary {
        match self {
            TokenizerKind::O200kBase => self.cell().get_or_init(|| {
                Vocabulary::new(
                    include_bytes!("../vocab/o200k_base.bin"),
                    tiktoken_rs::O200K_BASE_PAT_STR,
                )
            }),
            TokenizerKind::Cl100kBase => self.cell().get_or_init(|| {
                Vocabulary::new(
                    include_bytes!("../vocab/cl100k_base.bin"),
                    CL100K_BASE_PATTERN,
                )
            }),
        }
    }

    /// Builds the encoder now (≈10 ms) so the first count on a request path is not slow.
    pub fn warm(self) {
        self.encoder();
    }

    /// Exact number of tokens in `text`. Special-token text such as `<|endoftext|>` is
    /// counted as the ordinary text it is when it appears in a file or a message.
    pub fn count(self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        self.encoder().count(text)
    }

    /// The tokens of `text`, for cutting it at token boundaries.
    pub fn encode(self, text: &str) -> Vec<u32> {
        self.encoder().encode(text)
    }

    /// Byte length of the first `n` tokens of `tokens` once decoded.
    pub fn decoded_len(self, tokens: &[u32]) -> usize {
        self.encoder().decoded_len(tokens)
    }
}

/// A token figure and where it came from: counted by agentls (`estimated`) or reported by
/// the provider for the request it received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct TokenFigure {
    pub tokens: usize,
    pub estimated: bool,
}

/// The ratio between what the provider reports and what agentls counted for the same
/// request. Applied to later estimates, it brings them close to the provider's own count
/// even when the provider uses another tokenizer (a llama model's, Claude's) or frames
/// messages differently.
#[derive(
    Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct Calibration {
    pub ratio: f64,
    pub samples: u32,
}

impl Default for Calibration {
    fn default() -> Self {
        Calibration {
            ratio: 1.0,
            samples: 0,
        }
    }
}

/// A ratio outside this range means the report was not about what we sent (a cached or
/// truncated prompt, a provider bug); it is ignored rather than trusted.
const PLAUSIBLE_RATIO: std::ops::RangeInclusive<f64> = 0.25..=4.0;

/// Reports for tiny requests say more about framing than about the tokenizer.
const MIN_CALIBRATION_TOKENS: usize = 256;

impl Calibration {
    /// Records one provider report. The newest report weighs most (the conversation's mix
    /// of code and prose drifts), but one odd report cannot swing the ratio alone.
    /// Returns false when the report was ignored as implausible.
    pub fn observe(&mut self, estimated_sent: usize, reported: usize) -> bool {
        if estimated_sent < MIN_CALIBRATION_TOKENS || reported == 0 {
            return false;
        }
        let ratio = reported as f64 / estimated_sent as f64;
        if !PLAUSIBLE_RATIO.contains(&ratio) {
            return false;
        }
        self.ratio = if self.samples == 0 {
            ratio
        } else {
            0.7 * ratio + 0.3 * self.ratio
        };
        self.samples += 1;
        true
    }

    pub fn is_calibrated(&self) -> bool {
        self.samples > 0
    }

    /// `estimate` as the provider would count it.
    pub fn apply(&self, estimate: usize) -> usize {
        (estimate as f64 * self.ratio).round() as usize
    }
}

/// Counts of texts seen before, keyed by a hash of (tokenizer, text), so that the editor
/// context of an unchanged buffer is not tokenized again on every assembly. Bounded: when
/// full it starts over, which costs one recount of what is still in use.
#[derive(Debug, Default)]
pub struct CountCache {
    counts: HashMap<u64, usize>,
}

const COUNT_CACHE_CAPACITY: usize = 4096;

impl CountCache {
    pub fn count(&mut self, tokenizer: TokenizerKind, text: &str) -> usize {
        // Short texts cost less to count than to hash and look up.
        if text.len() < 64 {
            return tokenizer.count(text);
        }
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        tokenizer.hash(&mut hasher);
        text.hash(&mut hasher);
        let key = hasher.finish();
        if let Some(&count) = self.counts.get(&key) {
            return count;
        }
        if self.counts.len() >= COUNT_CACHE_CAPACITY {
            self.counts.clear();
        }
        let count = tokenizer.count(text);
        self.counts.insert(key, count);
        count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_exact_for_each_tokenizer() {
        // Reference counts from OpenAI's tiktoken for these strings.
        assert_eq!(TokenizerKind::O200kBase.count("hello world"), 2);
        assert_eq!(TokenizerKind::Cl100kBase.count("hello world"), 2);
        assert_eq!(TokenizerKind::O200kBase.count(""), 0);
        let code = "fn main() {\n    println!(\"hi\");\n}\n";
        let o200k = TokenizerKind::O200kBase.count(code);
        let cl100k = TokenizerKind::Cl100kBase.count(code);
        assert!(o200k > 5 && cl100k > 5, "{o200k} {cl100k}");
        // Special-token text is ordinary text in a message.
        assert!(TokenizerKind::O200kBase.count("<|endoftext|>") > 1);
    }

    /// Our encoder against tiktoken-rs's on text of every kind: code, prose in several
    /// scripts, whitespace runs, numbers, emoji, long words, special-token text.
    #[test]
    fn counts_equal_tiktoken_rs() {
        let mut samples: Vec<String> = vec![
            include_str!("bpe.rs").to_string(),
            include_str!("context.rs").to_string(),
            include_str!("../../../README.md").to_string(),
            "Berechnet den nächsten Schritt — Вычисляет следующий шаг — 计算下一步的值 — 次のステップを計算する 🚀👩‍💻".to_string(),
            "   \n\n\t\t  x  \r\n  12345678901234 3.14159 1e-9 0xdeadBEEF".to_string(),
            "supercalifragilisticexpialidocious".repeat(20),
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".to_string(),
            "<|endoftext|> <|fim_prefix|> don't I'LL we've they'RE".to_string(),
            "SGVsbG8gd29ybGQhIFRoaXMgaXMgYmFzZTY0IGVuY29kZWQgdGV4dA==".repeat(5),
            // Long pieces take the heap merge: one character repeated, a long word.
            "x".repeat(3000),
            " ".repeat(700) + "end",
            "ab".repeat(900),
            "Donaudampfschifffahrtsgesellschaftskapitänswitwe".repeat(30),
        ];
        // Every char of a few scripts, in a fixed pseudo-random order.
        let mut seed = 7u64;
        let mut mixed = String::new();
        for _ in 0..4000 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let c = match (seed >> 33) % 6 {
                0 => char::from_u32(0x20 + (seed >> 40) as u32 % 95),
                1 => char::from_u32(0x400 + (seed >> 40) as u32 % 256),
                2 => char::from_u32(0x4E00 + (seed >> 40) as u32 % 2000),
                3 => char::from_u32(0x1F600 + (seed >> 40) as u32 % 80),
                4 => Some([' ', '\n', '\t', '\r'][(seed >> 40) as usize % 4]),
                _ => char::from_u32(0xC0 + (seed >> 40) as u32 % 200),
            };
            mixed.extend(c);
        }
        samples.push(mixed);
        for (kind, reference) in [
            (TokenizerKind::O200kBase, tiktoken_rs::o200k_base().unwrap()),
            (
                TokenizerKind::Cl100kBase,
                tiktoken_rs::cl100k_base().unwrap(),
            ),
        ] {
            for sample in &samples {
                let expected = reference.encode_ordinary(sample);
                assert_eq!(kind.encode(sample), expected, "{kind:?}: {sample:.80}");
                assert_eq!(kind.count(sample), expected.len());
                assert_eq!(kind.decoded_len(&expected), sample.len());
            }
        }
    }

    #[test]
    fn model_names_choose_the_tokenizer() {
        assert_eq!(
            TokenizerKind::for_model("gpt-4-0613"),
            TokenizerKind::Cl100kBase
        );
        assert_eq!(
            TokenizerKind::for_model("gpt-3.5-turbo"),
            TokenizerKind::Cl100kBase
        );
        assert_eq!(TokenizerKind::for_model("gpt-4o"), TokenizerKind::O200kBase);
        assert_eq!(
            TokenizerKind::for_model("claude-sonnet-4"),
            TokenizerKind::O200kBase
        );
        assert_eq!(
            TokenizerKind::from_name("cl100k_base"),
            Some(TokenizerKind::Cl100kBase)
        );
        assert_eq!(TokenizerKind::from_name("p50k"), None);
    }

    #[test]
    fn decoded_len_measures_a_token_prefix_in_bytes() {
        let text = "alpha beta gamma";
        let tokens = TokenizerKind::O200kBase.encode(text);
        assert_eq!(TokenizerKind::O200kBase.decoded_len(&tokens), text.len());
        assert!(TokenizerKind::O200kBase.decoded_len(&tokens[..1]) < text.len());
    }

    /// Calibration with one tokenizer's reports makes the other's estimates close: the
    /// situation of a provider whose tokenizer is not ours.
    #[test]
    fn calibration_brings_another_tokenizers_estimate_within_a_few_percent() {
        // Code with comments in several languages: the two tokenizers differ most on
        // non-English text, as a llama tokenizer differs from o200k.
        let comments = [
            "Berechnet den nächsten Schritt",
            "Вычисляет следующий шаг",
            "计算下一步的值",
            "compute the next step",
            "次のステップを計算する",
        ];
        let sample = |seed: usize| -> String {
            (0..400)
                .map(|i| {
                    format!(
                        "fn item_{}(value: u32) -> u32 {{ value * {} + {} }} // {}\n",
                        i + seed,
                        i % 7,
                        seed,
                        comments[(i * seed) % comments.len()]
                    )
                })
                .collect()
        };
        let sent = sample(1);
        let later = sample(2);
        let ours = TokenizerKind::O200kBase;
        let theirs = TokenizerKind::Cl100kBase;
        let mut calibration = Calibration::default();
        let raw_error = (ours.count(&later) as f64 / theirs.count(&later) as f64 - 1.0).abs();
        assert!(calibration.observe(ours.count(&sent), theirs.count(&sent)));
        let calibrated = calibration.apply(ours.count(&later)) as f64;
        let error = (calibrated / theirs.count(&later) as f64 - 1.0).abs();
        assert!(error < 0.03, "calibrated error {error}, raw {raw_error}");
        assert!(error < raw_error);
    }

    #[test]
    fn implausible_or_tiny_reports_are_ignored() {
        let mut calibration = Calibration::default();
        assert!(!calibration.observe(10, 12));
        assert!(!calibration.observe(10_000, 100));
        assert!(!calibration.observe(10_000, 0));
        assert!(!calibration.is_calibrated());
        assert_eq!(calibration.apply(1000), 1000);
        assert!(calibration.observe(10_000, 11_000));
        assert!(calibration.observe(10_000, 12_000));
        // The newest weighs most but the first still counts.
        assert!(calibration.ratio > 1.1 && calibration.ratio < 1.2);
    }

    #[test]
    fn the_count_cache_returns_the_same_counts() {
        let mut cache = CountCache::default();
        let text = "some longer text that is worth caching because it is over the limit ".repeat(3);
        let first = cache.count(TokenizerKind::O200kBase, &text);
        assert_eq!(first, TokenizerKind::O200kBase.count(&text));
        assert_eq!(cache.count(TokenizerKind::O200kBase, &text), first);
        assert_eq!(
            cache.count(TokenizerKind::Cl100kBase, &text),
            TokenizerKind::Cl100kBase.count(&text)
        );
    }
}
