//! agentls's dev kit, never shipped: the scripted provider, the LSP test client, the demo
//! session, the benchmarks and the compaction eval, and the `agentls-dev` command line that
//! runs them. agentls's own tests use it as a dev-dependency; agentls never depends on it.

pub mod args;
pub mod bench;
pub mod bench_checkpoint;
pub mod bench_compaction;
pub mod bench_context;
pub mod bench_flood;
pub mod bench_images;
pub mod bench_index;
pub mod bench_memory;
pub mod bench_prefix;
pub mod bench_review;
pub mod bench_sandbox;
pub mod bench_stream;
pub mod bench_subagent;
pub mod definition_truth;
pub mod demo;
pub mod eval_compaction;
pub mod eval_definitions;
pub mod fake_provider;
pub mod lsp_client;
pub mod null_server;
