// The custom part of the agentls protocol (docs/protocol.md), as types. They are generated
// from the server's Rust types (server/src/protocol/lsp.rs) into protocol.generated.ts, and
// a server test fails when that file is out of date: change the Rust, never these types.
// Kept free of `vscode` imports so that both the extension and the plain-Node tests can use
// it.

export * from './protocol.generated';
