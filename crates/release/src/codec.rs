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

/// Why a record could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("release data is not valid base64: {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("release data is not a valid gzip stream: {0}")]
    Gzip(#[source] io::Error),
    #[error("release JSON is invalid: {0}")]
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
    if raw.len() >= GZIP_MAGIC.len() && raw[..3] == GZIP_MAGIC {
        let mut json = Vec::with_capacity(raw.len() * 4);
        GzDecoder::new(raw)
            .read_to_end(&mut json)
            .map_err(CodecError::Gzip)?;
        Ok(serde_json::from_slice(&json)?)
    } else {
        Ok(serde_json::from_slice(raw)?)
    }
}

/// A `serde_json` formatter matching Go's `encoding/json` output bytes.
#[derive(Debug, Clone, Copy, Default)]
pub struct GoFormatter;

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
        w.write_all(go_float(value).as_bytes())
    }

    fn write_f32<W: ?Sized + Write>(&mut self, w: &mut W, value: f32) -> io::Result<()> {
        w.write_all(go_float(f64::from(value)).as_bytes())
    }
}

/// Go's `encoding/json` float64 text: shortest round-trip digits, exponent form only
/// below 1e-6 or from 1e21 up, with a signed exponent of at least one digit.
fn go_float(v: f64) -> String {
    let abs = v.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Rust prints "1e21" / "1.5e-7"; Go prints "1e+21" / "1.5e-07".
        let s = format!("{v:e}");
        match s.split_once('e') {
            Some((mant, exp)) => {
                let (sign, digits) = match exp.strip_prefix('-') {
                    Some(d) => ('-', d),
                    None => ('+', exp),
                };
                let digits = if digits.len() < 2 {
                    format!("0{digits}")
                } else {
                    digits.to_string()
                };
                // Go trims "e-07" to "e-7" but keeps "e+21".
                let digits = if sign == '-' {
                    digits.trim_start_matches('0').to_string()
                } else {
                    digits
                };
                format!("{mant}e{sign}{digits}")
            }
            None => s,
        }
    } else {
        // Integral floats print without a fraction in both languages' shortest form.
        format!("{v}")
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
    fn go_floats() {
        for (v, want) in [
            (0.5, "0.5"),
            (1e6, "1000000"),
            (1e21, "1e+21"),
            (1.5e-7, "1.5e-7"),
            (1e-7, "1e-7"),
            (0.000001, "0.000001"),
            (123456789.125, "123456789.125"),
            (-2.0, "-2"),
            (1.2345e300, "1.2345e+300"),
        ] {
            assert_eq!(go_float(v), want, "{v}");
        }
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
}
