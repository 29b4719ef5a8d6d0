//! The index as bytes, to be kept on disk between runs: a magic string, a format version,
//! a checksum of the payload, then the payload (the name table and each file's entry).
//! [`decode`] checks all of it and every length inside, so a truncated, corrupt or older
//! file is an error (the caller rebuilds), never a panic or a wrong index.

use super::{Definition, DefinitionParts, FileEntry, FileStamp, Import, SymbolIndex, SymbolKind};
use crate::language::Language;

const MAGIC: &[u8; 16] = b"agentls-symbols\0";
/// Bump when the layout or what extraction produces changes: an old file is then rebuilt.
pub const FORMAT_VERSION: u32 = 2;
pub const HEADER_LEN: usize = 16 + 4 + 8 + 8;
/// The payload is handed to the writer in chunks of about this size.
const CHUNK: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    NotAnIndex,
    Version(u32),
    Checksum,
    Malformed(&'static str),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::NotAnIndex => write!(f, "not a symbol index file"),
            DecodeError::Version(v) => {
                write!(f, "format version {v}, this build reads {FORMAT_VERSION}")
            }
            DecodeError::Checksum => write!(f, "checksum mismatch"),
            DecodeError::Malformed(what) => write!(f, "malformed {what}"),
        }
    }
}

/// The index's bytes.
pub fn encode(index: &SymbolIndex) -> Vec<u8> {
    let mut payload = Vec::new();
    let header = encode_streaming(index, &mut |chunk| payload.extend_from_slice(chunk));
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&header);
    out.extend_from_slice(&payload);
    out
}

/// The payload handed to `sink` in chunks of about 1 MB (so a large index is never copied
/// whole into memory), then the header that goes before it: a writer reserves
/// [`HEADER_LEN`] bytes, streams the payload after them and writes the header last.
pub fn encode_streaming(index: &SymbolIndex, sink: &mut dyn FnMut(&[u8])) -> [u8; HEADER_LEN] {
    let mut sum = Checksum::default();
    let mut length = 0u64;
    let mut flush = |w: &mut Writer| {
        sum.update(&w.0);
        length += w.0.len() as u64;
        sink(&w.0);
        w.0.clear();
    };
    let mut w = Writer(Vec::with_capacity(CHUNK + 4096));
    w.u32(index.name_count() as u32);
    for id in 0..index.name_count() {
        w.str(index.name(id as u32));
    }
    let files: Vec<&FileEntry> = index.files().collect();
    w.u32(files.len() as u32);
    for entry in files {
        w.str(&entry.path);
        w.u64(entry.stamp.mtime_ns);
        w.u64(entry.stamp.size);
        w.u8(language_code(entry.language));
        w.u32(entry.definitions.len() as u32);
        for d in &entry.definitions {
            w.str(d.name());
            w.u8(kind_code(d.kind));
            match d.container() {
                Some(c) => {
                    w.u8(1);
                    w.str(c);
                }
                None => w.u8(0),
            }
            w.u32(d.start_line);
            w.u32(d.end_line);
            w.u32(d.name_line);
            w.str(d.signature());
            w.str(d.doc());
            w.u32(d.field_count() as u32);
            for field in d.fields() {
                w.str(field);
            }
        }
        w.u32(entry.imports.len() as u32);
        for import in &entry.imports {
            w.u32(import.line);
            w.str(import.text());
            w.u32(import.names().len() as u32);
            for name in import.names() {
                w.str(name);
            }
        }
        w.u32(entry.references.len() as u32);
        for (name, line) in &entry.references {
            w.u32(*name);
            w.u32(*line);
        }
        if w.0.len() >= CHUNK {
            flush(&mut w);
        }
    }
    flush(&mut w);
    let mut header = [0u8; HEADER_LEN];
    header[..16].copy_from_slice(MAGIC);
    header[16..20].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    header[20..28].copy_from_slice(&sum.finish().to_le_bytes());
    header[28..36].copy_from_slice(&length.to_le_bytes());
    header
}

/// The index the bytes hold, or why they cannot be trusted.
pub fn decode(bytes: &[u8]) -> Result<SymbolIndex, DecodeError> {
    if bytes.len() < HEADER_LEN || &bytes[..16] != MAGIC {
        return Err(DecodeError::NotAnIndex);
    }
    let mut header = Reader { bytes, at: 16 };
    let version = header.u32()?;
    if version != FORMAT_VERSION {
        return Err(DecodeError::Version(version));
    }
    let sum = header.u64()?;
    let len = header.u64()?;
    let payload = &bytes[HEADER_LEN..];
    if payload.len() as u64 != len {
        return Err(DecodeError::Malformed("length"));
    }
    if checksum(payload) != sum {
        return Err(DecodeError::Checksum);
    }
    let mut r = Reader {
        bytes: payload,
        at: 0,
    };
    let mut index = SymbolIndex::new();
    let names = r.count()?;
    for _ in 0..names {
        let name = r.str()?;
        if index.name_id(&name).is_some() {
            return Err(DecodeError::Malformed("name table"));
        }
        index.intern(&name);
    }
    let files = r.count()?;
    for _ in 0..files {
        let entry = file_entry(&mut r, names)?;
        if index.file_ids.contains_key(&entry.path) {
            return Err(DecodeError::Malformed("duplicate path"));
        }
        index.insert_entry(entry);
    }
    if r.at != payload.len() {
        return Err(DecodeError::Malformed("trailing bytes"));
    }
    index.shrink_to_fit();
    Ok(index)
}

