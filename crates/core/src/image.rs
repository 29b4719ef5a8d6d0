//! Images in the conversation: what a prompt or a tool may attach, checked and measured
//! without an image crate. The size comes from the file's header (PNG `IHDR`, JPEG `SOF`,
//! GIF's logical screen, WebP's `VP8 `/`VP8L`/`VP8X` chunk); the cost in tokens follows the
//! providers' published formulas. Pure: the bytes are given, never read here.

/// Anthropic's API refuses an image over 5 MB; the same bound holds for every provider so a
/// session log stays bounded (the bytes are kept in it).
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;
/// Images one message (a prompt, or one tool's output) may carry.
pub const MAX_IMAGES_PER_MESSAGE: usize = 8;

/// The image data (base64) a session's history may hold: a prompt that would pass it is
/// refused, so a session log stays bounded (start a new session, or compact: a summary
/// keeps the labels, not the bytes).
pub const MAX_SESSION_IMAGE_DATA: usize = 64 * 1024 * 1024;

/// The formats every provider agentls speaks accepts.
pub const MIME_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// An image as the history keeps it: its bytes (base64), what they are, and what the
/// model's provider counts for it (computed when it was recorded).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Image {
    /// A name to show (`screenshot.png`, `pasted image 1`).
    pub name: String,
    pub mime_type: String,
    /// Base64 (standard alphabet, padded) of the file.
    pub data: String,
    pub width: u32,
    pub height: u32,
    /// The prompt tokens this image costs (the provider's formula).
    pub tokens: usize,
}

impl Image {
    /// `[image: NAME, WxH]`: what a summary, a transcript or a text-only view shows of it.
    pub fn label(&self) -> String {
        format!("[image: {}, {}x{}]", self.name, self.width, self.height)
    }

    /// The `data:` URL OpenAI's `image_url` takes.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.mime_type, self.data)
    }
}

/// Whose formula counts an image's tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenFormula {
    /// OpenAI (high detail): fit in 2048×2048, shortest side to 768, then 85 + 170 per
    /// 512-px tile.
    OpenAi,
    /// Anthropic: long edge scaled to at most 1568 px, then width × height / 750.
    Anthropic,
}

/// The tokens an image of `width`×`height` costs under `formula`.
pub fn tokens(formula: TokenFormula, width: u32, height: u32) -> usize {
    let (w, h) = (f64::from(width.max(1)), f64::from(height.max(1)));
    match formula {
        TokenFormula::OpenAi => {
            let fit = (2048.0 / w.max(h)).min(1.0);
            let (w, h) = (w * fit, h * fit);
            let shortest = (768.0 / w.min(h)).min(1.0);
            let (w, h) = ((w * shortest).floor(), (h * shortest).floor());
            let tiles = (w / 512.0).ceil() * (h / 512.0).ceil();
            85 + 170 * tiles as usize
        }
        TokenFormula::Anthropic => {
            let fit = (1568.0 / w.max(h)).min(1.0);
            let (w, h) = ((w * fit).floor(), (h * fit).floor());
            ((w * h) / 750.0).ceil() as usize
        }
    }
}

/// The format of `bytes` by its signature, and its width and height from its header.
pub fn sniff(bytes: &[u8]) -> Option<(&'static str, u32, u32)> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        // The IHDR chunk is first: length, "IHDR", width, height (big-endian).
        if bytes.get(12..16)? != b"IHDR" {
            return None;
        }
        return Some(("image/png", be32(bytes, 16)?, be32(bytes, 20)?));
    }
    if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        return Some(("image/gif", le16(bytes, 6)?, le16(bytes, 8)?));
    }
    if bytes.starts_with(b"\xff\xd8") {
        let (w, h) = jpeg_size(bytes)?;
        return Some(("image/jpeg", w, h));
    }
    if bytes.starts_with(b"RIFF") && bytes.get(8..12) == Some(b"WEBP") {
        let (w, h) = webp_size(bytes)?;
        return Some(("image/webp", w, h));
    }
    None
}

/// The mime type a file name says (by its extension), for the four formats.
pub fn mime_for_name(name: &str) -> Option<&'static str> {
    let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
    match ext.as_str() {
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "gif" => Some("image/gif"),
        "webp" => Some("image/webp"),
        _ => None,
    }
}

