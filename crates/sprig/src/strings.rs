//! Sprig's string functions (trim, case, substr, trunc, abbrev, quote,
//! indent, replace, wrap, case conversions, split/join…), with the byte-wise
//! quirks of the Go originals (goutils, xstrings) kept where they show.

#[path = "strings_case.rs"]
mod case;

use gostd::unicode;
use gotmpl::{Func, FuncError, FuncMap, MapKind, MapRef, Ty, Value};

use super::conv::{fmt_v, i, reg, s, strslice, strval, INT};

/// Bytes back to a Go string; slicing inside a UTF-8 sequence can split a
/// rune, which Go keeps as raw bytes (see [`gotmpl::gostr`]).
pub(crate) fn bytes_to_string(b: &[u8]) -> String {
    gotmpl::gostr::from_bytes(b).into_owned()
}

fn str_fn(m: &mut FuncMap, names: &[&str], f: fn(&str) -> String) {
    reg(
        m,
        names,
        Func::new(&[Ty::String], move |_, a| Ok(Value::string(f(s(&a[0]))))),
    );
}

/// A function of two strings with Sprig's argument order `f(arg, subject)`.
fn str2_fn(m: &mut FuncMap, names: &[&str], f: fn(&str, &str) -> Value) {
    reg(
        m,
        names,
        Func::new(&[Ty::String, Ty::String], move |_, a| {
            Ok(f(s(&a[0]), s(&a[1])))
        }),
    );
}

fn map_runes(st: &str, f: fn(char) -> char) -> String {
    st.chars().map(f).collect()
}

/// Go's `strings.Title`.
fn title(st: &str) -> String {
    let is_sep = |r: char| -> bool {
        if r.is_ascii() {
            return !(r.is_ascii_alphanumeric() || r == '_');
        }
        if unicode::is_letter(r) || unicode::is_digit(r) {
            return false;
        }
        unicode::is_space(r)
    };
    let mut prev = ' ';
    st.chars()
        .map(|c| {
            let out = if is_sep(prev) {
                unicode::to_title(c)
            } else {
                c
            };
            prev = c;
            out
        })
        .collect()
}

/// goutils `Uncapitalize`: lowercases the first rune of each space-separated word.
fn untitle(st: &str) -> String {
    let mut next = true;
    st.chars()
        .map(|c| {
            if unicode::is_space(c) {
                next = true;
                c
            } else if next {
                next = false;
                unicode::to_lower(c)
            } else {
                c
            }
        })
        .collect()
}

/// goutils `SwapCase`.
fn swapcase(st: &str) -> String {
    let mut ws = true;
    st.chars()
        .map(|c| {
            if unicode::is_upper(c) || unicode::is_title(c) {
                ws = false;
                unicode::to_lower(c)
            } else if unicode::is_lower(c) {
                if ws {
                    ws = false;
                    unicode::to_title(c)
                } else {
                    unicode::to_upper(c)
                }
            } else {
                ws = unicode::is_space(c);
                c
            }
        })
        .collect()
}

/// goutils `Initials`: reads bytes as runes (so only ASCII initials survive intact).
fn initials(st: &str) -> String {
    let mut out = String::new();
    let mut gap = true;
    for b in st.bytes() {
        let c = char::from(b);
        if unicode::is_space(c) {
            gap = true;
        } else if gap {
            out.push(c);
            gap = false;
        }
    }
    out
}

/// goutils `DeleteWhiteSpace`: also byte-wise once any space is found.
fn nospace(st: &str) -> String {
    let out: String = st
        .bytes()
        .map(char::from)
        .filter(|c| !unicode::is_space(*c))
        .collect();
    if out.chars().count() == st.len() {
        st.to_string()
    } else {
        out
    }
}

/// goutils `WrapCustom` (byte offsets, ' ' as the only word break).
fn wrap_custom(st: &str, len: i64, nl: &str, wrap_long: bool) -> String {
    if st.is_empty() {
        return String::new();
    }
    let nl = if nl.is_empty() { "\n" } else { nl };
    let wl = if len < 1 { 1usize } else { len as usize };
    let b = st.as_bytes();
    let n = b.len();
    let mut off = 0usize;
    let mut out: Vec<u8> = Vec::new();
    while n - off > wl {
        if b[off] == b' ' {
            off += 1;
            continue;
        }
        let end = (wl + off + 1).min(n);
        let space = b[off..end].iter().rposition(|c| *c == b' ');
        if let Some(sp) = space {
            let at = sp + off;
            out.extend_from_slice(&b[off..at]);
            out.extend_from_slice(nl.as_bytes());
            off = at + 1;
        } else if wrap_long {
            let end = wl + off;
            out.extend_from_slice(&b[off..end]);
            out.extend_from_slice(nl.as_bytes());
            off += wl;
        } else {
            let end = wl + off;
            match b[end..].iter().position(|c| *c == b' ') {
                Some(ix) => {
                    let at = ix + end;
                    out.extend_from_slice(&b[off..at]);
                    out.extend_from_slice(nl.as_bytes());
                    off = at + 1;
                }
                None => {
                    out.extend_from_slice(&b[off..]);
                    off = n;
                }
            }
        }
    }
    out.extend_from_slice(&b[off..]);
    bytes_to_string(&out)
}

