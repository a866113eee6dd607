//! Go `text/template`'s escaping builtins: `html`, `js` and `urlquery`
//! (`template.HTMLEscapeString`, `template.JSEscapeString`,
//! `url.QueryEscape`) and the argument flattening they share.

use crate::gofmt::{is_print, sprint};
use crate::value::Value;

/// Go's `template.HTMLEscapeString`.
pub fn html_escape(s: &str) -> String {
    if !s.contains(['"', '\'', '&', '<', '>', '\0']) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            // Numeric forms: shorter than &quot; and valid before HTML5.
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\0' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Go's `template.JSEscapeString` (as of Go 1.26: backslash and quotes
/// backslashed; `<`, `>`, `&`, `=`, control characters and non-printable
/// runes as `\uXXXX`; the backtick is left alone, unlike `html/template`).
pub fn js_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            c if c < ' ' => out.push_str(&format!("\\u{:04X}", c as u32)),
            c if c.is_ascii() || is_print(c) => out.push(c),
            c => out.push_str(&format!("\\u{:04X}", c as u32)),
        }
    }
    out
}

/// Go's `url.QueryEscape`: space as `+`, everything but `A-Za-z0-9-_.~` as
/// `%XX` of its UTF-8 bytes.
pub fn query_escape(s: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(s.len() + 8);
    for &b in s.as_bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => {
                out.push('%');
                out.push(HEX[(b >> 4) as usize] as char);
                out.push(HEX[(b & 0xF) as usize] as char);
            }
        }
    }
    out
}

/// Go's `evalArgs` for the escaping builtins: a lone string argument is used
/// as is; otherwise the arguments are joined with `fmt.Sprint`, a missing
/// or nil argument showing as `<no value>`.
pub fn eval_args(args: &[Value]) -> String {
    if let [Value::String(s)] = args {
        return s.to_string();
    }
    let printable: Vec<Value> = args
        .iter()
        .map(|a| {
            if a.is_nil() {
                Value::str("<no value>")
            } else {
                a.clone()
            }
        })
        .collect();
    sprint(&printable)
}

#[cfg(test)]
mod tests {
    use super::*;
}
