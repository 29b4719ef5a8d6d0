//! The client's messages whose lists it may make as long as it likes, read entry by entry
//! into bounded lists (issue 41: a 105 MB answer of 1,000,000 diagnostics peaked at 5.3 GB,
//! a 58 MB `didChangeWatchedFiles` at 1.1 GB, decoded into `Value`s whole before anything
//! looked at them). Each entry is read from the raw JSON, kept or counted and skipped; what
//! tower-lsp then gets is small. The limits are `protocol::limits`; past them:
//! - `agent/editor/diagnostics`: the first `MAX_ANSWER_DIAGNOSTICS` errors and warnings of
//!   the first `MAX_ANSWER_FILES` files are read (information and hints, which no report
//!   shows, are not kept), the rest skipped with a log line;
//! - `workspace/didChangeWatchedFiles`: a list longer than `MAX_WATCHED_CHANGES` becomes
//!   `agentls/internal/manyFilesChanged`: the workspace is checked again whole, by
//!   modification time, rather than file by file.
//!
//! An answer or notification these readers cannot read (a field of another type) is left to
//! the ordinary decoding, counted first like any large message
//! (`protocol::limits::count_or_refuse`).

use std::fmt;

use agentls_core::editor_diagnostics::Diagnostic;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tower_lsp::jsonrpc::{self, Id, Request, Response};
use tower_lsp::lsp_types::{DidChangeWatchedFilesParams, FileEvent};

use super::transport::malformed;
use crate::protocol::limits::{
    count_or_refuse, MAX_ANSWER_DIAGNOSTICS, MAX_ANSWER_FILES, MAX_DIAGNOSTIC_BYTES,
    MAX_WATCHED_CHANGES,
};
use crate::protocol::ClientNotification;

/// The notification that stands in for a `didChangeWatchedFiles` of more changes than are
/// read one by one (internal: the client never names it).
pub(super) enum ManyFilesChanged {}

impl ClientNotification for ManyFilesChanged {
    type Params = ManyFilesChangedParams;
    const METHOD: &'static str = "agentls/internal/manyFilesChanged";
}

#[derive(Deserialize)]
pub(super) struct ManyFilesChangedParams {
    /// How many changes the client listed.
    pub(super) changes: usize,
}

/// The longest message and source of a diagnostic kept: a report shows 200 bytes of each.
const MAX_DIAGNOSTIC_TEXT: usize = 1_000;

/// The client's answer `result` to request `id`, read the way `method` needs (bounded for
/// `agent/editor/diagnostics`), as the response tower-lsp takes.
pub(super) fn answer(id: Id, method: Option<&str>, result: &RawValue) -> Response {
    if method == Some("agent/editor/diagnostics") {
        match diagnostics_answer(result) {
            Ok(value) => return Response::from_ok(id, value),
            Err(err) => tracing::info!("agent/editor/diagnostics read whole: {err}"),
        }
    }
    if let Err(why) = count_or_refuse(result.get().as_bytes()) {
        tracing::warn!("the client's answer to request {id}: {why}");
        let error = jsonrpc::Error {
            code: jsonrpc::ErrorCode::InvalidRequest,
            message: why.into(),
            data: None,
        };
        return Response::from_error(id, error);
    }
    match serde_json::from_str::<Value>(result.get()) {
        Ok(value) => Response::from_ok(id, value),
        Err(err) => Response::from_error(id, jsonrpc::Error::invalid_params(err.to_string())),
    }
}

/// A notification of `transport::BOUNDED_METHODS` with its raw `params`, as the request
/// tower-lsp takes.
pub(super) fn notification(method: &'static str, params: &RawValue) -> Request {
    let read = match method {
        "workspace/didChangeWatchedFiles" => watched_files(params),
        _ => None,
    };
    if let Some(request) = read {
        return request;
    }
    if let Err(why) = count_or_refuse(params.get().as_bytes()) {
        tracing::warn!("{method}: {why}");
        return malformed(&format!("{method}: {why}"));
    }
    let params = serde_json::from_str::<Value>(params.get()).unwrap_or_default();
    Request::build(method).params(params).finish()
}