/// goutils `AbbreviateFull` (byte offsets).
fn abbreviate_full(st: &str, offset: i64, max: i64) -> String {
    let b = st.as_bytes();
    let n = b.len() as i64;
    if st.is_empty() || max < 4 {
        return String::new();
    }
    if n <= max {
        return st.to_string();
    }
    let mut offset = offset.min(n);
    if n - offset < max - 3 {
        offset = n - (max - 3);
    }
    if offset <= 4 {
        let mut out = b[..(max - 3) as usize].to_vec();
        out.extend_from_slice(b"...");
        return bytes_to_string(&out);
    }
    if max < 7 {
        return String::new();
    }
    if offset + max - 3 < n {
        let rest = bytes_to_string(&b[offset as usize..]);
        return format!("...{}", abbreviate_full(&rest, 0, max - 3));
    }
    let mut out = b"...".to_vec();
    out.extend_from_slice(&b[(n - (max - 3)) as usize..]);
    bytes_to_string(&out)
}

/// Go's `strings.SplitN` (`n < 0` means all parts).
pub(crate) fn go_split(st: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let chars: Vec<char> = st.chars().collect();
        let limit = if n < 0 || n as usize > chars.len() {
            chars.len()
        } else {
            n as usize
        };
        let mut out: Vec<String> = chars[..limit.saturating_sub(1)]
            .iter()
            .map(|c| c.to_string())
            .collect();
        if limit > 0 {
            out.push(chars[limit - 1..].iter().collect());
        }
        return out;
    }
    if n < 0 {
        st.split(sep).map(str::to_string).collect()
    } else {
        st.splitn(n as usize, sep).map(str::to_string).collect()
    }
}

fn split_map(parts: Vec<String>) -> Value {
    let m = parts
        .into_iter()
        .enumerate()
        .map(|(ix, p)| (format!("_{ix}"), Value::string(p)))
        .collect();
    Value::Map(MapRef::with_kind(m, MapKind::String))
}

/// Out-of-range string slicing panics in Go.
fn slice_err(lo: i64, hi: i64, len: usize) -> FuncError {
    FuncError::new(format!(
        "runtime error: slice bounds out of range [{lo}:{hi}] with length {len}"
    ))
}

fn substr(start: i64, end: i64, st: &str) -> Result<String, FuncError> {
    let bytes = gotmpl::gostr::to_bytes(st);
    let b: &[u8] = &bytes;
    let n = b.len() as i64;
    if start < 0 {
        if end < 0 || end > n {
            return Err(FuncError::new(format!(
                "runtime error: slice bounds out of range [:{end}] with length {n}"
            )));
        }
        return Ok(bytes_to_string(&b[..end as usize]));
    }
    if end < 0 || end > n {
        if start > n {
            return Err(slice_err(start, n, b.len()));
        }
        return Ok(bytes_to_string(&b[start as usize..]));
    }
    if start > end {
        return Err(FuncError::new(format!(
            "runtime error: slice bounds out of range [{start}:{end}]"
        )));
    }
    Ok(bytes_to_string(&b[start as usize..end as usize]))
}

fn trunc(c: i64, st: &str) -> String {
    let bytes = gotmpl::gostr::to_bytes(st);
    let b: &[u8] = &bytes;
    let n = b.len() as i64;
    if c < 0 && n + c > 0 {
        return bytes_to_string(&b[(n + c) as usize..]);
    }
    if c >= 0 && n > c {
        return bytes_to_string(&b[..c as usize]);
    }
    st.to_string()
}

fn indent(spaces: i64, st: &str) -> Result<String, FuncError> {
    if spaces < 0 {
        return Err(FuncError::new("strings: negative Repeat count"));
    }
    let lines = st.matches('\n').count() as u128 + 1;
    if spaces as u128 * lines > MAX_REPEAT_BYTES as u128 {
        return Err(FuncError::new("strings: Repeat output length overflow"));
    }
    let pad = " ".repeat(spaces as usize);
    Ok(format!("{pad}{}", st.replace('\n', &format!("\n{pad}"))))
}

