//! Reading a workspace file from disk as text: the one place that decides what counts as a
//! binary or an oversized file, so the editor context and the tools refuse the same files
//! with the same words.

use std::path::Path;

use super::untrusted_file;

use agentls_core::document::{Document, DocumentSnapshot, DISK_VERSION};
use agentls_core::language::Language;

/// Files above this are not read whole into a prompt's context.
pub const MAX_TEXT_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// How far a NUL byte is looked for: git's heuristic for binary content.
const BINARY_SNIFF_BYTES: usize = 8000;

/// Why a file cannot be used as text; the message names the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRefused(pub String);

impl std::fmt::Display for FileRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The file's text, or why it is refused: missing, a directory, not a regular file (a FIFO,
/// a device: a read could block or never end), too large, binary. Checked on the opened
/// descriptor (`untrusted_file::open_checked`); the path boundary is the tools' business.
pub fn read_text(path: &Path) -> Result<String, FileRefused> {
    let shown = path.display();
    let file = match untrusted_file::open_checked(path, None) {
        Ok(Some(file)) => file,
        Ok(None) => {
            return Err(FileRefused(format!(
                "cannot read {shown}: it does not exist"
            )))
        }
        Err(_) if path.is_dir() => {
            return Err(FileRefused(format!("{shown} is a directory, not a file")))
        }
        Err(reason) => return Err(FileRefused(format!("cannot read {shown}: {reason}"))),
    };
    let length = file
        .metadata()
        .map_err(|err| FileRefused(format!("cannot read {shown}: {err}")))?
        .len();
    if length > MAX_TEXT_FILE_BYTES {
        return Err(FileRefused(format!(
            "{shown} is too large ({length} bytes; the limit is {MAX_TEXT_FILE_BYTES})"
        )));
    }
    let bytes = untrusted_file::read_capped(file, MAX_TEXT_FILE_BYTES)
        .map_err(|reason| FileRefused(format!("cannot read {shown}: {reason}")))?;
    if bytes[..bytes.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
        return Err(FileRefused(format!(
            "{shown} is a binary file; only text files can be read"
        )));
    }
    String::from_utf8(bytes).map_err(|_| {
        FileRefused(format!(
            "{shown} is not UTF-8 text (a binary file?); only text files can be read"
        ))
    })
}

/// An image file's bytes (a regular file, at most `max_bytes`: `image::MAX_IMAGE_BYTES`),
/// checked as `read_text` checks a text file; the format is the core's to judge.
pub fn read_image_bytes(path: &Path, max_bytes: u64) -> Result<Vec<u8>, FileRefused> {
    let shown = path.display();
    let file = match untrusted_file::open_checked(path, None) {
        Ok(Some(file)) => file,
        Ok(None) => {
            return Err(FileRefused(format!(
                "cannot read {shown}: it does not exist"
            )))
        }
        Err(_) if path.is_dir() => {
            return Err(FileRefused(format!("{shown} is a directory, not a file")))
        }
        Err(reason) => return Err(FileRefused(format!("cannot read {shown}: {reason}"))),
    };
    let length = file
        .metadata()
        .map_err(|err| FileRefused(format!("cannot read {shown}: {err}")))?
        .len();
    if length > max_bytes {
        return Err(FileRefused(format!(
            "image {shown} is too large ({length} bytes; at most {max_bytes} bytes, 5 MB, are accepted)"
        )));
    }
    untrusted_file::read_capped(file, max_bytes)
        .map_err(|reason| FileRefused(format!("cannot read {shown}: {reason}")))
}

/// The file as a document (text and syntax tree) at `DISK_VERSION`.
pub fn read_document(
    path: &Path,
    max_syntax_bytes: usize,
) -> Result<DocumentSnapshot, FileRefused> {
    let text = read_text(path)?;
    let language = Language::detect("", Some(path));
    Ok(Document::new(&text, DISK_VERSION, language, max_syntax_bytes).snapshot())
}

/// Writes `text` to `path` (its directories created), when no editor applies a change: with
/// `expected`, only while the file still holds that text (the text the model saw).
pub fn write_checked(path: &Path, expected: Option<&str>, text: &str) -> Result<(), String> {
    if let Some(expected) = expected {
        let current = read_text(path).map_err(|r| r.0)?;
        if current != expected {
            return Err(format!(
                "{} changed on disk since it was read; read it again",
                path.display()
            ));
        }
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_read_and_binary_or_missing_files_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("a.rs");
        std::fs::write(&text, "fn a() {}\n").unwrap();
        let doc = read_document(&text, 1 << 20).unwrap();
        assert_eq!(doc.language, Language::Rust);
        assert!(doc.tree.is_some());

        let binary = dir.path().join("b.bin");
        std::fs::write(&binary, [0x7f, b'E', b'L', b'F', 0, 1, 2]).unwrap();
        let err = read_text(&binary).unwrap_err().0;
        assert!(err.contains("b.bin is a binary file"), "{err}");

        let latin1 = dir.path().join("c.txt");
        std::fs::write(&latin1, [b'c', 0xe9, b'\n']).unwrap();
        assert!(read_text(&latin1).unwrap_err().0.contains("not UTF-8"));

        assert!(read_text(&dir.path().join("missing"))
            .unwrap_err()
            .0
            .contains("cannot read"));
        assert!(read_text(dir.path())
            .unwrap_err()
            .0
            .contains("is a directory"));
    }
}
