//! `@path` mentions in a prompt, and `@SERVER:URI` MCP resources (read by
//! `mcp_prompts.rs`), fetched as untrusted data within the editor budget left.

use crate::agent::turn::Turn;
use crate::tools::read_file;

use crate::tools::boundary::PathBoundary;
use agentls_core::attachments::{attachment_block, MentionedFile};
use agentls_core::history::Item;
use agentls_core::mcp::resources::resource_mention;
use agentls_core::prompt_text;
use agentls_core::updates::Update;

impl Turn {
    /// Fetches `@path` mentions, and the file `also` as if it were mentioned, as untrusted
    /// data within the editor budget left.
    pub(in crate::agent) async fn attachments(
        &mut self,
        text: &str,
        also: Option<String>,
        block: &agentls_core::context::TurnBlock,
        config: &agentls_core::config::Config,
        prompts: &agentls_core::prompts::Prompts,
    ) -> String {
        let mentions = prompt_text::mentions(text);
        if mentions.is_empty() && also.is_none() {
            return String::new();
        }
        let workspace = PathBoundary {
            roots: self.host().roots(),
        };
        let servers = self.agent.mcp.server_names();
        let servers: Vec<&str> = servers.iter().map(String::as_str).collect();
        let tokenizer = config.tokenizer();
        let used = block.editor.as_ref().map_or(0, |e| e.tokens);
        let budget = config.editor_context_max_tokens.saturating_sub(used);
        // Read every mentioned file first; the markup and the budget are the core's.
        let mut read_files = Vec::new();
        for mention in mentions {
            // An image file is the prompt's image (`Agent::prompt_images`), not text.
            if mention.lines.is_none()
                && agentls_core::image::mime_for_name(&mention.path).is_some()
            {
                continue;
            }
            if let Some((server, uri)) = resource_mention(&mention, &servers) {
                match self.mcp_resource(server, uri).await {
                    Ok(content) => {
                        let (server, uri) = (Some(server.to_string()), uri.to_string());
                        read_files.push((mention, uri, content, server));
                    }
                    Err(err) => self.warn(format!("@{}: {err}; it was not attached", mention.path)),
                }
                continue;
            }
            if let Some((display, content)) =
                self.read_mentioned(&mention, &workspace, &servers).await
            {
                read_files.push((mention, display, content, None));
            }
        }
        if let Some(path) = also.filter(|p| !read_files.iter().any(|(m, ..)| &m.path == p)) {
            let mention = prompt_text::Mention {
                path,
                lines: None,
                span: 0..0,
            };
            if let Some((display, content)) =
                self.read_mentioned(&mention, &workspace, &servers).await
            {
                // Attached once: the model still has it from an earlier turn.
                if !self.history_holds(&content).await {
                    read_files.push((mention, display, content, None));
                }
            }
        }
        let files: Vec<MentionedFile<'_>> = read_files
            .iter()
            .map(|(mention, display, content, server)| MentionedFile {
                mention: &mention.path,
                display,
                lines: mention.lines,
                text: content,
                server: server.as_deref(),
            })
            .collect();
        let attached = attachment_block(&files, budget, tokenizer, prompts);
        for index in &attached.omitted {
            self.update(Update::warning(format!(
                "@{} was not attached: the editor-context budget is used up",
                files[*index].mention
            )));
        }
        attached.text
    }

    /// `editorContext.attachTests`: for a change asked of the active file the editor block
    /// shows whole, that file's tests (`checks::tests_of`), to attach as if mentioned: they
    /// hold the names, values and messages the code must have, and a small model offered no
    /// tools for the change (`listing_only`) could not read them.
    pub(in crate::agent) fn tests_to_attach(
        &self,
        active: Option<&agentls_core::inspect::ActiveDocument>,
        shows_whole_file: bool,
    ) -> Option<String> {
        let config = self.host().config();
        if !(shows_whole_file
            && config.attach_tests
            && agentls_core::reminders::asks_for_change(&self.request))
        {
            return None;
        }
        let workspace = PathBoundary {
            roots: self.host().roots(),
        };
        agentls_core::checks::tests_of(&active?.display_path, |candidate| {
            workspace
                .resolve(candidate)
                .is_ok_and(|path| path.is_file())
        })
    }

    /// Whether a user message of the history (its context block) holds `text`.
    async fn history_holds(&self, text: &str) -> bool {
        let live = self.handle.live.lock().await;
        live.session.history.entries().iter().any(|entry| {
            matches!(&entry.item, Item::User { context: Some(context), .. } if context.contains(text))
        })
    }

    /// A mentioned workspace file read as `read_file` reads it (an open buffer with its
    /// unsaved changes; a line range when the mention has one): its displayed path and
    /// numbered text. None, with a warning shown, when it is not a readable workspace file.
    async fn read_mentioned(
        &self,
        mention: &prompt_text::Mention,
        workspace: &PathBoundary,
        servers: &[&str],
    ) -> Option<(String, String)> {
        let resolved = workspace.resolve(&mention.path);
        let path = match resolved {
            Ok(path) if path.is_file() => path,
            _ => {
                let also = match mention.path.split_once(':') {
                    Some(_) if servers.is_empty() => String::new(),
                    Some(_) => format!(
                        " nor a resource of a configured MCP server (@SERVER:URI; the servers are: {})",
                        servers.join(", ")
                    ),
                    None => String::new(),
                };
                self.update(Update::warning(format!(
                    "@{} is not a file in the workspace{also}; it was not attached",
                    mention.path
                )));
                return None;
            }
        };
        let buffer = self.host().buffer(&path).await.map(|(text, _)| text);
        let (offset, limit) = match mention.lines {
            Some((start, end)) => (Some(start), Some(end - start + 1)),
            None => (None, None),
        };
        let boundary = workspace.clone();
        let arg = mention.path.clone();
        let read = tokio::task::spawn_blocking(move || {
            read_file::read_file(&boundary, &arg, offset, limit, buffer.as_deref())
        })
        .await;
        let content = match read {
            Ok(Ok(content)) => content,
            Ok(Err(err)) => {
                self.update(Update::warning(format!("@{}: {}", mention.path, err.0)));
                return None;
            }
            Err(err) => {
                self.update(Update::warning(format!("@{}: {err}", mention.path)));
                return None;
            }
        };
        Some((workspace.display(&path), content))
    }
}
