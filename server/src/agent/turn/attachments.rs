//! `@path` mentions in a prompt, fetched as untrusted data within the editor budget left.

use super::*;
use crate::tools::read_file;

use serde_json::json;

use crate::tools::boundary::PathBoundary;
use agentls_core::prompt_text::{self};
use agentls_core::truncate::{truncate_middle, TruncationPolicy};

impl Turn {
    /// Fetches `@path` mentions as untrusted data within the editor budget left.
    pub(super) async fn attachments(
        &mut self,
        text: &str,
        block: &agentls_core::context::TurnBlock,
        config: &agentls_core::config::Config,
        prompts: &agentls_core::prompts::Prompts,
    ) -> String {
        let mentions = prompt_text::mentions(text);
        if mentions.is_empty() {
            return String::new();
        }
        let workspace = PathBoundary {
            roots: self.host().roots(),
        };
        let tokenizer = config.tokenizer();
        let used = block.editor.as_ref().map_or(0, |e| e.tokens);
        let mut budget = config.editor_context_max_tokens.saturating_sub(used);
        let mut out = format!("<attached_files>\n{}\n", prompts.data_boundary);
        let mut attached = 0;
        for mention in mentions {
            let resolved = workspace.resolve(&mention.path);
            let path = match resolved {
                Ok(path) if path.is_file() => path,
                _ => {
                    self.update(json!({
                        "kind": "warning",
                        "message": format!("@{} is not a file in the workspace; it was not attached", mention.path),
                    }));
                    continue;
                }
            };
            let buffer = self.host().buffer(&path).await.map(|(text, _)| text);
            let (offset, limit) = match mention.lines {
                Some((start, end)) => (Some(start), Some(end - start + 1)),
                None => (None, None),
            };
            let ws = PathBoundary {
                roots: workspace.roots.clone(),
            };
            let arg = mention.path.clone();
            let read = tokio::task::spawn_blocking(move || {
                read_file::read_file(&ws, &arg, offset, limit, buffer.as_deref())
            })
            .await;
            let content = match read {
                Ok(Ok(content)) => content,
                Ok(Err(err)) => {
                    self.update(json!({"kind": "warning", "message": format!("@{}: {}", mention.path, err.0)}));
                    continue;
                }
                Err(err) => {
                    self.update(
                        json!({"kind": "warning", "message": format!("@{}: {err}", mention.path)}),
                    );
                    continue;
                }
            };
            let lines = mention
                .lines
                .map(|(a, b)| format!(" lines=\"{a}-{b}\""))
                .unwrap_or_default();
            let header = format!("<file path=\"{}\"{lines}>\n", workspace.display(&path));
            let tokens = tokenizer.count(&content) + tokenizer.count(&header) + 4;
            let body = if tokens <= budget {
                content
            } else if budget > 64 {
                let cut =
                    truncate_middle(&content, TruncationPolicy::Tokens(budget - 48), tokenizer)
                        .text;
                format!("[cut to fit the editor-context budget]\n{cut}")
            } else {
                self.update(json!({
                    "kind": "warning",
                    "message": format!("@{} was not attached: the editor-context budget is used up", mention.path),
                }));
                out.push_str(&format!(
                    "[@{} omitted: the editor-context budget is used up]\n",
                    mention.path
                ));
                continue;
            };
            budget = budget.saturating_sub(tokenizer.count(&body) + 16);
            out.push_str(&header);
            out.push_str(body.trim_end());
            out.push_str("\n</file>\n");
            attached += 1;
        }
        if attached == 0 && !out.contains("omitted") {
            return String::new();
        }
        out.push_str("</attached_files>");
        out
    }
}
