//! Answers for what the transport could not decode (see transport.rs): an InvalidRequest
//! error for a request with an id, a log line for the rest.

use super::transport::{INVALID_REQUEST_METHOD, MALFORMED_MESSAGE_METHOD};
use super::Backend;
use crate::protocol::{ClientNotification, ClientRequest};
use serde::Deserialize;
use serde_json::Value;
use tower_lsp::jsonrpc;
use tower_lsp::lsp_types::MessageType;

/// A request the transport could not decode, with an id to answer (internal: the client
/// never names it).
pub(super) enum InvalidRequest {}

impl ClientRequest for InvalidRequest {
    type Params = MalformedParams;
    type Result = Value;
    const METHOD: &'static str = INVALID_REQUEST_METHOD;
}

/// A message the transport could not decode and cannot answer (internal).
pub(super) enum MalformedMessage {}

impl ClientNotification for MalformedMessage {
    type Params = MalformedParams;
    const METHOD: &'static str = MALFORMED_MESSAGE_METHOD;
}

#[derive(Deserialize)]
pub(super) struct MalformedParams {
    pub(super) error: String,
}

impl Backend {
    /// Stands in for a request the transport could not decode (see transport.rs).
    pub(super) async fn invalid_request(&self, params: MalformedParams) -> jsonrpc::Result<Value> {
        Err(jsonrpc::Error {
            code: jsonrpc::ErrorCode::InvalidRequest,
            message: params.error.into(),
            data: None,
        })
    }

    /// Stands in for a message the transport could not decode and could not answer.
    pub(super) async fn malformed_message(&self, params: MalformedParams) {
        self.client
            .log_message(
                MessageType::WARNING,
                format!("agentls: ignored a malformed message: {}", params.error),
            )
            .await;
    }
}
