//! The wire types of agentls's own protocol, one type per method (the style of
//! rust-analyzer's `lsp/ext.rs`): its method name, params and result. The LSP front door
//! (`lsp/`) dispatches on them and sends them; the ACP front door (`acp/`) names its methods
//! through `acp` and shares the pieces the two protocols have in common. The VS Code
//! extension's `protocol.generated.ts` is generated from these types and docs/protocol.md's
//! method index is checked against them (the tests of `catalog`).
//!
//! - `lsp`: the custom LSP requests and notifications (`agent/*`, `agentls/debug/*`);
//! - `acp`: the ACP methods agentls handles and sends;
//! - `limits`: how large one incoming message may be (both front doors);
//! - `shapes`: the parts of the params and results that are not one method's own.
//!
//! Rule: a payload built as JSON outside this module (by the agent or the MCP manager) is a
//! `Json<T>`: sent as it was built, described by `T` for the schema and the TypeScript.

pub mod acp;
pub mod limits;
pub mod lsp;
pub mod shapes;

#[cfg(test)]
mod catalog;
#[cfg(test)]
mod typescript;

use std::marker::PhantomData;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// A request the client sends and the server answers: the server reads its params and
/// writes its result. (The server → client methods implement lsp-types' `Request` and
/// `Notification`, which tower-lsp's `Client` sends; those need both directions of serde.)
pub trait ClientRequest {
    type Params: DeserializeOwned + Send + 'static;
    type Result: Serialize + Send + 'static;
    const METHOD: &'static str;
}

/// A notification the client sends.
pub trait ClientNotification {
    type Params: DeserializeOwned + Send + 'static;
    const METHOD: &'static str;
}

/// JSON built elsewhere and passed through unchanged; `T` is the shape it has on the wire
/// (its schema is `T`'s), not checked at runtime.
pub struct Json<T> {
    pub value: Value,
    shape: PhantomData<fn() -> T>,
}

impl<T> Json<T> {
    pub fn new(value: Value) -> Json<T> {
        Json {
            value,
            shape: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for Json<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.value.fmt(f)
    }
}

impl<T> Clone for Json<T> {
    fn clone(&self) -> Self {
        Json::new(self.value.clone())
    }
}

impl<T> PartialEq for Json<T> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<T> Serialize for Json<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(serializer)
    }
}

impl<'de, T> Deserialize<'de> for Json<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Json::new)
    }
}

impl<T: JsonSchema> JsonSchema for Json<T> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<T>()
    }
}
