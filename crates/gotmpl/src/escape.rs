//! Go `text/template`'s escaping builtins: `html`, `js` and `urlquery`
//! (`template.HTMLEscapeString`, `template.JSEscapeString`,
//! `url.QueryEscape`) and the argument flattening they share.

use crate::fmt::sprint;
use crate::value::Value;
use gostd::unicode::is_print;

/// Go's `template.HTMLEscapeString`.
pub(crate) fn html_escape(s: &str) -> String {
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
pub(crate) fn js_escape(s: &str) -> String {
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
pub(crate) fn query_escape(s: &str) -> String {
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
pub(crate) fn eval_args(args: &[Value]) -> String {
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
    use crate::value::Map;

    // Expected strings are the real Helm v4.2.3 outputs for the same input.

    #[test]
    fn html() {
        assert_eq!(html_escape("plain é"), "plain é");
        assert_eq!(
            html_escape("<a href=\"x\">'&'</a>\0é"),
            "&lt;a href=&#34;x&#34;&gt;&#39;&amp;&#39;&lt;/a&gt;\u{fffd}é"
        );
        assert_eq!(html_escape("\"'&<>"), "&#34;&#39;&amp;&lt;&gt;");
    }

    #[test]
    fn js() {
        assert_eq!(
            js_escape("it's \"q\" <x> \\ =&\n\t"),
            "it\\'s \\\"q\\\" \\u003Cx\\u003E \\\\ \\u003D\\u0026\\u000A\\u0009"
        );
        assert_eq!(
            js_escape("`x` \u{7f} \u{1} \u{2028} \u{ad} é 😀 \u{e0001} \u{feff} / ?"),
            "`x` \u{7f} \\u0001 \\u2028 \\u00AD é 😀 \\uE0001 \\uFEFF / ?"
        );
        assert_eq!(js_escape("\t\n\r\"\\"), "\\u0009\\u000A\\u000D\\\"\\\\");
    }

    #[test]
    fn urlquery() {
        assert_eq!(query_escape("a b&c=d/é?"), "a+b%26c%3Dd%2F%C3%A9%3F");
        assert_eq!(
            query_escape("~-_.!*'();:@+$,%#[]"),
            "~-_.%21%2A%27%28%29%3B%3A%40%2B%24%2C%25%23%5B%5D"
        );
        assert_eq!(query_escape(""), "");
    }

    #[test]
    fn eval_args_like_go() {
        let m: Map = [("a".to_string(), Value::str("<b>"))].into_iter().collect();
        assert_eq!(eval_args(&[Value::str("<x>")]), "<x>");
        assert_eq!(eval_args(&[]), "");
        assert_eq!(eval_args(&[Value::str("a"), Value::int(1)]), "a1");
        assert_eq!(eval_args(&[Value::int(1), Value::int(2)]), "1 2");
        assert_eq!(eval_args(&[Value::Nil]), "<no value>");
        assert_eq!(eval_args(&[Value::Invalid]), "<no value>");
        assert_eq!(
            eval_args(&[Value::int(1), Value::Nil, Value::str("<")]),
            "1<no value><"
        );
        assert_eq!(
            eval_args(&[Value::int(1), Value::str("a"), Value::Nil, Value::int(2)]),
            "1a<no value>2"
        );
        assert_eq!(eval_args(&[Value::map(m)]), "map[a:<b>]");
        assert_eq!(
            eval_args(&[Value::list(vec![Value::int(1), Value::str("a b")])]),
            "[1 a b]"
        );
        // What the builtins produce end to end.
        assert_eq!(html_escape(&eval_args(&[Value::Nil])), "&lt;no value&gt;");
        assert_eq!(
            js_escape(&eval_args(&[Value::Nil])),
            "\\u003Cno value\\u003E"
        );
        assert_eq!(
            query_escape(&eval_args(&[Value::Nil, Value::int(1)])),
            "%3Cno+value%3E1"
        );
    }
}
