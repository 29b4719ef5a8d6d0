//! The process's one TLS choice: rustls with ring. reqwest 0.13 is built with
//! `rustls-no-provider` (no aws-lc, no OpenSSL), so ring must be installed as rustls's default
//! crypto provider before any HTTPS client is built: the providers' clients here and the MCP
//! streamable-HTTP clients that rmcp builds.

use std::sync::Once;

/// Installs ring as the process's rustls crypto provider; idempotent and cheap after the
/// first call.
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Err only if another provider was installed first, which is equally fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
