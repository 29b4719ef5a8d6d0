//! Pure conversions from the core's data to LSP types.

use agentls_core::document::DocumentSnapshot;
use agentls_core::position::{self, PositionEncoding};
use agentls_core::syntax;
use serde_json::{json, Value};

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
