//! Go strings are byte strings; Rust strings are UTF-8. This module carries
//! the bytes a Go string may hold that are not valid UTF-8 (a `substr` that
//! cuts a character in half, `"\xff"`, `b64dec` of binary data,
//! `.Files.Get` of a binary file) inside a Rust `str`, so that functions which
//! look at bytes (`b64enc`, `sha256sum`, `len`, `%x`) see exactly what Go
//! sees.
//!
//! Each stray byte `0x80..=0xFF` is stored as the private-use character
//! `U+10E000 + byte` (the middle of plane 16, private use that no
//! text encoding assigns; U+10FFFF and other edge code points stay text). Valid UTF-8
//! is stored unchanged, so ordinary strings pay nothing but a `memchr` for the
//! lead byte `0xF4` when bytes are asked for.

use std::borrow::Cow;

const BASE: u32 = 0x10_E000;

/// Whether `c` stands for a stray byte, and which.
#[inline]
pub(crate) fn escaped_byte(c: char) -> Option<u8> {
    let v = c as u32;
    if (BASE + 0x80..=BASE + 0xFF).contains(&v) {
        Some((v - BASE) as u8)
    } else {
        None
    }
}

/// A Go string (any bytes) as a Rust string: valid UTF-8 runs are kept,
/// every other byte is escaped.
pub fn from_bytes(b: &[u8]) -> Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(b) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(b.len() + 8);
    for chunk in b.utf8_chunks() {
        out.push_str(chunk.valid());
        for &byte in chunk.invalid() {
            out.push(char::from_u32(BASE + byte as u32).unwrap_or('\u{FFFD}'));
        }
    }
    Cow::Owned(out)
}

/// The bytes of the Go string that `s` carries.
pub fn to_bytes(s: &str) -> Cow<'_, [u8]> {
    // Every escape encodes as F4 8E 82|83 xx; without an F4 there is none.
    if !s.as_bytes().contains(&0xF4) {
        return Cow::Borrowed(s.as_bytes());
    }
    let mut out = Vec::with_capacity(s.len());
    let mut buf = [0u8; 4];
    for c in s.chars() {
        match escaped_byte(c) {
            Some(b) => out.push(b),
            None => out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes()),
        }
    }
    Cow::Owned(out)
}

/// The length in bytes of the Go string `s` carries (Go's `len`).
pub(crate) fn byte_len(s: &str) -> usize {
    if !s.as_bytes().contains(&0xF4) {
        return s.len();
    }
    s.chars()
        .map(|c| {
            if escaped_byte(c).is_some() {
                1
            } else {
                c.len_utf8()
            }
        })
        .sum()
}

fn has_escapes(s: &str) -> bool {
    s.as_bytes().contains(&0xF4) && s.chars().any(|c| escaped_byte(c).is_some())
}

/// The one spelling of the Go string `s` carries: stray bytes that joined
/// up into UTF-8 by concatenation (two halves of `é`) become text again.
pub fn canonical(s: &str) -> Cow<'_, str> {
    if !has_escapes(s) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(from_bytes(&to_bytes(s)).into_owned())
}

/// Whether two strings carry the same Go string.
pub fn eq(a: &str, b: &str) -> bool {
    a == b || ((has_escapes(a) || has_escapes(b)) && to_bytes(a) == to_bytes(b))
}

/// `s` as text for output: stray bytes become U+FFFD, as Go's JSON encoder
/// and YAML parser see them.
pub fn to_text(s: &str) -> Cow<'_, str> {
    if !has_escapes(s) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(String::from_utf8_lossy(&to_bytes(s)).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_utf8_is_unchanged() {
        assert!(matches!(from_bytes("héllo".as_bytes()), Cow::Borrowed(_)));
        assert!(matches!(to_bytes("héllo 🦀"), Cow::Borrowed(_)));
        assert_eq!(byte_len("é"), 2);
    }

    #[test]
    fn stray_bytes_round_trip() {
        let raw = [0x00, 0xff, b'a', 0xc3, 0xc3, 0xa9, 0xf4];
        let s = from_bytes(&raw);
        assert_eq!(to_bytes(&s).as_ref(), &raw);
        assert_eq!(byte_len(&s), raw.len());
        assert_eq!(to_text(&s), "\u{0}\u{FFFD}a\u{FFFD}é\u{FFFD}");
    }

    #[test]
    fn half_a_character() {
        let s = from_bytes(&"é".as_bytes()[..1]);
        assert_eq!(to_bytes(&s).as_ref(), &[0xc3]);
        let t = from_bytes(&"é".as_bytes()[1..]);
        let joined = format!("{s}{t}");
        assert_eq!(canonical(&joined), "é");
        assert!(eq(&joined, "é"));
        assert_eq!(to_text(&joined), "é");
    }

    #[test]
    fn plane_16_text_outside_the_escape_range_is_kept() {
        let s = "\u{10E07F}\u{10E100}\u{10FFFF}";
        assert_eq!(to_bytes(s).as_ref(), s.as_bytes());
    }
}