/// Checks `bytes` as an image: a known format (whatever `declared` says, the bytes decide,
/// and a mismatch is an error), within the size limit, with a readable size.
pub fn check(
    name: &str,
    declared: Option<&str>,
    bytes: &[u8],
    formula: TokenFormula,
) -> Result<Image, String> {
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(format!(
            "image {name} is {} bytes; at most {MAX_IMAGE_BYTES} bytes (5 MB) are accepted",
            bytes.len()
        ));
    }
    let Some((mime, width, height)) = sniff(bytes) else {
        return Err(format!(
            "{name} is not a PNG, JPEG, GIF or WebP image (or its header is damaged)"
        ));
    };
    if let Some(declared) = declared {
        if declared != mime {
            return Err(format!(
                "image {name} says it is {declared} but its bytes are {mime}"
            ));
        }
    }
    if width == 0 || height == 0 {
        return Err(format!("image {name} has no pixels ({width}x{height})"));
    }
    Ok(Image {
        name: name.to_string(),
        mime_type: mime.to_string(),
        data: base64_encode(bytes),
        width,
        height,
        tokens: tokens(formula, width, height),
    })
}

/// Decodes base64 image data as a client sends it (a `data:` URL prefix is accepted), then
/// [`check`]s it.
pub fn from_base64(
    name: &str,
    declared: Option<&str>,
    data: &str,
    formula: TokenFormula,
) -> Result<Image, String> {
    let data = match data.split_once(";base64,") {
        Some((prefix, rest)) if prefix.starts_with("data:") => rest,
        _ => data,
    };
    // Past this the decoded bytes cannot fit the limit: refused before decoding.
    if data.len() > MAX_IMAGE_BYTES / 3 * 4 + 8 {
        return Err(format!(
            "image {name} is larger than {MAX_IMAGE_BYTES} bytes (5 MB), the most accepted"
        ));
    }
    let compact: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let bytes = base64_decode(&compact)
        .ok_or_else(|| format!("image {name}: its data is not valid base64"))?;
    check(name, declared, &bytes, formula)
}

/// The error for a message with more than [`MAX_IMAGES_PER_MESSAGE`] images.
pub fn check_count(count: usize) -> Result<(), String> {
    if count > MAX_IMAGES_PER_MESSAGE {
        return Err(format!(
            "{count} images in one message; at most {MAX_IMAGES_PER_MESSAGE} are accepted"
        ));
    }
    Ok(())
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

const INVALID: u8 = 0xff;

/// Each byte's value in [`BASE64`], or `INVALID`: one lookup per character (a 5 MB image
/// is 7 million of them).
const BASE64_VALUES: [u8; 256] = {
    let mut values = [INVALID; 256];
    let mut i = 0;
    while i < 64 {
        values[BASE64[i] as usize] = i as u8;
        i += 1;
    }
    values
};

/// Standard base64 with padding (a dozen lines instead of a dependency).
pub fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(BASE64[(n >> shift & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard base64 (padding optional); `None` for any other character.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let value = BASE64_VALUES[usize::from(c)];
        if value == INVALID {
            return None;
        }
        let value = u32::from(value);
        acc = acc << 6 | value;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits & 0xff) as u8);
        }
    }
    // A lone 6-bit remainder is not base64.
    (bits < 6).then_some(out)
}

fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn be16(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from(u16::from_be_bytes(
        bytes.get(at..at + 2)?.try_into().ok()?,
    )))
}

fn le16(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from(u16::from_le_bytes(
        bytes.get(at..at + 2)?.try_into().ok()?,
    )))
}

fn le24(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at + 3)?;
    Some(u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16)
}

