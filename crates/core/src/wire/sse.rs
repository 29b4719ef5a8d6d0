//! Incremental server-sent-event decoding: bytes in, whole events out.

/// One server-sent event: its `event:` name (empty when absent) and its data lines joined.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
    /// Lines that were neither a field nor a comment (reported, not fatal).
    pub unknown: Vec<String>,
}

/// Incremental SSE decoding (the WHATWG event-stream format): bytes in, whole events out.
/// Lines end with LF, CRLF or CR; a blank line ends an event.
#[derive(Debug, Default)]
pub struct SseDecoder {
    buffer: Vec<u8>,
    current: SseEvent,
    has_data: bool,
    /// The previous chunk ended with CR: an LF starting this one belongs to it.
    after_cr: bool,
}

impl SseDecoder {
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        let mut bytes = bytes;
        if self.after_cr && bytes.first() == Some(&b'\n') {
            bytes = &bytes[1..];
        }
        self.after_cr = false;
        let mut start = 0;
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\n' | b'\r' => {
                    self.buffer.extend_from_slice(&bytes[start..i]);
                    let line = std::mem::take(&mut self.buffer);
                    self.line(&line, &mut out);
                    if bytes[i] == b'\r' {
                        if i + 1 == bytes.len() {
                            self.after_cr = true;
                        } else if bytes[i + 1] == b'\n' {
                            i += 1;
                        }
                    }
                    start = i + 1;
                }
                _ => {}
            }
            i += 1;
        }
        self.buffer.extend_from_slice(&bytes[start..]);
        out
    }

    /// The end of the stream: a last event without its blank line still counts.
    pub fn finish(&mut self) -> Vec<SseEvent> {
        let mut out = Vec::new();
        if !self.buffer.is_empty() {
            let line = std::mem::take(&mut self.buffer);
            self.line(&line, &mut out);
        }
        self.line(b"", &mut out);
        out
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if self.has_data || !self.current.unknown.is_empty() {
                out.push(std::mem::take(&mut self.current));
            }
            self.current = SseEvent::default();
            self.has_data = false;
            return;
        }
        if line[0] == b':' {
            return; // a comment (keep-alive)
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.current.event = value.to_string(),
            "id" | "retry" => {}
            _ => self.current.unknown.push(line.into_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::default();
        let mut out = Vec::new();
        for chunk in chunks {
            out.extend(decoder.push(chunk));
        }
        out.extend(decoder.finish());
        out
    }

    #[test]
    fn sse_events_survive_any_split_and_any_line_ending() {
        let stream = b"event: a\r\ndata: {\"x\":1}\r\n\r\n: keep-alive\n\ndata: one\ndata: two\n\nevent: b\rdata: 3\r\r";
        let whole = decode_all(&[stream]);
        assert_eq!(whole.len(), 3, "{whole:?}");
        assert_eq!(whole[0].event, "a");
        assert_eq!(whole[0].data, "{\"x\":1}");
        assert_eq!(whole[1].data, "one\ntwo");
        assert_eq!(whole[2].event, "b");
        assert_eq!(whole[2].data, "3");
        // Every split point, including inside CRLF, gives the same events.
        for at in 0..stream.len() {
            let (a, b) = stream.split_at(at);
            assert_eq!(decode_all(&[a, b]), whole, "split at {at}");
        }
    }

    #[test]
    fn a_last_event_without_its_blank_line_is_kept_and_unknown_lines_reported() {
        let events = decode_all(&[b"garbage line\n\ndata: [DONE]"]);
        assert_eq!(events[0].unknown, ["garbage line"]);
        assert_eq!(events[1].data, "[DONE]");
    }
}
