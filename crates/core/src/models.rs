//! What agentls knows about models by name: their context windows. Configuration
//! (`provider.contextWindow`) overrides the table; an unknown model gets a conservative
//! default and the status says the window is a default.

/// Context windows by model-name prefix, longest prefix wins. Figures from the providers'
/// model pages.
const CONTEXT_WINDOWS: &[(&str, usize)] = &[
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("claude-", 200_000),
    ("smollm2", 8_192),
    ("llama3", 8_192),
    ("llama-3.1", 131_072),
    ("llama3.1", 131_072),
    ("qwen2.5-coder", 32_768),
];

/// Whether a model takes images, by model-name prefix, longest prefix wins (the providers'
/// model pages). A model not listed is taken as text-only: an image is refused clearly
/// rather than sent to a model that would fail on it (`provider.images` says otherwise).
const TAKES_IMAGES: &[(&str, bool)] = &[
    ("gpt-5", true),
    ("gpt-4.1", true),
    ("gpt-4o", true),
    ("gpt-4-turbo", true),
    ("gpt-4", false),
    ("gpt-3.5-turbo", false),
    ("o1", true),
    ("o1-mini", false),
    ("o3", true),
    ("o3-mini", false),
    ("o4-mini", true),
    ("claude-", true),
    ("claude-2", false),
    ("claude-instant", false),
    ("smollm2", false),
    ("llama3", false),
    ("qwen2.5-coder", false),
];

/// Whether the model takes images: `configured` (`provider.images`), else the table, else
/// false.
pub fn takes_images(configured: Option<bool>, model: &str) -> bool {
    configured.unwrap_or_else(|| {
        let name = model
            .rsplit('/')
            .next()
            .unwrap_or(model)
            .to_ascii_lowercase();
        TAKES_IMAGES
            .iter()
            .filter(|(prefix, _)| name.starts_with(prefix))
            .max_by_key(|(prefix, _)| prefix.len())
            .is_some_and(|&(_, images)| images)
    })
}

/// The window assumed for a model the table does not know.
pub const DEFAULT_CONTEXT_WINDOW: usize = 128_000;

/// Output tokens kept free in the window when the configuration does not say.
pub const DEFAULT_MAX_OUTPUT_TOKENS: usize = 8_192;

/// The model's context window from the table, matching case-insensitively on the name
/// after any `provider/` prefix (OpenRouter style).
pub fn known_context_window(model: &str) -> Option<usize> {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    CONTEXT_WINDOWS
        .iter()
        .filter(|(prefix, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|&(_, window)| window)
}

/// The size a model's name gives, in billions of parameters: `1.5b` in
/// `qwen2.5-coder-1.5b-instruct`, `3b` in `llama3.2:3b`, `135m` in `smollm2-135m`.
pub fn billions_in_name(model: &str) -> Option<f64> {
    model
        .to_ascii_lowercase()
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '.'))
        .find_map(|word| {
            let (number, scale) = match word.strip_suffix('b') {
                Some(number) => (number, 1.0),
                None => (word.strip_suffix('m')?, 0.001),
            };
            let value: f64 = number.parse().ok()?;
            (value > 0.0).then_some(value * scale)
        })
}

/// The window to budget against: configured, else known, else the default.
pub fn context_window(configured: Option<usize>, model: Option<&str>) -> usize {
    configured
        .or_else(|| model.and_then(known_context_window))
        .unwrap_or(DEFAULT_CONTEXT_WINDOW)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_models_size_is_read_from_its_name() {
        assert_eq!(billions_in_name("qwen2.5-coder-1.5b-instruct"), Some(1.5));
        assert_eq!(
            billions_in_name("Qwen2.5-Coder-7B-Instruct-GGUF"),
            Some(7.0)
        );
        assert_eq!(billions_in_name("llama3.2:3b"), Some(3.0));
        assert_eq!(billions_in_name("smollm2-135m"), Some(0.135));
        assert_eq!(billions_in_name("gemma-2-27b"), Some(27.0));
        assert_eq!(billions_in_name("gpt-4o-mini"), None);
        assert_eq!(billions_in_name("claude-sonnet-4-5"), None);
        assert_eq!(billions_in_name("mixtral-8x7b"), None);
        assert_eq!(billions_in_name("small-model"), None);
    }

    #[test]
    fn longest_prefix_wins_and_configuration_overrides() {
        assert_eq!(known_context_window("gpt-4o-mini"), Some(128_000));
        assert_eq!(known_context_window("gpt-4-0613"), Some(8_192));
        assert_eq!(known_context_window("gpt-4.1-mini"), Some(1_047_576));
        assert_eq!(
            known_context_window("anthropic/claude-sonnet-4"),
            Some(200_000)
        );
        assert_eq!(known_context_window("mystery"), None);
        assert_eq!(
            context_window(None, Some("mystery")),
            DEFAULT_CONTEXT_WINDOW
        );
        assert_eq!(context_window(Some(2048), Some("gpt-4o")), 2048);
    }

    #[test]
    fn images_follow_the_table_unless_configured_and_unknown_models_take_none() {
        assert!(takes_images(None, "gpt-4o-mini"));
        assert!(takes_images(None, "anthropic/claude-sonnet-4-5"));
        assert!(!takes_images(None, "gpt-4-0613"));
        assert!(!takes_images(None, "o3-mini"));
        assert!(!takes_images(None, "mystery"));
        assert!(takes_images(Some(true), "mystery"));
        assert!(!takes_images(Some(false), "gpt-4o"));
    }
}