/// A `didChangeWatchedFiles` notification's `params` as the request tower-lsp takes: its
/// changes, or `ManyFilesChanged` past `MAX_WATCHED_CHANGES`. None when they cannot be read
/// this way (the ordinary decoding then says why).
fn watched_files(params: &RawValue) -> Option<Request> {
    let mut changes = Changes::default();
    let mut de = serde_json::Deserializer::from_str(params.get());
    let read = WatchedParams(&mut changes)
        .deserialize(&mut de)
        .and_then(|()| de.end());
    if let Err(err) = read {
        tracing::info!("workspace/didChangeWatchedFiles read whole: {err}");
        return None;
    }
    if changes.listed > MAX_WATCHED_CHANGES {
        tracing::info!(
            "workspace/didChangeWatchedFiles listed {} changes: the workspace is checked again whole",
            changes.listed
        );
        let params = json!({ "changes": changes.listed });
        return Some(
            Request::build(ManyFilesChanged::METHOD)
                .params(params)
                .finish(),
        );
    }
    let params = DidChangeWatchedFilesParams {
        changes: changes.kept,
    };
    let params = serde_json::to_value(params).ok()?;
    Some(
        Request::build("workspace/didChangeWatchedFiles")
            .params(params)
            .finish(),
    )
}

#[derive(Default)]
struct Changes {
    kept: Vec<FileEvent>,
    listed: usize,
}

/// `{"changes": [...]}`, other keys skipped.
struct WatchedParams<'a>(&'a mut Changes);

impl<'de> DeserializeSeed<'de> for WatchedParams<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for WatchedParams<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("didChangeWatchedFiles params")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = false;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "changes" && !seen {
                seen = true;
                map.next_value_seed(ChangeList(&mut *self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        if !seen {
            return Err(serde::de::Error::missing_field("changes"));
        }
        Ok(())
    }
}

/// The list of changes: the first `MAX_WATCHED_CHANGES + 1` read, the rest counted.
struct ChangeList<'a>(&'a mut Changes);

impl<'de> DeserializeSeed<'de> for ChangeList<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ChangeList<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of file events")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        loop {
            if self.0.listed < MAX_WATCHED_CHANGES {
                match seq.next_element::<FileEvent>()? {
                    Some(event) => self.0.kept.push(event),
                    None => return Ok(()),
                }
            } else if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
            self.0.listed += 1;
        }
    }
}

/// What was read of an answer to `agent/editor/diagnostics`, and what was skipped.
#[derive(Default)]
struct Read {
    files: Vec<Value>,
    diagnostics: usize,
    skipped_files: usize,
    skipped_diagnostics: usize,
    /// Entries that were not diagnostics of a report: information, hints, unreadable ones.
    not_reported: usize,
}

/// The answer with at most `MAX_ANSWER_FILES` files and `MAX_ANSWER_DIAGNOSTICS` errors
/// and warnings, each diagnostic rebuilt with the fields the server reads.
fn diagnostics_answer(result: &RawValue) -> Result<Value, serde_json::Error> {
    let mut read = Read::default();
    let mut de = serde_json::Deserializer::from_str(result.get());
    let has_items = AnswerSeed(&mut read).deserialize(&mut de)?;
    de.end()?;
    if read.skipped_files + read.skipped_diagnostics > 0 {
        tracing::warn!(
            "agent/editor/diagnostics: read {} errors and warnings of {} files ({} other entries left out); skipped {} diagnostics and {} files past the limits ({MAX_ANSWER_DIAGNOSTICS} diagnostics, {MAX_ANSWER_FILES} files)",
            read.diagnostics,
            read.files.len(),
            read.not_reported,
            read.skipped_diagnostics,
            read.skipped_files
        );
    }
    if !has_items {
        return Ok(json!({}));
    }
    Ok(json!({ "items": read.files }))
}

/// `{"items": [...]}`, other keys skipped; true when it had items.
struct AnswerSeed<'a>(&'a mut Read);

impl<'de> DeserializeSeed<'de> for AnswerSeed<'_> {
    type Value = bool;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for AnswerSeed<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an agent/editor/diagnostics answer")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut seen = false;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "items" && !seen {
                seen = true;
                map.next_value_seed(Items(&mut *self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(seen)
    }
}

struct Items<'a>(&'a mut Read);

