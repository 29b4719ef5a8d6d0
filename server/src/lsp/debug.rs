//! The `agentls/debug/*` requests: what the server knows of a document, its syntax, the
//! AGENTS.md chain and the workspace, for tests and bug reports.

use super::*;
use crate::gather;
use agentls_core::document::DocumentSnapshot;
use agentls_core::position;
use agentls_core::syntax;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::path::Path;
use tower_lsp::jsonrpc;
use tower_lsp::lsp_types::*;

#[derive(Deserialize)]
pub(super) struct DebugDocumentParams {
    pub(super) uri: Url,
    /// Include the syntax tree as an s-expression.
    #[serde(default)]
    pub(super) sexp: bool,
}

#[derive(Deserialize)]
pub(super) struct DebugSyntaxParams {
    pub(super) uri: Url,
    pub(super) position: Option<Position>,
    pub(super) range: Option<tower_lsp::lsp_types::Range>,
}

#[derive(Deserialize, Serialize)]
pub(super) struct DebugAgentsMdParams {
    pub(super) uri: Option<Url>,
}

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
    ) -> jsonrpc::Result<Value> {
        let doc = self.snapshot(&params.uri).await?;
        let encoding = self.state.encoding();
        let text = doc.rope.to_string();
        let outline = match &doc.tree {
            Some(tree) => syntax::outline(doc.language, text.as_bytes(), tree),
            None => Vec::new(),
        };
        let outline: Vec<Value> = outline
            .iter()
            .map(|s| symbol_json(&doc, s, encoding, 0))
            .collect();
        let mut result = json!({
            "uri": params.uri,
            "text": text,
            "version": doc.version,
            "language": doc.language.id(),
            "positionEncoding": encoding.kind(),
            "lineCount": position::line_count(&doc.rope),
            "hasSyntaxTree": doc.tree.is_some(),
            "parses": doc.parses,
            "syntaxErrors": doc.tree.as_ref().is_some_and(|t| t.root_node().has_error()),
            "outline": outline,
        });
        if params.sexp {
            result["sexp"] = json!(doc.tree.as_ref().map(|t| t.root_node().to_sexp()));
        }
        Ok(result)
    }

    pub(super) async fn debug_syntax(&self, params: DebugSyntaxParams) -> jsonrpc::Result<Value> {
        let uri = &params.uri;
        let doc = self.snapshot(uri).await?;
        let encoding = self.state.encoding();
        let text = doc.rope.to_string();
        let mut result = json!({ "enclosingSymbol": null, "identifiers": [] });
        let Some(tree) = &doc.tree else {
            return Ok(result);
        };
        if let Some(position) = params.position {
            let byte = self.to_byte(uri, &doc, position)?;
            if let Some(found) = syntax::enclosing_symbol(doc.language, text.as_bytes(), tree, byte)
            {
                result["enclosingSymbol"] = json!({
                    "name": found.name,
                    "kind": found.kind,
                    "path": found.path,
                    "range": position::byte_range_to_range(&doc.rope, found.range, encoding),
                    "text": found.text,
                });
            }
        }
        if let Some(range) = params.range {
            let start = self.to_byte(uri, &doc, range.start)?;
            let end = self.to_byte(uri, &doc, range.end)?;
            let identifiers =
                syntax::referenced_identifiers(doc.language, text.as_bytes(), tree, start..end);
            result["identifiers"] = json!(identifiers);
        }
        Ok(result)
    }

    pub(super) async fn debug_agents_md(
        &self,
        params: DebugAgentsMdParams,
    ) -> jsonrpc::Result<Value> {
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
        let chain = gather::agents_chain(self, &self.state.config(), dir, &buffers).await;
        serde_json::to_value(chain).map_err(|err| jsonrpc::Error {
            code: jsonrpc::ErrorCode::InternalError,
            message: err.to_string().into(),
            data: None,
        })
    }

    pub(super) async fn debug_workspace(&self, _: Value) -> jsonrpc::Result<Value> {
        let index = self.state.index.state();
        let config = self.state.config();
        Ok(json!({
            "roots": index.roots,
            "status": index.status,
            "fileCount": index.files.len(),
            "indexMillis": index.elapsed_ms,
            "positionEncoding": self.state.encoding().kind(),
            "agentsMdCached": self.state.support.read().unwrap_or_else(|e| e.into_inner()).watched_files_registration,
            // Whether the model's vocabulary is built (at `initialized`, in the background).
            "tokenizer": { "name": config.tokenizer().name(), "built": config.tokenizer().is_built() },
            "config": {
                "agentsMd": { "maxBytes": config.agents_md_max_bytes },
                "syntax": { "maxDocumentBytes": config.syntax_max_document_bytes },
            },
        }))
    }
}
