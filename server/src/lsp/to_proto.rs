//! Pure conversions from the core's data to LSP types.

use agentls_core::document::DocumentSnapshot;
use agentls_core::position::{self, PositionEncoding};
use agentls_core::syntax;
use serde_json::{json, Value};
use std::collections::HashMap;
use tower_lsp::lsp_types::*;

use super::ClientSupport;
use crate::host::FileChange;

/// Outline levels reported; deeper children are cut so that converting and serializing a
/// pathological nesting (thousands of nested modules) cannot exhaust the stack, and the
/// answer stays within the nesting limits of JSON parsers (serde_json stops at 128).
pub(super) const MAX_OUTLINE_DEPTH: usize = 32;

pub(super) fn symbol_json(
    doc: &DocumentSnapshot,
    symbol: &syntax::Symbol,
    encoding: PositionEncoding,
    depth: usize,
) -> Value {
    let children: Vec<Value> = if depth + 1 < MAX_OUTLINE_DEPTH {
        symbol
            .children
            .iter()
            .map(|c| symbol_json(doc, c, encoding, depth + 1))
            .collect()
    } else {
        Vec::new()
    };
    json!({
        "name": symbol.name,
        "kind": symbol.kind,
        "range": position::byte_range_to_range(&doc.rope, symbol.range.clone(), encoding),
        "selectionRange": position::byte_range_to_range(&doc.rope, symbol.selection_range.clone(), encoding),
        "children": children,
    })
}

/// The `workspace/applyEdit` edit for a planned change, in the client's position encoding
/// and in the shape it supports (document changes with a create operation, or plain
/// changes); Err when the client cannot express it.
pub(super) fn workspace_edit(
    change: FileChange,
    encoding: PositionEncoding,
    support: ClientSupport,
) -> Result<WorkspaceEdit, String> {
    let planned = text_edit(change, encoding);
    let uri = Url::from_file_path(&planned.path)
        .map_err(|()| format!("{} has no file: uri", planned.path.display()))?;
    if support.document_changes {
        document_changes(uri, planned, support)
    } else if planned.create {
        Err(
            "the editor cannot create files through workspace/applyEdit (no documentChanges)"
                .into(),
        )
    } else {
        Ok(WorkspaceEdit {
            changes: Some(HashMap::from([(uri, vec![planned.edit])])),
            ..Default::default()
        })
    }
}

/// A change as one LSP text edit of its file.
struct PlannedEdit {
    path: std::path::PathBuf,
    /// The open buffer's version it was planned against.
    version: Option<i32>,
    edit: TextEdit,
    /// The file does not exist yet.
    create: bool,
}

fn text_edit(change: FileChange, encoding: PositionEncoding) -> PlannedEdit {
    match change {
        FileChange::Edit {
            path,
            version,
            original,
            range,
            new_text,
        } => {
            let rope = ropey::Rope::from_str(&original);
            let range = position::byte_range_to_range(&rope, range, encoding);
            PlannedEdit {
                path,
                version,
                edit: TextEdit { range, new_text },
                create: false,
            }
        }
        FileChange::Write {
            path,
            version,
            original,
            content,
        } => {
            let create = original.is_none();
            let rope = ropey::Rope::from_str(original.as_deref().unwrap_or(""));
            let end = position::byte_to_position(&rope, rope.len_bytes(), encoding);
            PlannedEdit {
                path,
                version,
                edit: TextEdit {
                    range: Range::new(Position::new(0, 0), end),
                    new_text: content,
                },
                create,
            }
        }
    }
}

/// The edit as document changes: a versioned text document edit, after a `CreateFile` for
/// a new file.
fn document_changes(
    uri: Url,
    planned: PlannedEdit,
    support: ClientSupport,
) -> Result<WorkspaceEdit, String> {
    let mut operations = Vec::new();
    if planned.create {
        if !support.create_files {
            return Err("the editor cannot create files through workspace/applyEdit (no resourceOperations: create)".into());
        }
        operations.push(DocumentChangeOperation::Op(ResourceOp::Create(
            CreateFile {
                uri: uri.clone(),
                options: Some(CreateFileOptions {
                    overwrite: Some(false),
                    ignore_if_exists: Some(true),
                }),
                annotation_id: None,
            },
        )));
    }
    operations.push(DocumentChangeOperation::Edit(TextDocumentEdit {
        text_document: OptionalVersionedTextDocumentIdentifier {
            uri,
            version: planned.version,
        },
        edits: vec![OneOf::Left(planned.edit)],
    }));
    Ok(WorkspaceEdit {
        document_changes: Some(DocumentChanges::Operations(operations)),
        ..Default::default()
    })
}
