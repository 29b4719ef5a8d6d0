//! The images of a prompt: the client's own (`images: [{mimeType, data | path}]` over LSP,
//! `image` blocks over ACP) and `@path` mentions of an image file, read (bounded) and
//! checked before the prompt is queued, so that a bad image, too many, or any image for a
//! model that takes none is the request's clear error and nothing is recorded.

use std::sync::Arc;

use agentls_core::image::{self, Image, TokenFormula};
use agentls_core::provider_kind::ProviderKind;

use crate::agent::{Agent, AgentError};
use crate::tools::boundary::PathBoundary;
use crate::tools::read_file::read_image;

/// One image as a client gives it: its bytes in base64, or a path to read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageInput {
    pub mime_type: Option<String>,
    pub data: Option<String>,
    pub path: Option<String>,
}

impl Agent {
    /// How the configured provider counts an image's tokens.
    pub(crate) fn image_formula(&self) -> TokenFormula {
        match self.host.config().preset().wire {
            ProviderKind::Anthropic => TokenFormula::Anthropic,
            ProviderKind::OpenAi => TokenFormula::OpenAi,
        }
    }

    /// Whether `model` takes images (`provider.images`, else the known-models table).
    pub(crate) fn takes_images(&self, model: &str) -> bool {
        agentls_core::models::takes_images(self.host.config().images, model)
    }

    /// The images of a prompt to session `id`: the given ones, then the `@path` mentions of
    /// image files in `text` (in order). Refused whole when one is bad, when there are too
    /// many, or when the session's model does not take images.
    pub(crate) async fn prompt_images(
        self: &Arc<Self>,
        id: &str,
        text: &str,
        inputs: Vec<ImageInput>,
    ) -> Result<Vec<Image>, AgentError> {
        let mentioned: Vec<String> = agentls_core::prompt_text::mentions(text)
            .into_iter()
            .filter(|m| m.lines.is_none() && image::mime_for_name(&m.path).is_some())
            .map(|m| m.path)
            .collect();
        if inputs.is_empty() && mentioned.is_empty() {
            return Ok(Vec::new());
        }
        let (model, held) = {
            let handle = self.handle(id).await?;
            let live = handle.live.lock().await;
            let held: usize = live
                .session
                .history
                .entries()
                .iter()
                .filter_map(|e| match &e.item {
                    agentls_core::history::Item::Images { images, .. } => {
                        Some(images.iter().map(|i| i.data.len()).sum::<usize>())
                    }
                    _ => None,
                })
                .sum();
            (live.session.model.clone(), held)
        };
        if !self.takes_images(&model) {
            return Err(AgentError::invalid_params(format!(
                "invalid params: the model {model} does not take images, so the image was not sent (set provider.images to true if it does)"
            )));
        }
        image::check_count(inputs.len() + mentioned.len()).map_err(invalid)?;
        let formula = self.image_formula();
        let boundary = PathBoundary {
            roots: self.host.roots(),
        };
        let task = move || -> Result<Vec<Image>, String> {
            let mut images = Vec::new();
            for (index, input) in inputs.into_iter().enumerate() {
                images.push(resolve(&boundary, index + 1, input, formula)?);
            }
            for path in mentioned {
                images.push(read_image(&boundary, &path, None, formula)?);
            }
            let adding: usize = images.iter().map(|i| i.data.len()).sum();
            if held + adding > image::MAX_SESSION_IMAGE_DATA {
                return Err(format!(
                    "this session already holds {} MB of images; at most {} MB are kept in one session (compact it, or start a new one)",
                    held / (1024 * 1024),
                    image::MAX_SESSION_IMAGE_DATA / (1024 * 1024)
                ));
            }
            Ok(images)
        };
        tokio::task::spawn_blocking(task)
            .await
            .map_err(|e| AgentError::failed(e.to_string()))?
            .map_err(invalid)
    }
}

/// A refused image is the client's error (`invalid params`, -32602).
fn invalid(message: String) -> AgentError {
    AgentError::invalid_params(format!("invalid params: {message}"))
}

/// A client's image: its data decoded, or its path read (within the workspace).
fn resolve(
    boundary: &PathBoundary,
    number: usize,
    input: ImageInput,
    formula: TokenFormula,
) -> Result<Image, String> {
    match (input.data, input.path) {
        (Some(data), None) => image::from_base64(
            &format!("image {number}"),
            input.mime_type.as_deref(),
            &data,
            formula,
        ),
        (None, Some(path)) => read_image(boundary, &path, input.mime_type.as_deref(), formula),
        _ => Err(format!(
            "image {number} needs exactly one of data (base64) and path"
        )),
    }
}
