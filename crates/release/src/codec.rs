//! Helm's storage encoding (`pkg/storage/driver/util.go`): JSON, gzip at best
//! compression, standard base64. Decoding accepts gzipped and plain JSON, telling them
//! apart by the gzip magic bytes as Helm does, so records from before Helm compressed
//! them still read.
//!
//! The JSON is written the way Go's `encoding/json` writes it where that is visible in
//! the bytes: `<`, `>`, `&`, U+2028 and U+2029 are escaped as `\u003c` and so on, and
//! floats use Go's shortest form (`1e+21`, `1e-07`).

use std::io::{self, Read, Write};

use base64::Engine;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use serde::Serialize;

use crate::record::Release;

/// The first bytes of a gzip stream, as Helm checks them.
const GZIP_MAGIC: [u8; 3] = [0x1f, 0x8b, 0x08];

/// The most a record may decompress to. Helm sets no bound; this one is
/// above anything Helm can write (a chart its loader accepts is at most
/// 100 MiB, which base64 in the record makes 134 MiB, plus the manifest),
/// and stops a gzip bomb in a Secret (deflate expands up to 1032:1) before
/// it costs more memory than that.
pub(crate) const MAX_DECOMPRESSED_BYTES: u64 = 256 << 20;

/// The deepest JSON nesting a record may have: Go's `encoding/json` limit,
/// so every record Helm can write and read decodes here too.
pub(crate) const MAX_JSON_DEPTH: usize = 10_000;

/// Why a record could not be encoded or decoded; each decoding stage
/// (base64, gzip, JSON) has its own variant.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("release data is not valid base64")]
    Base64(#[from] base64::DecodeError),
    #[error("release data is not a valid gzip stream")]
    Gzip(#[source] io::Error),
    #[error("release data decompresses to more than {MAX_DECOMPRESSED_BYTES} bytes; refusing it as a gzip bomb")]
    TooLarge,
    /// Neither the gzip magic nor the start of a JSON object.
    #[error("release data is neither gzip nor JSON (it starts with bytes {0})")]
    Unrecognised(String),
    #[error("release JSON nests deeper than {MAX_JSON_DEPTH} levels")]
    TooDeep,
    #[error("release JSON is invalid")]
    Json(#[from] serde_json::Error),
}

/// Serializes a value to JSON the way Go's `json.Marshal` would.
pub fn to_go_json<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::with_capacity(4096);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, GoFormatter);
    value.serialize(&mut ser)?;
    Ok(out)
}

/// Encodes a release as Helm stores it: base64(gzip(json)).
pub fn encode(release: &Release) -> Result<String, CodecError> {
    let json = to_go_json(release)?;
    let mut gz = GzEncoder::new(Vec::with_capacity(json.len() / 4 + 64), Compression::best());
    gz.write_all(&json).map_err(CodecError::Gzip)?;
    let compressed = gz.finish().map_err(CodecError::Gzip)?;
    Ok(base64::engine::general_purpose::STANDARD.encode(compressed))
}

/// Decodes Helm's stored form: base64, then gunzip when the gzip magic is present, then JSON.
pub fn decode(data: &str) -> Result<Release, CodecError> {
    decode_bytes(data.as_bytes())
}

/// Like [`decode`], from the raw bytes of the stored string.
pub fn decode_bytes(data: &[u8]) -> Result<Release, CodecError> {
    // Go's base64 decoder skips CR and LF; do the same so wrapped text still reads.
    let cleaned: Vec<u8>;
    let data = if data.iter().any(|b| *b == b'\n' || *b == b'\r') {
        cleaned = data
            .iter()
            .copied()
            .filter(|b| *b != b'\n' && *b != b'\r')
            .collect();
        &cleaned[..]
    } else {
        data
    };
    let raw = base64::engine::general_purpose::STANDARD.decode(data)?;
    decode_json_or_gzip(&raw)
}

/// Decodes already base64-decoded bytes: gzip-compressed or plain JSON.
pub fn decode_json_or_gzip(raw: &[u8]) -> Result<Release, CodecError> {
    // Two bytes are gzip's own magic; the third (deflate) is Helm's test.
    if raw.starts_with(&GZIP_MAGIC[..2]) {
        if !raw.starts_with(&GZIP_MAGIC) {
            return Err(CodecError::Gzip(io::Error::new(
                io::ErrorKind::InvalidData,
                "compression method is not deflate",
            )));
        }
        let mut json = Vec::with_capacity(raw.len().saturating_mul(4).min(1 << 20));
        GzDecoder::new(raw)
            .take(MAX_DECOMPRESSED_BYTES + 1)
            .read_to_end(&mut json)
            .map_err(CodecError::Gzip)?;
        if json.len() as u64 > MAX_DECOMPRESSED_BYTES {
            return Err(CodecError::TooLarge);
        }
        decode_json(&json)
    } else {
        decode_json(raw)
    }
}

