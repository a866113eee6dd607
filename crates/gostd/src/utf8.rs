//! Go's `unicode/utf8` decoding: a Go string is bytes, and an invalid byte
//! decodes as a one-byte `RuneError`.

/// Decodes one rune the way Go's `utf8.DecodeRune` does: `None` with width 1
/// for an invalid byte.
pub fn decode_rune(b: &[u8]) -> (Option<char>, usize) {
    let Some(&first) = b.first() else {
        return (None, 0);
    };
    let len = match first {
        0x00..=0x7F => return (Some(first as char), 1),
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => return (None, 1),
    };
    if b.len() < len {
        return (None, 1);
    }
    match std::str::from_utf8(&b[..len]) {
        Ok(s) => (s.chars().next(), len),
        Err(_) => (None, 1),
    }
}
