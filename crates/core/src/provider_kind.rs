//! The providers' wire formats by name: the one list of kinds (`provider.kind`), and what
//! each kind's HTTP exchange needs besides its request shape (which is `wire`'s): defaults,
//! endpoint, headers. A leaf: the configuration checks names against it without reaching
//! the wire.

/// The Messages API version the requests are written for (`anthropic-version`).
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A provider's wire format. A new one is a variant here, a line in [`ProviderKind::ALL`],
/// its request shape in a file of `wire/`, and the arms the compiler then asks for
/// (its defaults, endpoint and headers here, its events in `stream`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    OpenAi,
    Anthropic,
}

impl ProviderKind {
    /// Every kind: the one list (`provider.kind`'s allowed values are their names).
    pub const ALL: [ProviderKind; 2] = [ProviderKind::OpenAi, ProviderKind::Anthropic];

    /// The kind's name in the configuration (`provider.kind`).
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
        }
    }

    pub fn from_name(name: &str) -> Option<ProviderKind> {
        ProviderKind::ALL
            .into_iter()
            .find(|kind| kind.name() == name)
    }

    /// The request headers that carry `key` and any others the API requires.
    pub fn headers(self, key: Option<&str>) -> Vec<(&'static str, String)> {
        let mut headers = Vec::new();
        match self {
            ProviderKind::OpenAi => {
                if let Some(key) = key {
                    headers.push(("authorization", format!("Bearer {key}")));
                }
            }
            ProviderKind::Anthropic => {
                if let Some(key) = key {
                    headers.push(("x-api-key", key.to_string()));
                }
                headers.push(("anthropic-version", ANTHROPIC_VERSION.to_string()));
            }
        }
        headers
    }

    /// Whether a stream the server dropped is asked again once without streaming: a Chat
    /// Completions server (llama-cpp-python past its window) says then why it refused.
    pub fn asks_again_unstreamed(self) -> bool {
        match self {
            ProviderKind::OpenAi => true,
            ProviderKind::Anthropic => false,
        }
    }

    /// The models a model picker offers for the kind; the first is `agentls ask`'s default.
    pub fn models(self) -> &'static [&'static str] {
        match self {
            ProviderKind::OpenAi => &["gpt-4o-mini", "gpt-4o", "gpt-4.1", "gpt-5"],
            ProviderKind::Anthropic => {
                &["claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"]
            }
        }
    }

    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com",
        }
    }

    pub fn default_api_key_env(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "OPENAI_API_KEY",
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    pub fn endpoint(self, base_url: &str) -> String {
        let base = base_url.trim_end_matches('/');
        match self {
            ProviderKind::OpenAi => format!("{base}/chat/completions"),
            // The documented base URL has no version; accept one that has it.
            ProviderKind::Anthropic if base.ends_with("/v1") => format!("{base}/messages"),
            ProviderKind::Anthropic => format!("{base}/v1/messages"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_found_by_its_name() {
        for kind in ProviderKind::ALL {
            assert_eq!(ProviderKind::from_name(kind.name()), Some(kind));
        }
        assert_eq!(ProviderKind::from_name("OpenAI"), None);
    }

    #[test]
    fn each_kind_sends_its_key_in_its_own_header() {
        assert_eq!(
            ProviderKind::OpenAi.headers(Some("k")),
            [("authorization", "Bearer k".to_string())]
        );
        assert_eq!(
            ProviderKind::Anthropic.headers(Some("k")),
            [
                ("x-api-key", "k".to_string()),
                ("anthropic-version", ANTHROPIC_VERSION.to_string())
            ]
        );
        assert!(ProviderKind::OpenAi.headers(None).is_empty());
    }
}
