//! The user settings file, `~/.config/agentls/settings.json` (`$XDG_CONFIG_HOME/agentls/…`
//! when that is set): the keys of `initializationOptions`, read by every mode (LSP, `acp`,
//! `ask`), under what the editor or `--config` gives (`config::merge_settings`).

use std::path::PathBuf;

use serde_json::Value;

use super::untrusted_file::{read_config_file, ConfigRead, MAX_CONFIG_FILE_BYTES};

/// Where the user settings file is, if there is a home to find it in.
pub fn path() -> Option<PathBuf> {
    super::user_config::path("settings.json")
}

/// The user settings: Null when there is no file; Err naming the file when it cannot be
/// read or is not a JSON object.
pub fn read() -> Result<Value, String> {
    let Some(path) = path() else {
        return Ok(Value::Null);
    };
    // Only a regular file inside the user's configuration directory.
    let root = path.parent().unwrap_or(&path);
    let text = match read_config_file(&path, Some(root), MAX_CONFIG_FILE_BYTES) {
        ConfigRead::Text(text) => text,
        ConfigRead::Missing => return Ok(Value::Null),
        ConfigRead::Refused(why) => return Err(format!("cannot read {}: {why}", path.display())),
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err(format!("{} is not a JSON object", path.display())),
        Err(err) => Err(format!("{} is not JSON: {err}", path.display())),
    }
}