fn file_entry(r: &mut Reader, names: usize) -> Result<FileEntry, DecodeError> {
    let path = r.str()?;
    let stamp = FileStamp {
        mtime_ns: r.u64()?,
        size: r.u64()?,
    };
    let language = language_of(r.u8()?).ok_or(DecodeError::Malformed("language"))?;
    let mut definitions = Vec::new();
    for _ in 0..r.count()? {
        let name = r.str()?;
        let kind = kind_of(r.u8()?).ok_or(DecodeError::Malformed("kind"))?;
        let container = match r.u8()? {
            0 => None,
            1 => Some(r.str()?),
            _ => return Err(DecodeError::Malformed("container")),
        };
        let (start_line, end_line, name_line) = (r.u32()?, r.u32()?, r.u32()?);
        let signature = r.str()?;
        let doc = r.str()?;
        let mut fields = Vec::new();
        for _ in 0..r.count()? {
            fields.push(r.str()?);
        }
        definitions.push(Definition::from(DefinitionParts {
            name,
            kind,
            container,
            start_line,
            end_line,
            name_line,
            signature,
            doc,
            fields,
        }));
    }
    let mut imports = Vec::new();
    for _ in 0..r.count()? {
        let line = r.u32()?;
        let text = r.str()?;
        let mut import_names = Vec::new();
        for _ in 0..r.count()? {
            import_names.push(r.str()?);
        }
        imports.push(Import::new(line, &text, &import_names));
    }
    let mut references = Vec::new();
    for _ in 0..r.count()? {
        let name = r.u32()?;
        if name as usize >= names {
            return Err(DecodeError::Malformed("reference"));
        }
        references.push((name, r.u32()?));
    }
    if !references.is_sorted() {
        return Err(DecodeError::Malformed("reference order"));
    }
    Ok(FileEntry {
        path,
        stamp,
        language,
        definitions,
        imports,
        references,
    })
}

/// A fast 64-bit checksum over 8-byte words, fed in any chunks: it detects damage, not
/// tampering (the file is the user's own, under 0600).
#[derive(Default)]
struct Checksum {
    hash: u64,
    pending: Vec<u8>,
    length: u64,
}

impl Checksum {
    fn mix(hash: u64, word: u64) -> u64 {
        (hash ^ word)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(29)
    }

    fn update(&mut self, mut bytes: &[u8]) {
        self.length += bytes.len() as u64;
        if !self.pending.is_empty() {
            let take = (8 - self.pending.len()).min(bytes.len());
            self.pending.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.pending.len() < 8 {
                return;
            }
            let word = u64::from_le_bytes(self.pending[..8].try_into().unwrap_or([0; 8]));
            self.hash = Self::mix(self.hash, word);
            self.pending.clear();
        }
        let mut words = bytes.chunks_exact(8);
        for chunk in &mut words {
            let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
            self.hash = Self::mix(self.hash, word);
        }
        self.pending.extend_from_slice(words.remainder());
    }

    fn finish(mut self) -> u64 {
        for &b in &std::mem::take(&mut self.pending) {
            self.hash = Self::mix(self.hash, b as u64);
        }
        let hash = Self::mix(self.hash ^ 0x243F_6A88_85A3_08D3, self.length);
        hash ^ (hash >> 32)
    }
}

fn checksum(bytes: &[u8]) -> u64 {
    let mut sum = Checksum::default();
    sum.update(bytes);
    sum.finish()
}

const LANGUAGES: [Language; 6] = [
    Language::Rust,
    Language::Python,
    Language::TypeScript,
    Language::Tsx,
    Language::JavaScript,
    Language::Go,
];

fn language_code(language: Language) -> u8 {
    LANGUAGES
        .iter()
        .position(|l| *l == language)
        .map_or(255, |i| i as u8)
}

fn language_of(code: u8) -> Option<Language> {
    match code {
        255 => Some(Language::PlainText),
        _ => LANGUAGES.get(code as usize).copied(),
    }
}

const KINDS: [SymbolKind; 12] = [
    SymbolKind::Function,
    SymbolKind::Method,
    SymbolKind::Struct,
    SymbolKind::Class,
    SymbolKind::Enum,
    SymbolKind::Trait,
    SymbolKind::Interface,
    SymbolKind::Impl,
    SymbolKind::Module,
    SymbolKind::Constant,
    SymbolKind::TypeAlias,
    SymbolKind::Macro,
];

fn kind_code(kind: SymbolKind) -> u8 {
    KINDS.iter().position(|k| *k == kind).unwrap_or(0) as u8
}

fn kind_of(code: u8) -> Option<SymbolKind> {
    KINDS.get(code as usize).copied()
}

struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.0.extend_from_slice(s.as_bytes());
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], DecodeError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|end| *end <= self.bytes.len());
        let end = end.ok_or(DecodeError::Malformed("truncated"))?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }
    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, DecodeError> {
        let b = self.take(8)?;
        let mut word = [0u8; 8];
        word.copy_from_slice(b);
        Ok(u64::from_le_bytes(word))
    }
    /// A count of items that each take at least one byte: larger than what is left is a lie.
    fn count(&mut self) -> Result<usize, DecodeError> {
        let n = self.u32()? as usize;
        if n > self.bytes.len() - self.at {
            return Err(DecodeError::Malformed("count"));
        }
        Ok(n)
    }
    fn str(&mut self) -> Result<String, DecodeError> {
        let n = self.u32()? as usize;
        let bytes = self.take(n)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| DecodeError::Malformed("text"))
    }
}
