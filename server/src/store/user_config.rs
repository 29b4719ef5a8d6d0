//! The user's agentls configuration directory: `$XDG_CONFIG_HOME/agentls`, else
//! `~/.config/agentls`. The one place that rule lives: settings, hooks, commands, subagents
//! and prompt overrides are all found under it.

use std::path::PathBuf;

/// `<config home>/agentls/<name>`; None when neither `XDG_CONFIG_HOME` nor `HOME` is set.
pub fn path(name: &str) -> Option<PathBuf> {
    let config_home = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|home| PathBuf::from(home).join(".config"))
        })?;
    Some(config_home.join("agentls").join(name))
}
