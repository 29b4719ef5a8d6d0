//! The methods of `protocol::lsp` (its `methods()`), with their direction and the schemas
//! of their params and results: what the TypeScript is generated from and what docs/protocol.md's method index
//! is checked against. Its tests hold the list to the module's source (a type added there
//! and not here fails) and to the docs.

use std::collections::BTreeSet;

use lsp_types::notification::Notification;
use lsp_types::request::Request;
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};

use super::ClientRequest;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    ClientToServer,
    ServerToClient,
}

type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

pub struct Method {
    /// The Rust type's name (`SessionNew`).
    pub type_name: &'static str,
    pub method: &'static str,
    pub direction: Direction,
    /// None for a notification.
    pub is_request: bool,
    params: SchemaFn,
    result: Option<SchemaFn>,
}

fn schema<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

fn type_name<T>() -> &'static str {
    let full = std::any::type_name::<T>();
    full.rsplit("::").next().unwrap_or(full)
}

pub(super) fn handled<R: ClientRequest>() -> Method
where
    R::Params: JsonSchema,
    R::Result: JsonSchema,
{
    Method {
        type_name: type_name::<R>(),
        method: R::METHOD,
        direction: Direction::ClientToServer,
        is_request: true,
        params: schema::<R::Params>,
        result: Some(schema::<R::Result>),
    }
}

pub(super) fn sent<R: Request>() -> Method
where
    R::Params: JsonSchema,
    R::Result: JsonSchema,
{
    Method {
        type_name: type_name::<R>(),
        method: R::METHOD,
        direction: Direction::ServerToClient,
        is_request: true,
        params: schema::<R::Params>,
        result: Some(schema::<R::Result>),
    }
}

pub(super) fn notified<N: Notification>() -> Method
where
    N::Params: JsonSchema,
{
    Method {
        type_name: type_name::<N>(),
        method: N::METHOD,
        direction: Direction::ServerToClient,
        is_request: false,
        params: schema::<N::Params>,
        result: None,
    }
}

/// The schemas of a method's params and result, and the definitions they refer to. What
/// the server reads is described as serde reads it (`default` fields optional), what it
/// writes as serde writes it (`skip_serializing_if` fields optional).
pub struct Schemas {
    /// Per method: (params, result).
    pub roots: Vec<(Schema, Option<Schema>)>,
    pub definitions: serde_json::Map<String, serde_json::Value>,
}

pub fn schemas(methods: &[Method]) -> Schemas {
    let settings = SchemaSettings::draft2020_12();
    let mut read = settings.clone().for_deserialize().into_generator();
    let mut written = settings.for_serialize().into_generator();
    let roots = methods
        .iter()
        .map(|m| {
            let (params, result) = match m.direction {
                Direction::ClientToServer => (&mut read, &mut written),
                Direction::ServerToClient => (&mut written, &mut read),
            };
            let params = (m.params)(params);
            (params, m.result.map(|f| f(result)))
        })
        .collect();
    let mut definitions = read.take_definitions(true);
    for (name, schema) in written.take_definitions(true) {
        if let Some(other) = definitions.get(&name) {
            assert_eq!(
                other, &schema,
                "{name} is read and written with different shapes: give one a schema name of its own"
            );
        }
        definitions.insert(name, schema);
    }
    Schemas { roots, definitions }
}

/// The method names `const METHOD` declares in a source text.
fn declared_methods(source: &str) -> BTreeSet<String> {
    source
        .lines()
        .filter_map(|line| line.trim().strip_prefix("const METHOD: &'static str = \""))
        .filter_map(|rest| rest.strip_suffix("\";"))
        .map(str::to_string)
        .collect()
}

