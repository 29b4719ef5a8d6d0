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
}
