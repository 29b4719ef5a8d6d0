//! How large one incoming message may be, for both front doors: an LSP frame and an ACP
//! line are refused above it, before they are held whole.

/// The environment variable that sets the largest message accepted, in bytes.
pub const MAX_FRAME_ENV: &str = "AGENTLS_MAX_FRAME_BYTES";
/// The default largest message: far above a 20 MB document sent whole in a didOpen.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 128 * 1024 * 1024;

/// The limit from `AGENTLS_MAX_FRAME_BYTES`, else the default.
pub fn max_frame_bytes() -> usize {
    match std::env::var(MAX_FRAME_ENV) {
        Ok(value) => match value.trim().parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => {
                tracing::warn!(
                    "{MAX_FRAME_ENV}={value:?} is not a positive integer; using {DEFAULT_MAX_FRAME_BYTES}"
                );
                DEFAULT_MAX_FRAME_BYTES
            }
        },
        Err(_) => DEFAULT_MAX_FRAME_BYTES,
    }
}
