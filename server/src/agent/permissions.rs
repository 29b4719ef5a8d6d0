//! The standing permission rules in force (`agentls_core::permission_rules`): the user's
//! `permissions.*` settings and the workspace's `.agents/settings.json` (deny and ask
//! only), read at each call so an edit to either applies at once, and the rules the user's
//! "always" answers kept (`permissions.rememberAlways`). The gate asks `rule_for`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::agent::Agent;
use crate::protocol::lsp::{PermissionRule, PermissionRules};
use crate::store::answered_rules;
use crate::store::untrusted_file::{read_config_file, ConfigRead, MAX_CONFIG_FILE_BYTES};
use agentls_core::permission_rules::{
    self, Call, Places, Rule, RuleAction, RuleSource, WORKSPACE_SETTINGS,
};

impl Agent {
    /// Every rule in force: the user's, the workspace's, and those the user's "always"
    /// answers kept for this workspace; with the problems of the files (the settings' are
    /// reported as settings problems when set).
    pub(in crate::agent) fn permission_rules(&self) -> (Vec<Rule>, Vec<String>) {
        let config = self.host.config();
        let (mut rules, mut problems) = config.permissions.rules(RuleSource::User);
        if let Some(root) = self.host.roots().first() {
            let (more, said) = workspace_rules(root);
            rules.extend(more);
            problems.extend(said);
            let answered = answered_rules::path(config.state_dir.as_deref(), root);
            match answered_rules::read(&answered) {
                Ok(lists) => {
                    let (more, said) = lists.rules(RuleSource::Answers);
                    rules.extend(more);
                    problems.extend(said);
                }
                Err(why) => problems.push(why),
            }
        }
        (rules, problems)
    }

    /// Keeps an "always" answer (`allowAlways`, `rejectAlways`) about `tool` (for `shell`,
    /// the command `prefix` it covered) as a rule of this workspace, when
    /// `permissions.rememberAlways` asks for it. A failure is logged: the session still
    /// remembers the answer.
    pub(in crate::agent) async fn keep_answer_as_rule(
        &self,
        tool: &str,
        prefix: Option<&str>,
        outcome: &str,
    ) {
        let config = self.host.config();
        let action = match outcome {
            "allowAlways" => RuleAction::Allow,
            "rejectAlways" => RuleAction::Deny,
            _ => return,
        };
        let Some(root) = self.host.roots().first().cloned() else {
            return;
        };
        if !config.remember_always_in_workspace {
            return;
        }
        let rule = permission_rules::answer_rule(tool, prefix);
        let path = answered_rules::path(config.state_dir.as_deref(), &root);
        let kept = tokio::task::spawn_blocking(move || answered_rules::add(&path, action, &rule))
            .await
            .unwrap_or_else(|err| Err(err.to_string()));
        if let Err(why) = kept {
            tracing::warn!("permissions: an always answer was not kept as a rule: {why}");
        }
    }

    /// The rule that decides a call of `tool` (its command line for `shell`, the absolute
    /// path it names for the file tools), with the problems found reading the rules.
    pub(in crate::agent) fn rule_for(
        &self,
        tool: &str,
        command: Option<&str>,
        path: Option<&Path>,
    ) -> (Option<Rule>, Vec<String>) {
        let (rules, problems) = self.permission_rules();
        if rules.is_empty() {
            return (None, problems);
        }
        // Canonical, as the tools resolve the paths they are given.
        let roots: Vec<PathBuf> = self
            .host
            .roots()
            .into_iter()
            .map(|root| root.canonicalize().unwrap_or(root))
            .collect();
        // Relative patterns start at the root the path is in (the first root otherwise).
        let root = path
            .and_then(|path| roots.iter().find(|root| path.starts_with(root)))
            .or(roots.first())
            .cloned()
            .unwrap_or_default();
        let places = Places {
            root,
            home: std::env::var_os("HOME").map(PathBuf::from),
        };
        let call = Call {
            tool,
            command,
            path,
        };
        let rule = permission_rules::decide(&rules, &call, &places).cloned();
        (rule, problems)
    }

    /// `agent/permissions`: the rules in force, deny first, and the ignored ones.
    pub fn permissions(&self) -> PermissionRules {
        let (mut rules, problems) = self.permission_rules();
        rules.sort_by_key(|rule| std::cmp::Reverse(rule.action));
        PermissionRules {
            rules: rules
                .into_iter()
                .map(|rule| PermissionRule {
                    action: rule.action.name().to_string(),
                    rule: rule.text,
                    source: rule.source.name().to_string(),
                })
                .collect(),
            problems,
        }
    }
}

/// The rules of a workspace's settings file; an absent file has none. Only a regular file
/// inside the root is read (a link out of it is refused and said).
fn workspace_rules(root: &Path) -> (Vec<Rule>, Vec<String>) {
    let path = root.join(WORKSPACE_SETTINGS);
    let text = match read_config_file(&path, Some(root), MAX_CONFIG_FILE_BYTES) {
        ConfigRead::Text(text) => text,
        ConfigRead::Missing => return (Vec::new(), Vec::new()),
        ConfigRead::Refused(why) => {
            return (
                Vec::new(),
                vec![format!("skipping {WORKSPACE_SETTINGS}: {why}")],
            )
        }
    };
    let (rules, problems) = match serde_json::from_str::<Value>(&text) {
        Ok(value) => permission_rules::from_workspace_settings(&value),
        Err(err) => (Vec::new(), vec![format!("is not JSON ({err})")]),
    };
    let problems = problems
        .into_iter()
        .map(|problem| format!("{WORKSPACE_SETTINGS}: {problem}"))
        .collect();
    (rules, problems)
}
