//! Fixtures the core's unit tests share.

use serde_json::Value;

use crate::mcp;
use crate::tool_info::{LedgerRecord, ToolCatalog, ToolKind};

/// A catalog of the built-in tools' names for the core's own tests (the real one is the
/// server's registry): kinds and records as declared there, the name as title.
pub(crate) struct TestTools;

impl ToolCatalog for TestTools {
    fn kind(&self, tool: &str, _arguments: &serde_json::Value) -> ToolKind {
        match tool {
            "read_file" | "list_dir" => ToolKind::Read,
            "grep" => ToolKind::Search,
            "edit_file" | "write_file" => ToolKind::Edit,
            "shell" => ToolKind::Execute,
            _ => ToolKind::Other,
        }
    }

    fn title(&self, tool: &str, _arguments: &Value) -> String {
        tool.to_string()
    }

    fn ledger_record(&self, tool: &str) -> LedgerRecord {
        match tool {
            "read_file" => LedgerRecord::FileRead,
            "edit_file" => LedgerRecord::FileEdit,
            "write_file" => LedgerRecord::FileWrite,
            "shell" => LedgerRecord::Command,
            name if name.starts_with(mcp::names::PREFIX) => LedgerRecord::ExternalCall,
            _ => LedgerRecord::Nothing,
        }
    }
}