impl<'de> DeserializeSeed<'de> for Items<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Items<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of files' diagnostics")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        loop {
            if self.0.files.len() < MAX_ANSWER_FILES {
                match seq.next_element_seed(File(&mut *self.0))? {
                    Some(file) => self.0.files.push(file),
                    None => return Ok(()),
                }
            } else if seq.next_element::<IgnoredAny>()?.is_some() {
                self.0.skipped_files += 1;
            } else {
                return Ok(());
            }
        }
    }
}

/// One file: `uri`, `version` and `diagnostics` read, other keys skipped.
struct File<'a>(&'a mut Read);

impl<'de> DeserializeSeed<'de> for File<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for File<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a file's diagnostics")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut file = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = match key.as_str() {
                "uri" if !file.contains_key("uri") => Value::String(map.next_value()?),
                "version" if !file.contains_key("version") => {
                    json!(map.next_value::<Option<i32>>()?)
                }
                "diagnostics" if !file.contains_key("diagnostics") => {
                    Value::Array(map.next_value_seed(DiagnosticList(&mut *self.0))?)
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            file.insert(key, value);
        }
        Ok(Value::Object(file))
    }
}

/// A file's diagnostics: each read on its own (at most `MAX_DIAGNOSTIC_BYTES` of JSON),
/// the errors and warnings kept while the budget lasts, the rest counted.
struct DiagnosticList<'a>(&'a mut Read);

impl<'de> DeserializeSeed<'de> for DiagnosticList<'_> {
    type Value = Vec<Value>;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Vec<Value>, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for DiagnosticList<'_> {
    type Value = Vec<Value>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of diagnostics")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Value>, A::Error> {
        let mut kept = Vec::new();
        while let Some(raw) = seq.next_element::<&'de RawValue>()? {
            if self.0.diagnostics >= MAX_ANSWER_DIAGNOSTICS {
                self.0.skipped_diagnostics += 1;
                continue;
            }
            match reported(raw) {
                Some(diagnostic) => {
                    self.0.diagnostics += 1;
                    kept.push(diagnostic);
                }
                None => self.0.not_reported += 1,
            }
        }
        Ok(kept)
    }
}

/// An error or warning, in LSP's shape with only the fields the server reads (message and
/// source cut to `MAX_DIAGNOSTIC_TEXT`); None for anything else.
fn reported(raw: &RawValue) -> Option<Value> {
    if raw.get().len() > MAX_DIAGNOSTIC_BYTES {
        return None;
    }
    let value = serde_json::from_str::<Value>(raw.get()).ok()?;
    let diagnostic = Diagnostic::from_lsp(&value).filter(Diagnostic::is_reported)?;
    let position = json!({"line": diagnostic.line, "character": diagnostic.character});
    let mut shaped = json!({
        "range": {"start": position, "end": position},
        "message": cut(&diagnostic.message),
    });
    if let Some(severity) = diagnostic.severity {
        shaped["severity"] = json!(severity);
    }
    if let Some(source) = &diagnostic.source {
        shaped["source"] = json!(cut(source));
    }
    Some(shaped)
}

