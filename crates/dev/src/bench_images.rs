//! `agentls-dev bench images`: what an image costs agentls before it reaches a provider —
//! a client's base64 decoded and checked (header, size, token count) and encoded again for
//! the history, and the request body of a turn with images built — for the largest image
//! accepted (5 MB). Pure work in process: no provider, no disk.

use std::time::Instant;

use agentls_core::context::{assemble, AssemblyConfig, StaticContext};
use agentls_core::history::{History, Item};
use agentls_core::image::{self, TokenFormula};
use agentls_core::prompts::Prompts;
use agentls_core::tokens::{Calibration, CountCache, TokenizerKind};
use agentls_core::truncate::TruncationPolicy;
use agentls_core::wire::{self, ProviderConfig, ProviderKind};

pub struct ImagesReport {
    pub bytes: usize,
    /// Median milliseconds to decode, check and re-encode one image (`image::from_base64`).
    pub check_ms: f64,
    /// Median milliseconds to assemble a request holding `images` such images and write
    /// its OpenAI body (`wire::body`, serialized).
    pub body_ms: f64,
    pub images: usize,
}

/// A PNG header followed by `size` bytes of filler: what the checks read is the header.
fn large_png(size: usize) -> Vec<u8> {
    let mut png = image::test_png(1920, 1080);
    png.resize(size, 0x5a);
    png
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(|a, b| a.total_cmp(b));
    samples[samples.len() / 2]
}

pub fn run(rounds: usize) -> ImagesReport {
    let bytes = image::MAX_IMAGE_BYTES;
    let data = image::base64_encode(&large_png(bytes));
    let mut checks = Vec::new();
    let mut checked = None;
    for _ in 0..rounds.max(1) {
        let start = Instant::now();
        let image = image::from_base64("shot.png", Some("image/png"), &data, TokenFormula::OpenAi)
            .expect("a valid image");
        checks.push(start.elapsed().as_secs_f64() * 1000.0);
        checked = Some(image);
    }
    let image = checked.expect("one round");
    let images = image::MAX_IMAGES_PER_MESSAGE;
    let prompts = Prompts::builtin();
    let mut history = History::new(TokenizerKind::O200kBase);
    let policy = TruncationPolicy::Tokens(10_000);
    history.record(
        Item::User {
            text: "What is wrong here?".into(),
            context: None,
        },
        policy,
        &prompts,
    );
    history.record(
        Item::Images {
            images: vec![image; images],
            call_id: None,
        },
        policy,
        &prompts,
    );
    let config = ProviderConfig {
        kind: ProviderKind::OpenAi,
        base_url: "http://localhost/v1".into(),
        model: "gpt-4o".into(),
        api_key_env: "OPENAI_API_KEY".into(),
        key_required: false,
        max_output_tokens: None,
        timeout: std::time::Duration::from_secs(1),
        max_retries: 0,
        temperature: None,
        images: true,
    };
    let static_context = StaticContext {
        system_prompt: "S".into(),
        ..Default::default()
    };
    let assembly = AssemblyConfig {
        tokenizer: TokenizerKind::O200kBase,
        context_window: 128_000,
        calibration: Calibration::default(),
    };
    let mut bodies = Vec::new();
    for _ in 0..rounds.max(1) {
        let start = Instant::now();
        let request = assemble(
            &assembly,
            &static_context,
            &history,
            None,
            &prompts,
            &mut CountCache::default(),
        );
        let body = serde_json::to_vec(&wire::body(&config, &request, &prompts)).expect("JSON");
        std::hint::black_box(body);
        bodies.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    ImagesReport {
        bytes,
        check_ms: median(checks),
        body_ms: median(bodies),
        images,
    }
}

pub fn print(report: &ImagesReport) {
    println!(
        "one {} MB image: decode + check + encode {:.1} ms (median); a request body with {} of them: {:.1} ms",
        report.bytes / (1024 * 1024),
        report.check_ms,
        report.images,
        report.body_ms
    );
}
