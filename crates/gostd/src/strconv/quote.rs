//! Go's `strconv` quoting: `Quote`, `QuoteToASCII`, `QuoteRune`,
//! `QuoteRuneToASCII` and `CanBackquote`. Go strings are bytes, so these take
//! bytes: a byte that is not part of valid UTF-8 is written as `\xff`.

use crate::unicode::is_print;
use crate::utf8::decode_rune;

/// Go's `strconv.Quote`: a double-quoted Go string literal; printable runes
/// are kept, others escaped (`\n`, `\x00`, `\u00ad`, `\U0001f000`).
pub fn quote(s: impl AsRef<[u8]>) -> String {
    let s = s.as_ref();
    let mut out = String::with_capacity(s.len() + 2);
    append_quote(&mut out, s);
    out
}

/// Go's `strconv.QuoteToASCII`: like [`quote`], but every non-ASCII rune is
/// escaped too.
pub fn quote_to_ascii(s: impl AsRef<[u8]>) -> String {
    let s = s.as_ref();
    let mut out = String::with_capacity(s.len() + 2);
    append_quote_to_ascii(&mut out, s);
    out
}

/// [`quote`] onto the end of `out` (Go's `strconv.AppendQuote`).
pub fn append_quote(out: &mut String, s: &[u8]) {
    append_quoted(out, s, '"', false);
}

/// [`quote_to_ascii`] onto the end of `out`.
pub fn append_quote_to_ascii(out: &mut String, s: &[u8]) {
    append_quoted(out, s, '"', true);
}

/// Go's `strconv.QuoteRune`: a single-quoted Go character literal.
pub fn quote_rune(c: char) -> String {
    let mut out = String::new();
    out.push('\'');
    append_escaped_rune(&mut out, c, '\'', false);
    out.push('\'');
    out
}

/// Go's `strconv.QuoteRuneToASCII`.
pub fn quote_rune_to_ascii(c: char) -> String {
    let mut out = String::new();
    out.push('\'');
    append_escaped_rune(&mut out, c, '\'', true);
    out.push('\'');
    out
}

/// Go's `strconv.CanBackquote`: whether `s` can be written as a raw string
/// literal (no control characters but tab, no backquote, valid UTF-8, no
/// byte order mark).
pub fn can_backquote(s: impl AsRef<[u8]>) -> bool {
    let b = s.as_ref();
    let mut i = 0;
    while i < b.len() {
        let (r, w) = decode_rune(&b[i..]);
        i += w.max(1);
        match r {
            None => return false,
            Some(c) if w > 1 => {
                // Byte order marks are invisible; everything else multibyte
                // is taken as printable.
                if c == '\u{FEFF}' {
                    return false;
                }
            }
            Some(c) => {
                if (c < ' ' && c != '\t') || c == '`' || c == '\u{7F}' {
                    return false;
                }
            }
        }
    }
    true
}

fn append_quoted(out: &mut String, s: &[u8], quote: char, ascii_only: bool) {
    out.push(quote);
    let mut i = 0;
    while i < s.len() {
        let (r, w) = decode_rune(&s[i..]);
        match r {
            Some(c) => append_escaped_rune(out, c, quote, ascii_only),
            None => {
                out.push_str("\\x");
                push_hex2(out, s[i]);
            }
        }
        i += w.max(1);
    }
    out.push(quote);
}

fn push_hex2(out: &mut String, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(HEX[(b >> 4) as usize] as char);
    out.push(HEX[(b & 0xF) as usize] as char);
}

fn append_escaped_rune(out: &mut String, r: char, quote: char, ascii_only: bool) {
    if r == quote || r == '\\' {
        out.push('\\');
        out.push(r);
        return;
    }
    if ascii_only {
        if r.is_ascii() && is_print(r) {
            out.push(r);
            return;
        }
    } else if is_print(r) {
        out.push(r);
        return;
    }
    match r {
        '\u{07}' => out.push_str("\\a"),
        '\u{08}' => out.push_str("\\b"),
        '\u{0C}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{0B}' => out.push_str("\\v"),
        _ => {
            let v = r as u32;
            if r < ' ' || r == '\u{7F}' {
                out.push_str("\\x");
                push_hex2(out, v as u8);
            } else if v < 0x10000 {
                out.push_str(&format!("\\u{v:04x}"));
            } else {
                out.push_str(&format!("\\U{v:08x}"));
            }
        }
    }
}
