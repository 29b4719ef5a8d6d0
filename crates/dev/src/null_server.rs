//! A language server that does nothing: tower-lsp over stdio, incremental sync announced,
//! every notification dropped. `agentls-dev bench keystroke` measures agentls's CPU per edit
//! against it: the floor any tower-lsp server pays for reading and decoding a didChange.

use tower_lsp::jsonrpc::Result;
use tower_lsp::lsp_types::*;
use tower_lsp::{Client, LanguageServer, LspService, Server};

struct Nothing {
    _client: Client,
}

#[tower_lsp::async_trait]
impl LanguageServer for Nothing {
    async fn initialize(&self, _: InitializeParams) -> Result<InitializeResult> {
        Ok(InitializeResult {
            capabilities: ServerCapabilities {
                text_document_sync: Some(TextDocumentSyncCapability::Kind(
                    TextDocumentSyncKind::INCREMENTAL,
                )),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    async fn shutdown(&self) -> Result<()> {
        Ok(())
    }
}

pub async fn serve() {
    let (service, socket) = LspService::new(|client| Nothing { _client: client });
    Server::new(tokio::io::stdin(), tokio::io::stdout(), socket)
        .serve(service)
        .await;
    // tokio's stdin reader is a blocking thread that would keep the runtime (and the
    // process) alive until the client closes the pipe, which it does only once we exited.
    std::process::exit(0);
}
