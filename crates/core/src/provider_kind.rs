//! The providers: the wire formats (`ProviderKind`: what each HTTP exchange needs besides
//! its request shape, which is `wire`'s: endpoint, headers) and the named providers over
//! them (`PRESETS`, the values of `provider.kind`: a wire format with its base URL, key
//! variable and models). A leaf: the configuration checks names against it without
//! reaching the wire.

/// The Messages API version the requests are written for (`anthropic-version`).
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A provider's wire format. A new one is a variant here, a line in [`ProviderKind::ALL`],
/// its request shape in a file of `wire/`, the arms the compiler then asks for (endpoint
/// and headers here, its events in `stream`), and a row of [`PRESETS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    OpenAi,
    Anthropic,
}

impl ProviderKind {
    /// Every wire format.
    pub const ALL: [ProviderKind; 2] = [ProviderKind::OpenAi, ProviderKind::Anthropic];

    /// The wire format's name (its first preset's).
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

/// A provider by name (`provider.kind`): a wire format and what it defaults to. An
/// OpenAI-compatible service is one row here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    pub name: &'static str,
    pub wire: ProviderKind,
    /// Where requests go unless `provider.baseUrl` says otherwise.
    pub base_url: &'static str,
    /// The variable that holds the key unless `provider.apiKeyEnv` says otherwise.
    pub api_key_env: &'static str,
    /// The service refuses a request without a key (a local server takes one without).
    pub key_required: bool,
    /// What a model picker offers; the first is `agentls ask`'s default (none: the user
    /// names the model).
    pub models: &'static [&'static str],
}

/// Every provider `provider.kind` names, in the order `agentls ask` tries their keys.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "openai",
        wire: ProviderKind::OpenAi,
        base_url: "https://api.openai.com/v1",
        api_key_env: "OPENAI_API_KEY",
        key_required: true,
        models: &["gpt-4o-mini", "gpt-4o", "gpt-4.1", "gpt-5"],
    },
    Preset {
        name: "anthropic",
        wire: ProviderKind::Anthropic,
        base_url: "https://api.anthropic.com",
        api_key_env: "ANTHROPIC_API_KEY",
        key_required: true,
        models: &["claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"],
    },
    Preset {
        name: "openrouter",
        wire: ProviderKind::OpenAi,
        base_url: "https://openrouter.ai/api/v1",
        api_key_env: "OPENROUTER_API_KEY",
        key_required: true,
        models: &["openai/gpt-4o-mini", "anthropic/claude-sonnet-4.5"],
    },
    Preset {
        name: "deepseek",
        wire: ProviderKind::OpenAi,
        base_url: "https://api.deepseek.com/v1",
        api_key_env: "DEEPSEEK_API_KEY",
        key_required: true,
        models: &["deepseek-chat", "deepseek-reasoner"],
    },
    Preset {
        name: "groq",
        wire: ProviderKind::OpenAi,
        base_url: "https://api.groq.com/openai/v1",
        api_key_env: "GROQ_API_KEY",
        key_required: true,
        models: &[],
    },
    Preset {
        name: "mistral",
        wire: ProviderKind::OpenAi,
        base_url: "https://api.mistral.ai/v1",
        api_key_env: "MISTRAL_API_KEY",
        key_required: true,
        models: &["mistral-large-latest", "codestral-latest"],
    },
    Preset {
        name: "ollama",
        wire: ProviderKind::OpenAi,
        base_url: "http://127.0.0.1:11434/v1",
        api_key_env: "OLLAMA_API_KEY",
        key_required: false,
        models: &[],
    },
];

impl Preset {
    pub fn named(name: &str) -> Option<&'static Preset> {
        PRESETS.iter().find(|preset| preset.name == name)
    }

    /// The names `provider.kind` accepts.
    pub fn names() -> Vec<&'static str> {
        PRESETS.iter().map(|preset| preset.name).collect()
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

    /// Each wire format is a preset of its own name, and names are unique.
    #[test]
    fn every_wire_format_has_its_preset_and_names_are_unique() {
        for kind in ProviderKind::ALL {
            assert_eq!(Preset::named(kind.name()).map(|p| p.wire), Some(kind));
        }
        let mut names = Preset::names();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), PRESETS.len());
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