fn cut(text: &str) -> &str {
    let mut end = text.len().min(MAX_DIAGNOSTIC_TEXT);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_string()).unwrap()
    }

    fn diagnostic(line: u32, severity: u8, message: &str) -> String {
        json!({
            "range": {"start": {"line": line, "character": 2}, "end": {"line": line, "character": 5}},
            "severity": severity,
            "message": message,
            "source": "rustc",
            "relatedInformation": [{"message": "elsewhere"}],
        })
        .to_string()
    }

    #[test]
    fn a_diagnostics_answer_keeps_errors_and_warnings_up_to_the_limit() {
        let long = "é".repeat(MAX_DIAGNOSTIC_TEXT);
        let mut first = vec![
            diagnostic(1, 1, &long),
            diagnostic(2, 4, "a hint"),
            r#"{"message": "no range"}"#.to_string(),
        ];
        first.extend((0..MAX_ANSWER_DIAGNOSTICS + 5).map(|i| diagnostic(i as u32, 2, "w")));
        let answer = format!(
            r#"{{"extra": [1, 2], "items": [{{"uri": "file:///a.rs", "version": 3, "other": {{}}, "diagnostics": [{}]}}, {{"uri": "file:///b.rs", "diagnostics": [{}]}}]}}"#,
            first.join(","),
            diagnostic(0, 1, "never read")
        );
        let value = diagnostics_answer(&raw(&answer)).unwrap();
        let items = value["items"].as_array().unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0]["uri"], "file:///a.rs");
        assert_eq!(items[0]["version"], 3);
        let kept = items[0]["diagnostics"].as_array().unwrap();
        assert_eq!(kept.len(), MAX_ANSWER_DIAGNOSTICS);
        let error = Diagnostic::from_lsp(&kept[0]).unwrap();
        assert_eq!(
            (error.line, error.character, error.severity),
            (1, 2, Some(1))
        );
        assert_eq!(error.message.len(), MAX_DIAGNOSTIC_TEXT);
        assert_eq!(error.source.as_deref(), Some("rustc"));
        assert_eq!(Diagnostic::from_lsp(&kept[1]).unwrap().message, "w");
        // The budget was spent on the first file.
        assert_eq!(items[1]["diagnostics"], json!([]));
        // What tower-lsp hands on still reads as the protocol's type.
        serde_json::from_value::<crate::protocol::lsp::EditorDiagnosticsResult>(value.clone())
            .unwrap();
    }

    #[test]
    fn a_diagnostics_answer_of_many_files_keeps_the_first_ones() {
        let file = r#"{"uri": "file:///a.rs", "diagnostics": []}"#;
        let answer = format!(
            r#"{{"items": [{}]}}"#,
            vec![file; MAX_ANSWER_FILES + 3].join(",")
        );
        let value = diagnostics_answer(&raw(&answer)).unwrap();
        assert_eq!(value["items"].as_array().unwrap().len(), MAX_ANSWER_FILES);
    }

    #[test]
    fn an_answer_the_reader_cannot_read_is_decoded_whole_when_small() {
        let odd = raw(r#"{"items": [{"uri": "file:///a.rs", "diagnostics": "none"}]}"#);
        assert!(diagnostics_answer(&odd).is_err());
        let response = answer(Id::Number(1), Some("agent/editor/diagnostics"), &odd);
        assert_eq!(
            response.result().unwrap()["items"][0]["diagnostics"],
            "none"
        );
        let other = answer(Id::Number(2), None, &raw(r#"{"applied": true}"#));
        assert_eq!(other.result(), Some(&json!({"applied": true})));
    }

    #[test]
    fn watched_files_past_the_limit_become_many_files_changed() {
        let change = r#"{"uri": "file:///w/a.rs", "type": 2}"#;
        let few = format!(r#"{{"changes": [{}]}}"#, [change; 3].join(","));
        let request = notification("workspace/didChangeWatchedFiles", &raw(&few));
        assert_eq!(request.method(), "workspace/didChangeWatchedFiles");
        let params: DidChangeWatchedFilesParams =
            serde_json::from_value(request.params().unwrap().clone()).unwrap();
        assert_eq!(params.changes.len(), 3);

        let at_limit = format!(
            r#"{{"changes": [{}]}}"#,
            vec![change; MAX_WATCHED_CHANGES].join(",")
        );
        let request = notification("workspace/didChangeWatchedFiles", &raw(&at_limit));
        assert_eq!(request.method(), "workspace/didChangeWatchedFiles");

        let many = format!(
            r#"{{"changes": [{},{}]}}"#,
            vec![change; MAX_WATCHED_CHANGES].join(","),
            // Past the limit, entries are counted, not read.
            r#"{"not": "an event"}"#
        );
        let request = notification("workspace/didChangeWatchedFiles", &raw(&many));
        assert_eq!(request.method(), ManyFilesChanged::METHOD);
        assert_eq!(
            request.params().unwrap()["changes"],
            MAX_WATCHED_CHANGES + 1
        );

        // Not readable as events: left to tower-lsp, which answers it as before.
        let odd = raw(r#"{"changes": [{"uri": 5}]}"#);
        let request = notification("workspace/didChangeWatchedFiles", &odd);
        assert_eq!(request.method(), "workspace/didChangeWatchedFiles");
        assert_eq!(request.params(), Some(&json!({"changes": [{"uri": 5}]})));
    }
}