/// Walks the JPEG's segments to the first start-of-frame marker (SOF0..SOF15 but DHT,
/// JPG and DAC), which holds the height then the width.
fn jpeg_size(bytes: &[u8]) -> Option<(u32, u32)> {
    let mut at = 2;
    loop {
        // Fill bytes (0xFF) may precede a marker.
        while *bytes.get(at)? == 0xff && *bytes.get(at + 1)? == 0xff {
            at += 1;
        }
        if *bytes.get(at)? != 0xff {
            return None;
        }
        let marker = *bytes.get(at + 1)?;
        match marker {
            // Standalone markers carry no length.
            0xd0..=0xd9 | 0x01 => {
                at += 2;
                continue;
            }
            0xc0..=0xcf if !matches!(marker, 0xc4 | 0xc8 | 0xcc) => {
                let height = be16(bytes, at + 5)?;
                let width = be16(bytes, at + 7)?;
                return Some((width, height));
            }
            _ => {
                let length = be16(bytes, at + 2)? as usize;
                if length < 2 {
                    return None;
                }
                at += 2 + length;
            }
        }
    }
}

fn webp_size(bytes: &[u8]) -> Option<(u32, u32)> {
    match bytes.get(12..16)? {
        // Lossy: a frame tag (3 bytes), the start code, then 14-bit width and height.
        b"VP8 " => {
            if bytes.get(23..26)? != [0x9d, 0x01, 0x2a] {
                return None;
            }
            Some((le16(bytes, 26)? & 0x3fff, le16(bytes, 28)? & 0x3fff))
        }
        // Lossless: a signature byte, then 14 bits of width - 1 and 14 of height - 1.
        b"VP8L" => {
            if *bytes.get(20)? != 0x2f {
                return None;
            }
            let b = u32::from_le_bytes(bytes.get(21..25)?.try_into().ok()?);
            Some(((b & 0x3fff) + 1, ((b >> 14) & 0x3fff) + 1))
        }
        // Extended: 24-bit canvas width - 1 and height - 1.
        b"VP8X" => Some((le24(bytes, 24)? + 1, le24(bytes, 27)? + 1)),
        _ => None,
    }
}

