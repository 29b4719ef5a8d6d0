//! What only tests, benchmarks and the demo use: the scripted provider, the LSP test client,
//! the demo session, the benchmarks and the compaction eval. The server's own modules never
//! import from here outside their tests.

pub mod bench;
pub mod bench_compaction;
pub mod bench_context;
pub mod bench_memory;
pub mod bench_stream;
pub mod bench_subagent;
pub mod demo;
pub mod eval_compaction;
pub mod fake_provider;
pub mod lsp_client;
pub mod null_server;