/// The methods of docs/protocol.md's "Method index" table (its first column).
fn documented_methods(doc: &str) -> BTreeSet<String> {
    let index = doc
        .split("\n## Method index\n")
        .nth(1)
        .expect("docs/protocol.md has a `## Method index` section");
    let section = index.split("\n## ").next().unwrap_or(index);
    section
        .lines()
        .filter(|line| line.starts_with("| `"))
        .filter_map(|line| line.split('`').nth(1))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed() -> BTreeSet<String> {
        crate::protocol::lsp::methods()
            .iter()
            .map(|m| m.method.to_string())
            .collect()
    }

    #[test]
    fn every_method_type_of_the_module_is_listed() {
        let declared = declared_methods(include_str!("lsp.rs"));
        assert!(
            declared.len() > 10,
            "the METHOD lines were read: {declared:?}"
        );
        assert_eq!(
            declared,
            listed(),
            "protocol/lsp.rs against catalog::methods"
        );
    }

    #[test]
    fn docs_method_index_lists_exactly_the_methods() {
        let doc = include_str!("../../../docs/protocol.md");
        assert_eq!(
            documented_methods(doc),
            listed(),
            "docs/protocol.md's Method index against protocol/lsp.rs"
        );
    }

    /// The Configuration table is generated from the settings' declarations
    /// (`agentls_core::config::settings_table`); `UPDATE_EXPECT=1` writes it into the docs.
    #[test]
    fn docs_configuration_table_is_generated_from_the_settings() {
        generated_table(
            "| key | type | default | meaning |",
            &agentls_core::config::settings_table(),
        );
    }

    /// The hook events table, from `HookEvent::doc`.
    #[test]
    fn docs_hook_events_table_is_generated_from_the_events() {
        generated_table("| event | when |", &agentls_core::hooks::events_table());
    }

    /// VS Code's `agentls.provider.kind` offers exactly the providers of `PRESETS`.
    #[test]
    fn the_vscode_provider_kinds_are_the_presets() {
        let manifest: serde_json::Value =
            serde_json::from_str(include_str!("../../../editors/vscode/package.json")).unwrap();
        let offered = &manifest["contributes"]["configuration"]["properties"]
            ["agentls.provider.kind"]["enum"];
        assert_eq!(
            offered,
            &serde_json::json!(agentls_core::provider_kind::Preset::names()),
            "editors/vscode/package.json against crates/core/src/provider_kind.rs's PRESETS"
        );
    }

    /// The table of docs/protocol.md that starts with `header` equals `generated`;
    /// `UPDATE_EXPECT=1` writes it into the docs instead.
    fn generated_table(header: &str, generated: &str) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/protocol.md");
        let doc = std::fs::read_to_string(&path).unwrap();
        let start = doc
            .find(header)
            .unwrap_or_else(|| panic!("docs/protocol.md has no table {header}"));
        let end = doc[start..]
            .find("\n\n")
            .map_or(doc.len(), |at| start + at + 1);
        if doc[start..end] != *generated && std::env::var_os("UPDATE_EXPECT").is_some() {
            let updated = format!("{}{generated}{}", &doc[..start], &doc[end..]);
            std::fs::write(&path, updated).unwrap();
            return;
        }
        assert_eq!(
            &doc[start..end],
            generated,
            "docs/protocol.md's table {header} against the code (UPDATE_EXPECT=1 rewrites it)"
        );
    }

    /// A client → server type without a handler would answer "method not found".
    #[test]
    fn every_handled_method_is_registered_in_the_lsp_service() {
        let registrations = include_str!("../lsp/mod.rs");
        let missing: Vec<&str> = crate::protocol::lsp::methods()
            .iter()
            .filter(|m| m.direction == Direction::ClientToServer)
            .map(|m| m.type_name)
            .filter(|name| !registrations.contains(&format!(".on::<ext::{name}>(")))
            .collect();
        assert!(
            missing.is_empty(),
            "not registered in lsp/mod.rs: {missing:?}"
        );
    }

    /// The ACP methods are ACP's; the docs' ACP section names each one agentls handles or
    /// sends (in its table, or for `terminal/*` in the text after it).
    #[test]
    fn docs_acp_section_names_every_acp_method() {
        let doc = include_str!("../../../docs/protocol.md");
        let section = doc
            .split("\n## ACP mode")
            .nth(1)
            .expect("docs/protocol.md has an ACP mode section");
        let declared = declared_methods(include_str!("acp.rs"));
        assert!(
            declared.len() > 10,
            "the METHOD lines were read: {declared:?}"
        );
        let missing: Vec<&String> = declared
            .iter()
            .filter(|m| !section.contains(&format!("`{m}")))
            .collect();
        assert!(
            missing.is_empty(),
            "not in docs/protocol.md's ACP section: {missing:?}"
        );
    }

    #[test]
    fn the_checks_read_what_they_claim() {
        let source = "impl X for Y {\n    const METHOD: &'static str = \"a/b\";\n}\n";
        assert_eq!(
            declared_methods(source),
            BTreeSet::from(["a/b".to_string()])
        );
        let doc =
            "# P\n## Method index\n| method | x |\n|---|---|\n| `a/b` | r |\n## Next\n| `c/d` |\n";
        assert_eq!(documented_methods(doc), BTreeSet::from(["a/b".to_string()]));
    }
}
