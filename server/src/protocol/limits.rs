//! How large one incoming message may be, for both front doors: an LSP frame and an ACP
//! line are refused above it, before they are held whole.

/// The environment variable that sets the largest message accepted, in bytes.
pub const MAX_FRAME_ENV: &str = "AGENTLS_MAX_FRAME_BYTES";
/// The default largest message: far above a 20 MB document sent whole in a didOpen.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 128 * 1024 * 1024;

/// The limit from `AGENTLS_MAX_FRAME_BYTES`, else the default.
pub fn max_frame_bytes() -> usize {
    match std::env::var(MAX_FRAME_ENV) {
        Ok(value) => match value.trim().parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => {
                tracing::warn!(
                    "{MAX_FRAME_ENV}={value:?} is not a positive integer; using {DEFAULT_MAX_FRAME_BYTES}"
                );
                DEFAULT_MAX_FRAME_BYTES
            }
        },
        Err(_) => DEFAULT_MAX_FRAME_BYTES,
    }
}

// ---------------------------------------------------------------------------------------
// Counts: below the frame limit, a message of many small entries still takes 20–50 times
// its bytes once decoded into `serde_json::Value`s (issue 41: a 105 MB answer of 1,000,000
// diagnostics peaked at 5.3 GB). The lists a client may make as long as it likes are read
// entry by entry into bounded, typed lists; any other message is counted before it is
// decoded, and refused above a count.
// ---------------------------------------------------------------------------------------

/// Messages above this many bytes have their JSON values counted before they are decoded
/// (below it, even a message of nothing but small values stays small once decoded).
pub const COUNTED_ABOVE_BYTES: usize = 1 << 20;
/// The most JSON values (each object, array, key, string, number…) a counted message may
/// hold; a message with more is refused (an error answer to a request, a log line for the
/// rest). About 30 MB once decoded, where a message of 105 MB may hold 20 million.
pub const MAX_MESSAGE_VALUES: usize = 250_000;
/// The most diagnostics (errors and warnings) read from one answer to
/// `agent/editor/diagnostics`, in the editor's order; the rest are skipped as they are read.
pub const MAX_ANSWER_DIAGNOSTICS: usize = 10_000;
/// The most files read from one answer to `agent/editor/diagnostics`.
pub const MAX_ANSWER_FILES: usize = 10_000;
/// The longest single diagnostic read, in bytes of JSON (one is a few hundred).
pub const MAX_DIAGNOSTIC_BYTES: usize = 64 * 1024;
/// The most changes of one `workspace/didChangeWatchedFiles` read one by one; a longer list
/// means many files changed, and the workspace is checked again whole instead.
pub const MAX_WATCHED_CHANGES: usize = 1_000;

/// What counting a message's JSON values found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// This many values, within the limit.
    Within(usize),
    /// More values than the limit: counting stopped there.
    Over,
    /// Not one JSON value (the decoder will say why).
    Unreadable,
}

/// Ok when `message` is small enough not to be counted (`COUNTED_ABOVE_BYTES`) or holds at
/// most `MAX_MESSAGE_VALUES` JSON values; else why it is refused.
pub fn count_or_refuse(message: &[u8]) -> Result<(), String> {
    if message.len() <= COUNTED_ABOVE_BYTES {
        return Ok(());
    }
    match count_values(message, MAX_MESSAGE_VALUES) {
        Count::Within(_) | Count::Unreadable => Ok(()),
        Count::Over => Err(format!(
            "a message of {} bytes with more than {MAX_MESSAGE_VALUES} JSON values: refused before it was decoded",
            message.len()
        )),
    }
}

/// The JSON values of `text` counted as it is parsed, nothing kept: stops at `limit + 1`.
pub fn count_values(text: &[u8], limit: usize) -> Count {
    let mut counter = Counter { count: 0, limit };
    let mut de = serde_json::Deserializer::from_slice(text);
    let counted =
        serde::de::DeserializeSeed::deserialize(&mut counter, &mut de).and_then(|()| de.end());
    match counted {
        Ok(()) => Count::Within(counter.count),
        Err(_) if counter.count > limit => Count::Over,
        Err(_) => Count::Unreadable,
    }
}

struct Counter {
    count: usize,
    limit: usize,
}

impl Counter {
    fn one<E: serde::de::Error>(&mut self) -> Result<(), E> {
        self.count += 1;
        if self.count > self.limit {
            return Err(E::custom("too many values"));
        }
        Ok(())
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for &mut Counter {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for &mut Counter {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        self.one()
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        self.one()
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
        self.one()
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        self.one()
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<(), E> {
        self.one()
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.one()
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.one()?;
        while seq.next_element_seed(&mut *self)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.one()?;
        while map.next_key::<serde::de::IgnoredAny>()?.is_some() {
            self.one()?;
            map.next_value_seed(&mut *self)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_counted_and_counting_stops_past_the_limit() {
        let text = r#"{"a": [1, 2.5, "x", null, true], "b": {"c": {}}}"#;
        // The object, its 2 keys, the array and its 5 values, the inner object, its key and
        // its {}.
        let text = text.as_bytes();
        assert_eq!(count_values(text, 100), Count::Within(12));
        assert_eq!(count_values(text, 12), Count::Within(12));
        assert_eq!(count_values(text, 11), Count::Over);
        assert_eq!(count_values(b"{not json", 100), Count::Unreadable);
        assert_eq!(count_values(b"[1] [2]", 100), Count::Unreadable);
        let many = format!("[{}0]", "0,".repeat(1_000_000));
        assert_eq!(count_values(many.as_bytes(), 1_000), Count::Over);
        assert!(count_or_refuse(many.as_bytes()).is_err());
        let few = format!("[\"{}\"]", "x".repeat(2 * COUNTED_ABOVE_BYTES));
        assert_eq!(count_or_refuse(few.as_bytes()), Ok(()));
        assert_eq!(count_or_refuse(&many.as_bytes()[..1000]), Ok(()));
    }
}
