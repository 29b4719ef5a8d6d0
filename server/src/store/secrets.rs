//! Secrets of the process environment: read once at start-up (`take_from_environment`, the
//! first thing `main` does), kept here for the provider, and wiped from the process's initial
//! environment block so no tool process can read them back.
//!
//! Why the wipe: `/proc/PID/environ` shows the bytes between the kernel's `env_start` and
//! `env_end`, the strings the process was started with. `remove_var`/`set_var` never change
//! those bytes, so a command run by the shell tool could print the key with
//! `cat /proc/$PPID/environ` even though its own environment was scrubbed. The values are
//! overwritten in place (zeros) through the initial `environ` pointers, before any thread
//! starts; each variable is then set again, as a heap copy the kernel does not show, so the
//! process's environment (and what child processes inherit, minus the shell tool's
//! `hidden_env`) is what it was.
//!
//! Which variables: every name ending in `_KEY`, `_TOKEN`, `_SECRET` or `_PASSWORD` (case
//! insensitive). That covers the provider defaults (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`) and
//! the usual names of a configured `provider.apiKeyEnv`. A `provider.apiKeyEnv` under another
//! name arrives with the configuration, after threads started: `capture_named` makes a heap
//! copy through std's locked `setenv`, then zeroes the initial block's bytes, before the
//! first hook, command or MCP server starts (`Agent::hidden_env`).
//! Every value held here (and any key the provider read otherwise) is also redacted from tool
//! outputs before they are recorded (`redact`).

use crate::locks::ReadWriteLocked;
use std::borrow::Cow;
use std::sync::RwLock;

/// (name, value) of the captured variables, and the values the provider read elsewhere
/// (with an empty name).
static SECRETS: RwLock<Vec<(String, String)>> = RwLock::new(Vec::new());

/// Every entry of the initial environment block (address, length of `NAME=value`), taken at
/// start-up: a variable that settings name as a secret later (`apiKeyEnv` without a secret's
/// suffix) is wiped there too. The block is never freed.
static INITIAL_BLOCK: std::sync::Mutex<Vec<(usize, usize)>> = std::sync::Mutex::new(Vec::new());

pub use agentls_core::redact::secret_name;

/// Captures the secret variables and wipes their values from the initial environment block.
/// Call it first thing in `main`, before any thread starts (it changes the environment).
/// Returns the names captured.
pub fn take_from_environment() -> Vec<String> {
    #[cfg(target_os = "linux")]
    // SAFETY: single-threaded start-up; nothing else reads or writes the environment.
    let found = unsafe { wipe_initial_environment() };
    #[cfg(not(target_os = "linux"))]
    let found: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os()
        .filter(|(name, value)| secret_name(name.as_encoded_bytes()) && !value.is_empty())
        .collect();
    let mut names = Vec::new();
    let mut secrets = SECRETS.write_locked();
    for (name, value) in found {
        // Back into the environment as a heap copy (`setenv`): what children inherit and
        // what `std::env` answers stay the same; the initial block keeps only zeros.
        std::env::set_var(&name, &value);
        if let (Some(name), Some(value)) = (name.to_str(), value.to_str()) {
            names.push(name.to_string());
            secrets.push((name.to_string(), value.to_string()));
        }
    }
    names
}

/// Overwrites, in place, the value of every secret variable in the initial environment
/// block, and returns (name, value) of each.
///
/// # Safety
/// No other thread may touch the environment meanwhile.
#[cfg(target_os = "linux")]
unsafe fn wipe_initial_environment() -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    use std::os::unix::ffi::OsStringExt;
    extern "C" {
        static mut environ: *const *mut libc::c_char;
    }
    let mut found = Vec::new();
    let mut entry = std::ptr::addr_of!(environ).read();
    if entry.is_null() {
        return found;
    }
    let mut block = crate::locks::Locked::locked(&INITIAL_BLOCK);
    while !(*entry).is_null() {
        let start = (*entry).cast::<u8>();
        let len = libc::strlen(*entry);
        block.push((start as usize, len));
        let split = {
            let bytes = std::slice::from_raw_parts(start, len);
            bytes.iter().position(|&b| b == b'=').and_then(|eq| {
                (eq > 0 && eq + 1 < len && secret_name(&bytes[..eq])).then(|| {
                    found.push((
                        std::ffi::OsString::from_vec(bytes[..eq].to_vec()),
                        std::ffi::OsString::from_vec(bytes[eq + 1..].to_vec()),
                    ));
                    eq
                })
            })
        };
        if let Some(eq) = split {
            for i in eq + 1..len {
                std::ptr::write_volatile(start.add(i), 0);
            }
        }
        entry = entry.add(1);
    }
    found
}

