//! Pieces of params and results that are not one method's own: the session id both front
//! doors take, and the schema of the LSP base types an `EditorState` carries (lsp-types
//! derives no schema).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `{sessionId}`: the params of the requests that name only a session, in both protocols
/// (`agent/session/load`, `agent/session/cancel`, …; ACP's `session/cancel`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionIdParams {
    pub session_id: String,
}

/// The schema of `agentls_core::editor_state::EditorState` (what the editor shows, sent
/// with a prompt and with `agent/session/context`). Schema only: the server reads the core
/// type; `tests::editor_state_matches_the_core_type` holds the two together.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EditorState {
    pub uri: String,
    pub position: Position,
    #[serde(default)]
    pub selection: Option<Range>,
    #[serde(default)]
    pub visible_range: Option<Range>,
    #[serde(default)]
    pub diagnostics: Option<Vec<Diagnostic>>,
}

/// An LSP position, in the negotiated encoding.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Position {
    pub line: u32,
    pub character: u32,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Range {
    pub start: Position,
    pub end: Position,
}

/// The fields of an LSP diagnostic the server reads (others are accepted and ignored).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Diagnostic {
    pub range: Range,
    /// 1 error, 2 warning, 3 information, 4 hint.
    #[serde(default)]
    pub severity: Option<DiagnosticSeverity>,
    pub message: String,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub code: Option<DiagnosticCode>,
}

/// An LSP `DiagnosticSeverity` (1 to 4).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct DiagnosticSeverity(#[schemars(range(min = 1, max = 4))] pub u8);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum DiagnosticCode {
    Number(i32),
    String(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_types::{NumberOrString, Url};

    /// Every field of the core's `EditorState` is in the schema type, with the same shape:
    /// a field added to the core type breaks this literal, a renamed one the parse.
    #[test]
    fn editor_state_matches_the_core_type() {
        let position = lsp_types::Position::new(1, 2);
        let range = lsp_types::Range::new(position, position);
        let core = agentls_core::editor_state::EditorState {
            uri: Url::parse("file:///w/a.rs").unwrap(),
            position,
            selection: Some(range),
            visible_range: Some(range),
            diagnostics: vec![lsp_types::Diagnostic {
                range,
                severity: Some(lsp_types::DiagnosticSeverity::WARNING),
                code: Some(NumberOrString::String("E1".into())),
                source: Some("rustc".into()),
                message: "unused".into(),
                ..Default::default()
            }],
        };
        let wire = serde_json::to_value(&core).unwrap();
        let parsed: EditorState = serde_json::from_value(wire).unwrap();
        assert_eq!(parsed.diagnostics.map(|d| d.len()), Some(1));
    }
}