/// The JSON stage: a release object, nested no deeper than Go reads.
fn decode_json(json: &[u8]) -> Result<Release, CodecError> {
    let start = json.iter().position(|b| !b.is_ascii_whitespace());
    let starts_json = |b: u8| b"{[\"-0123456789tfn".contains(&b);
    if let Some(i) = start.filter(|&i| !starts_json(json[i])) {
        let shown: Vec<String> = json[i..]
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect();
        return Err(CodecError::Unrecognised(shown.join(" ")));
    }
    let depth = nesting(json);
    if depth > MAX_JSON_DEPTH {
        return Err(CodecError::TooDeep);
    }
    let mut de = serde_json::Deserializer::from_slice(json);
    de.disable_recursion_limit();
    // serde's derived decoding recurses once per level: give it the stack
    // that this record's depth takes, on a fresh segment when needed.
    let stack = 256 * 1024 + depth * 4096;
    stacker::maybe_grow(stack, stack, || {
        let release = <Release as serde::Deserialize>::deserialize(&mut de)?;
        de.end()?;
        Ok(release)
    })
}

/// How deep objects and arrays nest in JSON text (strings skipped); stops
/// counting once past [`MAX_JSON_DEPTH`].
fn nesting(json: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut bytes = json.iter();
    while let Some(&b) = bytes.next() {
        match b {
            b'"' => {
                // To the closing quote, stepping over escapes.
                while let Some(&c) = bytes.next() {
                    match c {
                        b'\\' => {
                            bytes.next();
                        }
                        b'"' => break,
                        _ => {}
                    }
                }
            }
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
                if deepest > MAX_JSON_DEPTH {
                    break;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// A `serde_json` formatter matching Go's `encoding/json` output bytes.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct GoFormatter;

impl serde_json::ser::Formatter for GoFormatter {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            let esc = match c {
                '<' => "\\u003c",
                '>' => "\\u003e",
                '&' => "\\u0026",
                '\u{2028}' => "\\u2028",
                '\u{2029}' => "\\u2029",
                _ => continue,
            };
            w.write_all(&fragment.as_bytes()[start..i])?;
            w.write_all(esc.as_bytes())?;
            start = i + c.len_utf8();
        }
        w.write_all(&fragment.as_bytes()[start..])
    }

    fn write_f64<W: ?Sized + Write>(&mut self, w: &mut W, value: f64) -> io::Result<()> {
        w.write_all(gostd::strconv::format_json_float(value, 64).as_bytes())
    }

    fn write_f32<W: ?Sized + Write>(&mut self, w: &mut W, value: f32) -> io::Result<()> {
        w.write_all(gostd::strconv::format_json_float(f64::from(value), 64).as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Release, Status};

    fn sample() -> Release {
        let mut rel = Release {
            name: "demo".into(),
            version: 2,
            namespace: "ns".into(),
            manifest: "kind: <A> & B".into(),
            ..Release::default()
        };
        rel.set_status(Status::Deployed, "done");
        rel.config.insert("ratio".into(), serde_json::json!(0.5));
        rel
    }

    #[test]
    fn round_trip() {
        let rel = sample();
        let text = encode(&rel).unwrap();
        assert_eq!(decode(&text).unwrap(), rel);
    }

    #[test]
    fn encoded_is_gzip_inside_base64() {
        let text = encode(&sample()).unwrap();
        let raw = base64::engine::general_purpose::STANDARD
            .decode(&text)
            .unwrap();
        assert_eq!(&raw[..3], &GZIP_MAGIC);
    }

    #[test]
    fn plain_json_is_accepted() {
        let json = to_go_json(&sample()).unwrap();
        let text = base64::engine::general_purpose::STANDARD.encode(&json);
        assert_eq!(decode(&text).unwrap(), sample());
    }

    #[test]
    fn go_escapes() {
        let json = String::from_utf8(to_go_json(&"a<b>&c\u{2028}é").unwrap()).unwrap();
        assert_eq!(json, "\"a\\u003cb\\u003e\\u0026c\\u2028é\"");
    }

    #[test]
    fn floats_are_written_as_go_writes_them() {
        let json = String::from_utf8(to_go_json(&[1e21, 1.5e-7, 1e6, -2.0]).unwrap()).unwrap();
        assert_eq!(json, "[1e+21,1.5e-7,1000000,-2]");
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(matches!(decode("!!!"), Err(CodecError::Base64(_))));
        assert!(matches!(decode(""), Err(CodecError::Json(_))));
        // Gzip magic followed by junk.
        let text = base64::engine::general_purpose::STANDARD.encode([0x1f, 0x8b, 0x08, 1, 2, 3]);
        assert!(matches!(decode(&text), Err(CodecError::Gzip(_))));
    }

    #[test]
    fn wrapped_base64_is_accepted() {
        let text = encode(&sample()).unwrap();
        let wrapped: String = text
            .as_bytes()
            .chunks(20)
            .map(|c| std::str::from_utf8(c).unwrap().to_string() + "\n")
            .collect();
        assert_eq!(decode(&wrapped).unwrap(), sample());
    }

    fn gzip_b64(json: &[u8]) -> String {
        let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
        gz.write_all(json).unwrap();
        base64::engine::general_purpose::STANDARD.encode(gz.finish().unwrap())
    }

    /// `{"name":"demo","config":{"k":{"k":…null…}}}` with `levels` objects in all.
    fn nested_record(levels: usize) -> Vec<u8> {
        let mut json = br#"{"name":"demo","config":"#.to_vec();
        json.extend(std::iter::repeat_n(&br#"{"k":"#[..], levels - 1).flatten());
        json.extend_from_slice(b"null");
        json.extend(std::iter::repeat_n(b'}', levels));
        json
    }

    #[test]
    fn each_stage_names_its_failure() {
        let gz = base64::engine::general_purpose::STANDARD
            .decode(encode(&sample()).unwrap())
            .unwrap();
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        // A damaged deflate body, a truncated stream, a non-deflate header.
        let mut body = gz.clone();
        let mid = body.len() / 2;
        body[mid] ^= 0xff;
        body[mid + 1] ^= 0xff;
        for bad in [
            body,
            gz[..gz.len() / 2].to_vec(),
            [&[0x1f, 0x8b, 0x07][..], &gz[3..]].concat(),
        ] {
            let e = decode(&b64(&bad)).unwrap_err();
            assert!(matches!(e, CodecError::Gzip(_)), "{e}");
        }
        let e = decode(&b64(b"\x00\x01garbage")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "release data is neither gzip nor JSON (it starts with bytes 00 01 67 61 72 62 61 67)"
        );
        let e = decode(&b64(br#"{"name": 1"#)).unwrap_err();
        assert_eq!(e.to_string(), "release JSON is invalid");
        let text = crate::api_error::chain(&e);
        assert!(text.starts_with("release JSON is invalid: "), "{text}");
    }

    #[test]
    fn a_gzip_bomb_is_refused_without_inflating_it() {
        // 300 MiB of zeros compress to about 300 KiB.
        let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
        let zeros = vec![b' '; 1 << 20];
        for _ in 0..300 {
            gz.write_all(&zeros).unwrap();
        }
        let text = base64::engine::general_purpose::STANDARD.encode(gz.finish().unwrap());
        assert!(matches!(decode(&text), Err(CodecError::TooLarge)));
    }

    #[test]
    fn json_nests_as_deep_as_go_reads_and_no_deeper() {
        let e = decode(&gzip_b64(&nested_record(MAX_JSON_DEPTH + 1))).unwrap_err();
        assert_eq!(e.to_string(), "release JSON nests deeper than 10000 levels");
        // Within the limit it decodes; the tree is dropped on a thread with
        // room for its recursive `Drop`, as callers holding one must.
        let text = gzip_b64(&nested_record(MAX_JSON_DEPTH));
        let decoded = std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn(move || decode(&text).map(|r| r.config.len()))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(decoded.unwrap(), 1);
        // Deeper than serde_json's own default limit of 128, on this thread.
        assert_eq!(decode(&gzip_b64(&nested_record(300))).unwrap().name, "demo");
    }

    #[test]
    fn numbers_take_gos_spelling_after_one_round_trip() {
        // Found by fuzzing: `0.0` reads as a float and is written as Go
        // writes float64 zero, `0`; from then on the bytes stay the same.
        let json = br#"{"name":"demo","config":{"ratio":0.0,"big":1e21}}"#;
        let rel = decode_json_or_gzip(json).unwrap();
        let once = to_go_json(&rel).unwrap();
        assert_eq!(
            std::str::from_utf8(&once).unwrap(),
            r#"{"name":"demo","config":{"big":1e+21,"ratio":0}}"#
        );
        let twice = to_go_json(&decode(&encode(&rel).unwrap()).unwrap()).unwrap();
        assert_eq!(twice, once);
    }
}
