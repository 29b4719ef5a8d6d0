//! `EditorState`, what a client sends about the editor with a prompt or a context request,
//! and its translation from LSP positions (in the negotiated encoding) to byte offsets in a
//! document. Out-of-range positions clamp: the editor state is a hint, never a reason to
//! fail a turn.

use lsp_types::{Diagnostic, DiagnosticSeverity, NumberOrString, Position, Range, Url};
use ropey::Rope;

use crate::editor_context::{EditorDiagnostic, Severity};
use crate::position::{self, PositionEncoding};

#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EditorState {
    pub uri: Url,
    pub position: Position,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selection: Option<Range>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visible_range: Option<Range>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<Diagnostic>,
}

/// An editor state in byte offsets of one document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedEditor {
    pub cursor: usize,
    /// None when there is no selection or it is empty.
    pub selection: Option<std::ops::Range<usize>>,
    pub visible: Option<std::ops::Range<usize>>,
    pub diagnostics: Vec<EditorDiagnostic>,
}

pub fn resolve(state: &EditorState, rope: &Rope, encoding: PositionEncoding) -> ResolvedEditor {
    let selection = state
        .selection
        .map(|r| position::range_to_bytes_clamped(rope, r, encoding))
        .filter(|r| !r.is_empty());
    let diagnostics = state
        .diagnostics
        .iter()
        .map(|d| EditorDiagnostic {
            severity: match d.severity {
                Some(DiagnosticSeverity::WARNING) => Severity::Warning,
                Some(DiagnosticSeverity::INFORMATION) => Severity::Information,
                Some(DiagnosticSeverity::HINT) => Severity::Hint,
                // Absent severity: the client's default, which is error in every editor.
                _ => Severity::Error,
            },
            range: position::range_to_bytes_clamped(rope, d.range, encoding),
            message: d.message.clone(),
            source: d.source.clone(),
            code: d.code.as_ref().map(|c| match c {
                NumberOrString::Number(n) => n.to_string(),
                NumberOrString::String(s) => s.clone(),
            }),
        })
        .collect();
    ResolvedEditor {
        cursor: position::position_to_byte_clamped(rope, state.position, encoding),
        selection,
        visible: state
            .visible_range
            .map(|r| position::range_to_bytes_clamped(rope, r, encoding)),
        diagnostics,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn state(value: serde_json::Value) -> EditorState {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn positions_become_bytes_in_the_negotiated_encoding_and_clamp() {
        let rope = Rope::from_str("héllo\nwörld\n");
        let s = state(json!({
            "uri": "file:///w/a.txt",
            "position": {"line": 1, "character": 2},
            "selection": {"start": {"line": 9, "character": 0}, "end": {"line": 0, "character": 99}},
            "diagnostics": [{"range": {"start": {"line": 0, "character": 1}, "end": {"line": 0, "character": 2}},
                             "message": "m", "code": 42}]
        }));
        let utf16 = resolve(&s, &rope, PositionEncoding::Utf16);
        // Line 1 starts at byte 7; 2 UTF-16 units are "wö", 3 bytes.
        assert_eq!(utf16.cursor, 7 + 3);
        // Reversed and past the end: the right way round, clamped ("héllo" is 6 bytes).
        assert_eq!(utf16.selection, Some(6..rope.len_bytes()));
        assert_eq!(utf16.diagnostics[0].range, 1..3);
        assert_eq!(utf16.diagnostics[0].severity, Severity::Error);
        assert_eq!(utf16.diagnostics[0].code.as_deref(), Some("42"));
        let utf8 = resolve(&s, &rope, PositionEncoding::Utf8);
        assert_eq!(utf8.cursor, 7 + 1); // byte 2 of "wö" is inside ö: rounds down
    }

    #[test]
    fn an_empty_selection_is_no_selection() {
        let rope = Rope::from_str("abc");
        let s = state(json!({
            "uri": "file:///w/a.txt",
            "position": {"line": 0, "character": 1},
            "selection": {"start": {"line": 0, "character": 1}, "end": {"line": 0, "character": 1}}
        }));
        assert_eq!(resolve(&s, &rope, PositionEncoding::Utf16).selection, None);
    }
}
