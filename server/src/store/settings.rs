//! The user settings file, `~/.config/agentls/settings.json` (`$XDG_CONFIG_HOME/agentls/…`
//! when that is set): the keys of `initializationOptions`, read by every mode (LSP, `acp`,
//! `ask`), under what the editor or `--config` gives (`config::merge_settings`).

use std::path::PathBuf;

use serde_json::Value;

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
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Value::Null),
        Err(err) => return Err(format!("cannot read {}: {err}", path.display())),
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err(format!("{} is not a JSON object", path.display())),
        Err(err) => Err(format!("{} is not JSON: {err}", path.display())),
    }
}
