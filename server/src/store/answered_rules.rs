//! The permission rules a workspace's "always" answers wrote (`permissions.rememberAlways:
//! "workspace"`): `<stateDir>/permissions/<folder>-<digest>.json`, `{"allow": […], "deny":
//! […]}` in the rules' syntax, outside the repository (a repository cannot write one) and
//! private like the session logs.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use agentls_core::permission_rules::{PermissionLists, RuleAction};

use super::untrusted_file::{read_config_file, ConfigRead, MAX_CONFIG_FILE_BYTES};

/// The file of `root`'s answered rules.
pub fn path(state_dir: Option<&Path>, root: &Path) -> PathBuf {
    super::workspace_state::file(state_dir, root, "permissions", ".json")
}

/// The rules the file holds (none when it is missing); Err says why it cannot be read.
pub fn read(path: &Path) -> Result<PermissionLists, String> {
    let root = path.parent().unwrap_or(path);
    let text = match read_config_file(path, Some(root), MAX_CONFIG_FILE_BYTES) {
        ConfigRead::Text(text) => text,
        ConfigRead::Missing => return Ok(PermissionLists::default()),
        ConfigRead::Refused(why) => return Err(format!("cannot read {}: {why}", path.display())),
    };
    let value: Value = serde_json::from_str(&text)
        .map_err(|err| format!("{} is not JSON: {err}", path.display()))?;
    let list = |name: &str| -> Vec<String> {
        value[name]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|item| item.as_str().map(str::to_string))
            .collect()
    };
    Ok(PermissionLists {
        allow: list("allow"),
        ask: Vec::new(),
        deny: list("deny"),
    })
}

/// Adds `rule` to the file's allow or deny list (once), taking it out of the other.
pub fn add(path: &Path, action: RuleAction, rule: &str) -> Result<(), String> {
    let mut lists = read(path)?;
    let (into, from) = match action {
        RuleAction::Deny => (&mut lists.deny, &mut lists.allow),
        _ => (&mut lists.allow, &mut lists.deny),
    };
    from.retain(|kept| kept != rule);
    if !into.iter().any(|kept| kept == rule) {
        into.push(rule.to_string());
    }
    let text = serde_json::to_string_pretty(&json!({"allow": lists.allow, "deny": lists.deny}))
        .unwrap_or_default();
    super::workspace_state::write_private(path, &format!("{text}\n"))
        .map_err(|err| format!("cannot write {}: {err}", path.display()))
}