/// A valid PNG of `width`×`height` (one black pixel row repeated; tests and fixtures).
#[cfg(any(test, feature = "test-support"))]
pub fn test_png(width: u32, height: u32) -> Vec<u8> {
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend_from_slice(&13u32.to_be_bytes());
    png.extend_from_slice(b"IHDR");
    png.extend_from_slice(&width.to_be_bytes());
    png.extend_from_slice(&height.to_be_bytes());
    // 8-bit grayscale, no interlace, then a CRC that no parser here checks.
    png.extend_from_slice(&[8, 0, 0, 0, 0, 0, 0, 0, 0]);
    png.extend_from_slice(&0u32.to_be_bytes());
    png.extend_from_slice(b"IEND");
    png.extend_from_slice(&[0xae, 0x42, 0x60, 0x82]);
    png
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_every_length() {
        for len in 0..8 {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + 250) as u8).collect();
            assert_eq!(base64_decode(&base64_encode(&bytes)), Some(bytes));
        }
        assert_eq!(base64_encode(b"Man"), "TWFu");
        assert_eq!(base64_encode(b"Ma"), "TWE=");
        assert_eq!(base64_decode("TWE"), Some(b"Ma".to_vec()));
        assert_eq!(base64_decode("T"), None);
        assert_eq!(base64_decode("TW-u"), None);
    }

    #[test]
    fn openai_counts_tiles_after_scaling() {
        // OpenAI's own examples: 1024x1024 → 765; 2048x4096 → 1105.
        assert_eq!(tokens(TokenFormula::OpenAi, 1024, 1024), 765);
        assert_eq!(tokens(TokenFormula::OpenAi, 2048, 4096), 1105);
        assert_eq!(tokens(TokenFormula::OpenAi, 100, 100), 255);
    }

    #[test]
    fn anthropic_counts_pixels_over_750_after_fitting_1568() {
        // Anthropic's table: 1092x1092 ≈ 1590 tokens; 200x200 ≈ 54.
        assert_eq!(tokens(TokenFormula::Anthropic, 1092, 1092), 1590);
        assert_eq!(tokens(TokenFormula::Anthropic, 200, 200), 54);
        // A 3136x3136 image is scaled to 1568x1568 first.
        assert_eq!(tokens(TokenFormula::Anthropic, 3136, 3136), 3279);
    }

    #[test]
    fn sizes_come_from_each_formats_header() {
        assert_eq!(sniff(&test_png(640, 480)), Some(("image/png", 640, 480)));
        let mut gif = b"GIF89a".to_vec();
        gif.extend_from_slice(&[0x20, 0x03, 0x58, 0x02, 0, 0, 0]);
        assert_eq!(sniff(&gif), Some(("image/gif", 800, 600)));
        // JPEG: SOI, an APP0 segment, then SOF0 with height 300, width 400.
        let mut jpeg = vec![0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x4a, 0x46];
        jpeg.extend_from_slice(&[0xff, 0xc0, 0x00, 0x11, 0x08, 0x01, 0x2c, 0x01, 0x90, 0x03]);
        assert_eq!(sniff(&jpeg), Some(("image/jpeg", 400, 300)));
        // A DHT segment (0xC4) before SOF2 is skipped, not read as a frame.
        let mut progressive = vec![0xff, 0xd8, 0xff, 0xc4, 0x00, 0x03, 0x00];
        progressive.extend_from_slice(&[0xff, 0xc2, 0x00, 0x11, 0x08, 0x00, 0x10, 0x00, 0x20]);
        assert_eq!(sniff(&progressive), Some(("image/jpeg", 32, 16)));
        let mut webp = b"RIFF\0\0\0\0WEBPVP8X".to_vec();
        webp.extend_from_slice(&[10, 0, 0, 0, 0, 0, 0, 0, 0x1f, 0x03, 0x00, 0x57, 0x02, 0x00]);
        assert_eq!(sniff(&webp), Some(("image/webp", 800, 600)));
        let mut lossless = b"RIFF\0\0\0\0WEBPVP8L\0\0\0\0\x2f".to_vec();
        // width-1 = 99, height-1 = 49.
        let bits: u32 = 99 | (49 << 14);
        lossless.extend_from_slice(&bits.to_le_bytes());
        assert_eq!(sniff(&lossless), Some(("image/webp", 100, 50)));
        let mut lossy = b"RIFF\0\0\0\0WEBPVP8 \0\0\0\0\0\0\0\x9d\x01\x2a".to_vec();
        lossy.extend_from_slice(&[0x40, 0x01, 0xf0, 0x00]);
        assert_eq!(sniff(&lossy), Some(("image/webp", 320, 240)));
        assert_eq!(sniff(b"not an image"), None);
        assert_eq!(
            sniff(b"\x89PNG\r\n\x1a\n"),
            None,
            "a cut header is no image"
        );
        assert_eq!(sniff(&[0xff, 0xd8, 0xff]), None);
    }

    #[test]
    fn checks_refuse_what_a_provider_would_with_a_clear_message() {
        let png = test_png(10, 20);
        let image = check("a.png", Some("image/png"), &png, TokenFormula::Anthropic).unwrap();
        assert_eq!(image.label(), "[image: a.png, 10x20]");
        assert!(image
            .data_url()
            .starts_with("data:image/png;base64,iVBORw0KGgo"));
        let err = check("a.png", Some("image/jpeg"), &png, TokenFormula::OpenAi).unwrap_err();
        assert!(err.contains("image/jpeg"), "{err}");
        let err = check("x.txt", None, b"hello", TokenFormula::OpenAi).unwrap_err();
        assert!(err.contains("not a PNG, JPEG, GIF or WebP"), "{err}");
        let mut big = test_png(10, 10);
        big.resize(MAX_IMAGE_BYTES + 1, 0);
        let err = check("big.png", None, &big, TokenFormula::OpenAi).unwrap_err();
        assert!(err.contains("5 MB"), "{err}");
        let data = base64_encode(&png);
        let from_url = from_base64(
            "p",
            None,
            &format!("data:image/png;base64,{data}"),
            TokenFormula::OpenAi,
        )
        .unwrap();
        assert_eq!((from_url.width, from_url.height), (10, 20));
        assert!(from_base64("p", None, "!!", TokenFormula::OpenAi)
            .unwrap_err()
            .contains("base64"));
        assert!(check_count(MAX_IMAGES_PER_MESSAGE).is_ok());
        assert!(check_count(MAX_IMAGES_PER_MESSAGE + 1)
            .unwrap_err()
            .contains("at most 8"));
        assert_eq!(mime_for_name("Shot.PNG"), Some("image/png"));
        assert_eq!(mime_for_name("a.svg"), None);
    }
}