/// Captures `name` as a secret although its name has no secret's suffix (the provider's
/// `apiKeyEnv` set to `LLM_CRED`, say): its value joins the redaction set and is wiped from
/// the initial environment block, as `take_from_environment` does at start-up, so a hook or
/// command cannot read it back through `/proc/$PPID/environ`. Call it before any child that
/// should not see it starts; later calls are cheap.
pub fn capture_named(name: &str) {
    if name.is_empty() || secret_name(name.as_bytes()) || get(name).is_some() {
        return;
    }
    let Some(value) = std::env::var_os(name).filter(|v| !v.is_empty()) else {
        return;
    };
    // A heap copy first (std's `setenv` under its environment lock): `environ` then points
    // away from the initial block, whose bytes can be zeroed without a reader in them.
    std::env::set_var(name, &value);
    #[cfg(target_os = "linux")]
    {
        let prefix = format!("{name}=");
        let block = crate::locks::Locked::locked(&INITIAL_BLOCK);
        for &(start, len) in block.iter() {
            let start = start as *mut u8;
            // SAFETY: the initial block lives as long as the process; `len` was measured at
            // start-up and its bytes are only ever zeroed, never shortened.
            let bytes = unsafe { std::slice::from_raw_parts(start, len) };
            if bytes.starts_with(prefix.as_bytes()) {
                for i in prefix.len()..len {
                    // SAFETY: within the entry measured above.
                    unsafe { std::ptr::write_volatile(start.add(i), 0) };
                }
            }
        }
    }
    if let Some(value) = value.to_str() {
        SECRETS
            .write_locked()
            .push((name.to_string(), value.to_string()));
    }
}

/// The names of the captured secret variables (at start-up, and by `capture_named`).
pub fn captured_names() -> Vec<String> {
    SECRETS
        .read_locked()
        .iter()
        .filter(|(name, _)| !name.is_empty())
        .map(|(name, _)| name.clone())
        .collect()
}

/// The value captured at start-up for `name`.
pub fn get(name: &str) -> Option<String> {
    let secrets = SECRETS.read_locked();
    secrets
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, value)| value.clone())
}

/// Adds a secret read elsewhere (a key the provider found in the environment), to be
/// redacted like the captured ones.
pub fn remember(value: &str) {
    let mut secrets = SECRETS.write_locked();
    if !secrets.iter().any(|(_, v)| v == value) {
        secrets.push((String::new(), value.to_string()));
    }
}

/// `remember`, for a value given to someone else (an MCP server's env or header): a value
/// shorter than `agentls_core::redact::MIN_SECRET_LEN` (8 bytes) once trimmed is not kept,
/// since redaction would never cut it (it would match ordinary text).
pub fn remember_long(value: &str) {
    if value.trim().len() >= agentls_core::redact::MIN_SECRET_LEN {
        remember(value);
    }
}

/// Whether `value` is one of the values redaction protects (a captured or remembered
/// secret, at least `MIN_SECRET_LEN` long).
pub fn is_known(value: &str) -> bool {
    let value = value.trim();
    value.len() >= agentls_core::redact::MIN_SECRET_LEN
        && SECRETS.read_locked().iter().any(|(_, v)| v.trim() == value)
}

/// `text` with every known secret value replaced by `[redacted]` (see `agentls_core::redact`).
pub fn redact(text: &str) -> Cow<'_, str> {
    let secrets = SECRETS.read_locked();
    if secrets.is_empty() {
        return Cow::Borrowed(text);
    }
    let values: Vec<String> = secrets
        .iter()
        .flat_map(|(_, v)| [v.clone(), v.trim().to_string()])
        .collect();
    match agentls_core::redact::redact(text, &values) {
        Cow::Borrowed(_) => Cow::Borrowed(text),
        Cow::Owned(text) => Cow::Owned(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names_are_the_usual_key_and_token_suffixes() {
        for name in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "GROQ_KEY",
            "GITHUB_TOKEN",
            "my_secret",
            "DB_PASSWORD",
        ] {
            assert!(secret_name(name.as_bytes()), "{name}");
        }
        for name in ["PATH", "HOME", "KEY", "_TOKEN", "KEYBOARD", "AGENTLS_LOG"] {
            assert!(!secret_name(name.as_bytes()), "{name}");
        }
    }

    #[test]
    fn remembered_values_are_redacted() {
        remember("  agentls-unit-secret-1234 ");
        assert_eq!(
            redact("key: agentls-unit-secret-1234\n"),
            "key: [redacted]\n"
        );
        assert!(matches!(redact("nothing"), Cow::Borrowed(_)));
    }
}
