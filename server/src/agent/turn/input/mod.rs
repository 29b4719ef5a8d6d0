//! What a prompt becomes before the model sees it: a custom command expanded (with its
//! `` !`cmd` `` spans run), an MCP server's prompt fetched, a built-in slash command run
//! instead of a model call, and `@mentions` attached as data.

pub(in crate::agent) mod attachments;
pub(in crate::agent) mod commands;
pub(in crate::agent) mod mcp_prompts;
pub(in crate::agent) mod review;
pub(in crate::agent) mod slash;
