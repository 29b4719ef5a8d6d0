//! The `agentls/debug/*` requests: what the server knows of a document, its syntax, the
//! AGENTS.md chain and the workspace, for tests and bug reports.

use super::to_proto::symbol_json;
use super::{invalid_params, Backend};
use crate::gather;
use crate::locks::ReadWriteLocked;
use crate::protocol::lsp::{
    DebugAgentsMdConfig, DebugAgentsMdParams, DebugConfig, DebugDocumentParams,
    DebugDocumentResult, DebugSyntaxConfig, DebugSyntaxParams, DebugSyntaxResult,
    DebugWorkspaceResult, EnclosingSymbol, TokenizerState,
};
use crate::protocol::Json;
use agentls_core::agents_md::AgentsChain;
use agentls_core::document::DocumentSnapshot;
use agentls_core::position;
use agentls_core::syntax;
use serde_json::{json, Value};
use std::path::Path;
use tower_lsp::jsonrpc;
use tower_lsp::lsp_types::{Position, Url};

impl Backend {
    pub(super) async fn snapshot(&self, uri: &Url) -> jsonrpc::Result<DocumentSnapshot> {
        self.state
            .documents
            .snapshot(uri)
            .await
            .ok_or_else(|| invalid_params(format!("unknown document {uri}: it is not open")))
    }

    pub(super) fn to_byte(
        &self,
        uri: &Url,
        doc: &DocumentSnapshot,
        position: Position,
    ) -> jsonrpc::Result<usize> {
        position::position_to_byte(&doc.rope, position, self.state.encoding())
            .map_err(|err| invalid_params(format!("{uri}: {err}")))
    }

    pub(super) async fn debug_document(
        &self,
        params: DebugDocumentParams,
    ) -> jsonrpc::Result<DebugDocumentResult> {
        let doc = self.snapshot(&params.uri).await?;
        let encoding = self.state.encoding();
        let text = doc.rope.to_string();
        let outline = match &doc.tree {
            Some(tree) => syntax::outline(doc.language, text.as_bytes(), tree),
            None => Vec::new(),
        };
        let outline = outline
            .iter()
            .map(|s| Json::new(symbol_json(&doc, s, encoding, 0)))
            .collect();
        Ok(DebugDocumentResult {
            line_count: position::line_count(&doc.rope),
            has_syntax_tree: doc.tree.is_some(),
            syntax_errors: doc.tree.as_ref().is_some_and(|t| t.root_node().has_error()),
            sexp: params
                .sexp
                .then(|| doc.tree.as_ref().map(|t| t.root_node().to_sexp())),
            uri: params.uri,
            text,
            version: doc.version,
            language: doc.language.id().to_string(),
            position_encoding: encoding.kind(),
            parses: doc.parses,
            outline,
        })
    }

    pub(super) async fn debug_syntax(
        &self,
        params: DebugSyntaxParams,
    ) -> jsonrpc::Result<DebugSyntaxResult> {
        let uri = &params.uri;
        let doc = self.snapshot(uri).await?;
        let encoding = self.state.encoding();
        let text = doc.rope.to_string();
        let mut result = DebugSyntaxResult {
            enclosing_symbol: None,
            identifiers: Json::new(json!([])),
        };
        let Some(tree) = &doc.tree else {
            return Ok(result);
        };
        if let Some(position) = params.position {
            let byte = self.to_byte(uri, &doc, position)?;
            if let Some(found) = syntax::enclosing_symbol(doc.language, text.as_bytes(), tree, byte)
            {
                result.enclosing_symbol = Some(EnclosingSymbol {
                    name: found.name,
                    kind: found.kind,
                    path: found.path,
                    range: position::byte_range_to_range(&doc.rope, found.range, encoding),
                    text: found.text,
                });
            }
        }
        if let Some(range) = params.range {
            let start = self.to_byte(uri, &doc, range.start)?;
            let end = self.to_byte(uri, &doc, range.end)?;
            let identifiers =
                syntax::referenced_identifiers(doc.language, text.as_bytes(), tree, start..end);
            result.identifiers = Json::new(json!(identifiers));
        }
        Ok(result)
    }

    pub(super) async fn debug_agents_md(
        &self,
        params: DebugAgentsMdParams,
    ) -> jsonrpc::Result<AgentsChain> {
        let dir = match params.uri {
            Some(uri) => {
                let path = uri
                    .to_file_path()
                    .map_err(|()| invalid_params(format!("{uri} is not a file: uri")))?;
                self.check_in_workspace(&path)?;
                if path.is_dir() {
                    path
                } else {
                    path.parent().map(Path::to_path_buf).unwrap_or(path)
                }
            }
            None => match self.state.index.roots().first() {
                Some(root) => root.clone(),
                None => return Err(invalid_params("no uri given and no workspace root")),
            },
        };
        // Only the AGENTS.md buffers: a glance at every buffer would reparse the edited ones.
        let buffers = self
            .state
            .documents
            .matching(|uri| {
                uri.to_file_path()
                    .is_ok_and(|p| agentls_core::agents_md::is_instruction_file(&p))
            })
            .await;
        Ok(gather::agents_chain(self, &self.state.config(), dir, &buffers).await)
    }

    pub(super) async fn debug_workspace(&self, _: Value) -> jsonrpc::Result<DebugWorkspaceResult> {
        let index = self.state.index.state();
        let config = self.state.config();
        let support = *self.state.support.read_locked();
        Ok(DebugWorkspaceResult {
            roots: index.roots,
            status: Json::new(json!(index.status)),
            file_count: index.files.len(),
            index_millis: index.elapsed_ms,
            position_encoding: self.state.encoding().kind(),
            agents_md_cached: support.watched_files_registration,
            symbols: Json::new(
                serde_json::to_value(self.state.symbols.status()).unwrap_or_default(),
            ),
            tokenizer: TokenizerState {
                name: config.tokenizer().name().to_string(),
                built: config.tokenizer().is_built(),
            },
            config: DebugConfig {
                agents_md: DebugAgentsMdConfig {
                    max_bytes: config.agents_md_max_bytes,
                },
                syntax: DebugSyntaxConfig {
                    max_document_bytes: config.syntax_max_document_bytes,
                },
            },
        })
    }
}