/// The biggest string `repeat` (and `indent`'s padding) builds; Go would
/// try and run out of memory. It is the default output budget of a render,
/// which no longer string could ever be written into.
const MAX_REPEAT_BYTES: usize = 256 << 20;

pub(crate) fn register(m: &mut FuncMap) {
    m.insert("hello", Func::new(&[], |_, _| Ok(Value::str("Hello!"))));
    str_fn(m, &["trim"], |x| x.trim().to_string());
    str_fn(m, &["upper"], |x| map_runes(x, unicode::to_upper));
    str_fn(m, &["lower"], |x| map_runes(x, unicode::to_lower));
    str_fn(m, &["title"], title);
    str_fn(m, &["untitle"], untitle);
    str_fn(m, &["nospace"], nospace);
    str_fn(m, &["initials"], initials);
    str_fn(m, &["swapcase"], swapcase);
    str_fn(m, &["snakecase"], |x| case::to_lower_case(x, '_'));
    str_fn(m, &["kebabcase"], |x| case::to_lower_case(x, '-'));
    str_fn(m, &["camelcase"], case::camelcase);

    str2_fn(m, &["trimAll", "trimall"], |cut, x| {
        Value::str(x.trim_matches(|c| cut.contains(c)))
    });
    str2_fn(m, &["trimSuffix"], |suf, x| {
        Value::str(x.strip_suffix(suf).unwrap_or(x))
    });
    str2_fn(m, &["trimPrefix"], |pre, x| {
        Value::str(x.strip_prefix(pre).unwrap_or(x))
    });
    str2_fn(m, &["contains"], |sub, x| Value::Bool(x.contains(sub)));
    str2_fn(m, &["hasPrefix"], |pre, x| Value::Bool(x.starts_with(pre)));
    str2_fn(m, &["hasSuffix"], |suf, x| Value::Bool(x.ends_with(suf)));
    str2_fn(m, &["splitList"], |sep, x| {
        Value::string_list(go_split(x, sep, -1))
    });
    str2_fn(m, &["split"], |sep, x| split_map(go_split(x, sep, -1)));

    m.insert(
        "splitn",
        Func::new(&[Ty::String, INT, Ty::String], |_, a| {
            Ok(split_map(go_split(s(&a[2]), s(&a[0]), i(&a[1]))))
        }),
    );
    m.insert(
        "abbrev",
        Func::new(&[INT, Ty::String], |_, a| {
            let (w, st) = (i(&a[0]), s(&a[1]));
            if w < 4 {
                return Ok(Value::str(st));
            }
            Ok(Value::string(abbreviate_full(st, 0, w)))
        }),
    );
    m.insert(
        "abbrevboth",
        Func::new(&[INT, INT, Ty::String], |_, a| {
            let (l, r, st) = (i(&a[0]), i(&a[1]), s(&a[2]));
            if r < 4 || l > 0 && r < 7 {
                return Ok(Value::str(st));
            }
            Ok(Value::string(abbreviate_full(st, l, r)))
        }),
    );
    m.insert(
        "trunc",
        Func::new(&[INT, Ty::String], |_, a| {
            Ok(Value::string(trunc(i(&a[0]), s(&a[1]))))
        }),
    );
    m.insert(
        "substr",
        Func::new(&[INT, INT, Ty::String], |_, a| {
            substr(i(&a[0]), i(&a[1]), s(&a[2])).map(Value::string)
        }),
    );
    m.insert(
        "repeat",
        Func::new(&[INT, Ty::String], |_, a| {
            let (n, st) = (i(&a[0]), s(&a[1]));
            if n < 0 {
                return Err(FuncError::new("strings: negative Repeat count"));
            }
            if (n as u128) * (st.len() as u128) > MAX_REPEAT_BYTES as u128 {
                return Err(FuncError::new("strings: Repeat output length overflow"));
            }
            Ok(Value::string(st.repeat(n as usize)))
        }),
    );
    m.insert(
        "wrap",
        Func::new(&[INT, Ty::String], |_, a| {
            Ok(Value::string(wrap_custom(s(&a[1]), i(&a[0]), "", false)))
        }),
    );
    m.insert(
        "wrapWith",
        Func::new(&[INT, Ty::String, Ty::String], |_, a| {
            Ok(Value::string(wrap_custom(
                s(&a[2]),
                i(&a[0]),
                s(&a[1]),
                true,
            )))
        }),
    );
    m.insert(
        "quote",
        Func::variadic(&[], Ty::Any, |_, a| {
            let parts: Vec<String> = a
                .iter()
                .filter(|v| !v.is_nil())
                .map(|v| gotmpl::fmt::quote(&strval(v)))
                .collect();
            Ok(Value::string(parts.join(" ")))
        }),
    );
    m.insert(
        "squote",
        Func::variadic(&[], Ty::Any, |_, a| {
            let parts: Vec<String> = a
                .iter()
                .filter(|v| !v.is_nil())
                .map(|v| format!("'{}'", fmt_v(v)))
                .collect();
            Ok(Value::string(parts.join(" ")))
        }),
    );
    m.insert(
        "cat",
        Func::variadic(&[], Ty::Any, |_, a| {
            let parts: Vec<String> = a.iter().filter(|v| !v.is_nil()).map(fmt_v).collect();
            Ok(Value::string(parts.join(" ")))
        }),
    );
    m.insert(
        "indent",
        Func::new(&[INT, Ty::String], |_, a| {
            indent(i(&a[0]), s(&a[1])).map(Value::string)
        }),
    );
    m.insert(
        "nindent",
        Func::new(&[INT, Ty::String], |_, a| {
            indent(i(&a[0]), s(&a[1])).map(|x| Value::string(format!("\n{x}")))
        }),
    );
    m.insert(
        "replace",
        Func::new(&[Ty::String, Ty::String, Ty::String], |_, a| {
            Ok(Value::string(s(&a[2]).replace(s(&a[0]), s(&a[1]))))
        }),
    );
    m.insert(
        "plural",
        Func::new(&[Ty::String, Ty::String, INT], |_, a| {
            Ok(if i(&a[2]) == 1 {
                a[0].clone()
            } else {
                a[1].clone()
            })
        }),
    );
    m.insert(
        "join",
        Func::new(&[Ty::String, Ty::Any], |_, a| {
            Ok(Value::string(strslice(&a[1]).join(s(&a[0]))))
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: Vec<Value>) -> Result<Value, FuncError> {
        crate::call_registered(register, name, args)
    }

    fn out(name: &str, args: Vec<Value>) -> String {
        fmt_v(&call(name, args).expect("ok"))
    }

    fn n(x: i64) -> Value {
        Value::int(x)
    }

    #[test]
    fn trims_and_case() {
        assert_eq!(out("trim", vec!["\t\na\n".into()]), "a");
        assert_eq!(out("trimall", vec!["$".into(), "$5$".into()]), "5");
        assert_eq!(out("trimAll", vec!["ab".into(), "abcba".into()]), "c");
        assert_eq!(out("trimPrefix", vec!["ab".into(), "abab".into()]), "ab");
        assert_eq!(out("trimSuffix", vec!["-x".into(), "a-x-x".into()]), "a-x");
        assert_eq!(out("upper", vec!["héllo".into()]), "HÉLLO");
        assert_eq!(out("upper", vec!["ß".into()]), "ß");
        assert_eq!(
            out("title", vec!["hello wORLD foo-bar".into()]),
            "Hello WORLD Foo-Bar"
        );
        assert_eq!(out("title", vec!["ǆungla".into()]), "ǅungla");
        assert_eq!(out("title", vec!["o'neil".into()]), "O'Neil");
        assert_eq!(out("untitle", vec!["Hello World".into()]), "hello world");
        assert_eq!(out("swapcase", vec!["This Is ß".into()]), "tHIS iS ß");
        assert_eq!(out("initials", vec!["héllo wörld".into()]), "hw");
        assert_eq!(out("nospace", vec![" a b\tc\n d ".into()]), "abcd");
        assert_eq!(out("nospace", vec!["é é".into()]), "Ã©Ã©");
        assert_eq!(out("nospace", vec!["éé".into()]), "éé");
    }

    #[test]
    fn slicing() {
        assert_eq!(out("substr", vec![n(1), n(3), "hello".into()]), "el");
        assert_eq!(out("substr", vec![n(-1), n(3), "hello".into()]), "hel");
        assert_eq!(out("substr", vec![n(2), n(-1), "hello".into()]), "llo");
        assert_eq!(out("substr", vec![n(2), n(99), "hello".into()]), "llo");
        // Cutting a character in half keeps the raw byte, as Go does.
        let half = out("substr", vec![n(0), n(1), "é".into()]);
        assert_eq!(gotmpl::gostr::to_bytes(&half).as_ref(), &[0xc3]);
        let half = out("trunc", vec![n(1), "é".into()]);
        assert_eq!(gotmpl::gostr::to_bytes(&half).as_ref(), &[0xc3]);
        assert!(call("substr", vec![n(3), n(2), "hello".into()]).is_err());
        assert_eq!(out("trunc", vec![n(5), "hello world".into()]), "hello");
        assert_eq!(out("trunc", vec![n(-5), "hello world".into()]), "world");
        assert_eq!(out("trunc", vec![n(-50), "abc".into()]), "abc");
        assert_eq!(out("abbrev", vec![n(5), "hello world".into()]), "he...");
        assert_eq!(out("abbrev", vec![n(4), "hello".into()]), "h...");
        assert_eq!(
            out("abbrevboth", vec![n(5), n(10), "1234 5678 9123".into()]),
            "...5678..."
        );
        assert_eq!(
            call("repeat", vec![n(-1), "x".into()]).unwrap_err().0,
            "strings: negative Repeat count"
        );
    }

    #[test]
    fn wrapping_quoting_indenting() {
        assert_eq!(
            out("wrap", vec![n(5), "hello world foo bar".into()]),
            "hello\nworld\nfoo\nbar"
        );
        assert_eq!(out("wrap", vec![n(0), "a b".into()]), "a\nb");
        assert_eq!(
            out(
                "wrapWith",
                vec![n(5), "\t".into(), "hello world foo".into()]
            ),
            "hello\tworld\tfoo"
        );
        assert_eq!(
            out("quote", vec!["a".into(), Value::Nil, n(1)]),
            "\"a\" \"1\""
        );
        assert_eq!(out("quote", vec![Value::Float(1.5)]), "\"1.5\"");
        assert_eq!(out("squote", vec!["it's".into()]), "'it's'");
        assert_eq!(out("squote", vec![Value::Nil]), "");
        assert_eq!(
            out(
                "cat",
                vec!["a".into(), "".into(), Value::list(vec![n(1), n(2)])]
            ),
            "a  [1 2]"
        );
        assert_eq!(
            out("indent", vec![n(2), "a\n\nb\n".into()]),
            "  a\n  \n  b\n  "
        );
        assert_eq!(out("nindent", vec![n(0), "a".into()]), "\na");
        assert_eq!(
            out("replace", vec!["".into(), "-".into(), "abc".into()]),
            "-a-b-c-"
        );
        assert_eq!(
            out("plural", vec!["one".into(), "many".into(), n(1)]),
            "one"
        );
        assert_eq!(
            out("plural", vec!["one".into(), "many".into(), n(-1)]),
            "many"
        );
    }

    #[test]
    fn case_conversions() {
        assert_eq!(out("snakecase", vec!["HTTPServer".into()]), "http_server");
        assert_eq!(
            out("snakecase", vec!["already_snake".into()]),
            "already_snake"
        );
        assert_eq!(out("snakecase", vec!["with space".into()]), "with_space");
        assert_eq!(out("snakecase", vec!["http2xx".into()]), "http_2xx");
        assert_eq!(
            out("snakecase", vec!["Bld4Floor3rd".into()]),
            "bld4_floor_3rd"
        );
        assert_eq!(out("kebabcase", vec!["FirstName".into()]), "first-name");
        assert_eq!(out("kebabcase", vec!["HTTPServer".into()]), "http-server");
        assert_eq!(out("camelcase", vec!["http_server".into()]), "HttpServer");
        assert_eq!(out("camelcase", vec!["hello world".into()]), "HelloWorld");
        assert_eq!(out("camelcase", vec!["_x_y_".into()]), "_XY_");
        assert_eq!(
            out("camelcase", vec!["_complex__case_".into()]),
            "_Complex_Case_"
        );
    }

    #[test]
    fn splitting_and_joining() {
        assert_eq!(
            out("splitList", vec![",".into(), "a,b,c".into()]),
            "[a b c]"
        );
        assert_eq!(out("splitList", vec![",".into(), "".into()]), "[]");
        let l = call("splitList", vec![",".into(), "".into()]).unwrap();
        assert_eq!(l.as_list().map(|l| l.len()), Some(1));
        assert_eq!(
            out("split", vec![",".into(), "a,b,c".into()]),
            "map[_0:a _1:b _2:c]"
        );
        assert_eq!(out("split", vec!["".into(), "ab".into()]), "map[_0:a _1:b]");
        assert_eq!(
            call("split", vec![",".into(), "a".into()])
                .unwrap()
                .type_name(),
            "map[string]string"
        );
        assert_eq!(
            out("splitn", vec!["$".into(), n(2), "a$b$c".into()]),
            "map[_0:a _1:b$c]"
        );
        assert_eq!(
            out(
                "join",
                vec!["-".into(), Value::list(vec![n(1), Value::Nil, n(3)])]
            ),
            "1-3"
        );
        assert_eq!(out("join", vec![",".into(), "abc".into()]), "abc");
    }
}
