//! Sprig's regex functions over Go's RE2 syntax. Patterns are translated to
//! the Rust `regex` dialect where the two differ (Go's Perl classes `\d \w \s
//! \b` are ASCII-only, `\Q…\E` quoting), replacement templates expand with
//! Go's `$name`/`${name}` rules, and `Split` follows Go's algorithm.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use gotmpl::{Func, FuncError, FuncMap, ListKind, Ty, Value};
// The meta regex engine itself, not `regex::Regex`: it can be told not to
// build a full DFA, which other crates of the binary switch on for every
// small pattern (tracing's filters, `fancy-regex`) and which was three
// quarters of compiling a Bitnami chart's patterns (1.8 of 2.4 million
// instructions), for strings of a few dozen bytes.
use regex_automata::meta::{BuildError, Regex};
use regex_automata::util::captures::Captures;
use regex_automata::PatternID;

use super::conv::{i, s, INT};

/// Compiled patterns are cached per thread; charts reuse a handful of them.
const CACHE_LIMIT: usize = 512;

thread_local! {
    // `Rc`: a cloned `Regex` gets a fresh, empty search cache, which each
    // call would then have to rebuild.
    static CACHE: RefCell<HashMap<String, Rc<Regex>>> = RefCell::new(HashMap::new());
}

/// A valid Go repetition `{n}`, `{n,}` or `{n,m}` at the start of `s`:
/// its length in chars and its bounds.
fn repeat_at(s: &[char]) -> Option<(usize, i64, Option<i64>)> {
    if s.first() != Some(&'{') {
        return None;
    }
    let close = s.iter().position(|c| *c == '}')?;
    let inner: String = s[1..close].iter().collect();
    let (lo, hi) = match inner.split_once(',') {
        Some((lo, hi)) => (lo, Some(hi)),
        None => (inner.as_str(), None),
    };
    let digits = |x: &str| !x.is_empty() && x.bytes().all(|c| c.is_ascii_digit());
    if !digits(lo) {
        return None;
    }
    let lo_n = lo.parse::<i64>().unwrap_or(i64::MAX);
    let hi_n = match hi {
        None => Some(lo_n),
        Some("") => None,
        Some(h) if digits(h) => Some(h.parse::<i64>().unwrap_or(i64::MAX)),
        Some(_) => return None,
    };
    Some((close + 1, lo_n, hi_n))
}

/// Rewrites a Go RE2 pattern into the Rust `regex` dialect, or gives Go's
/// error for the syntax Go rejects but Rust accepts.
fn translate(pat: &str) -> Result<String, String> {
    let chars: Vec<char> = pat.chars().collect();
    let mut out = String::with_capacity(pat.len() + 8);
    let mut k = 0;
    let mut in_class = false;
    // Where the previous repetition operator started, to reject `a**` as Go does.
    let mut last_repeat: Option<usize> = None;
    while k < chars.len() {
        let c = chars[k];
        if !in_class {
            let op_len = match c {
                '*' | '+' | '?' => Some(1),
                '{' => match repeat_at(&chars[k..]) {
                    Some((len, lo, hi)) => {
                        if lo > 1000 || hi.is_some_and(|h| h > 1000 || h < lo) {
                            let text: String = chars[k..k + len].iter().collect();
                            return Err(format!("invalid repeat count: `{text}`"));
                        }
                        Some(len)
                    }
                    None => None,
                },
                _ => None,
            };
            if let Some(mut len) = op_len {
                if let Some(start) = last_repeat {
                    let text: String = chars[start..k + len].iter().collect();
                    return Err(format!("invalid nested repetition operator: `{text}`"));
                }
                if chars.get(k + len) == Some(&'?') {
                    len += 1;
                }
                out.extend(&chars[k..k + len]);
                last_repeat = Some(k);
                k += len;
                continue;
            }
            last_repeat = None;
            if c == '{' || c == '}' {
                // Not a repetition, so a literal brace in Go.
                out.push('\\');
                out.push(c);
                k += 1;
                continue;
            }
        }
        if c == '\\' && k + 1 < chars.len() {
            let e = chars[k + 1];
            k += 2;
            if matches!(e, 'p' | 'P' | 'x') && chars.get(k) == Some(&'{') {
                // `\p{Greek}`, `\x{263a}`: the braces belong to the escape.
                let end = chars[k..]
                    .iter()
                    .position(|c| *c == '}')
                    .map_or(chars.len(), |p| k + p + 1);
                out.push('\\');
                out.push(e);
                out.extend(&chars[k..end]);
                k = end;
                last_repeat = None;
                continue;
            }
            if e.is_ascii_digit() {
                // Go's octal escapes: \0 or \1-\7 followed by another octal digit.
                if e == '8'
                    || e == '9'
                    || (e != '0' && !chars.get(k).is_some_and(|d| ('0'..='7').contains(d)))
                {
                    return Err(format!("invalid escape sequence: `\\{e}`"));
                }
                let mut v = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.get(k).and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            k += 1;
                        }
                        None => break,
                    }
                }
                out.push_str(&format!("\\x{{{v:x}}}"));
                continue;
            }
            if e == 'Q' {
                // \Q...\E quotes literally up to \E or the end.
                let mut lit = String::new();
                while k < chars.len() {
                    if chars[k] == '\\' && k + 1 < chars.len() && chars[k + 1] == 'E' {
                        k += 2;
                        break;
                    }
                    lit.push(chars[k]);
                    k += 1;
                }
                if in_class {
                    for ch in lit.chars() {
                        out.push_str(&regex::escape(&ch.to_string()));
                    }
                } else {
                    out.push_str(&regex::escape(&lit));
                }
                continue;
            }
            let class = match e {
                'd' => Some(("0-9", false)),
                'D' => Some(("0-9", true)),
                'w' => Some(("0-9A-Za-z_", false)),
                'W' => Some(("0-9A-Za-z_", true)),
                's' => Some(("\\t\\n\\x0C\\r ", false)),
                'S' => Some(("\\t\\n\\x0C\\r ", true)),
                _ => None,
            };
            match class {
                Some((set, neg)) => {
                    if in_class && !neg {
                        out.push_str(set);
                        // Go reads a '-' right after a class escape as a
                        // literal ("[\w-.]"); Rust would read a range.
                        if chars.get(k) == Some(&'-') && chars.get(k + 1) != Some(&']') {
                            out.push_str("\\-");
                            k += 1;
                        }
                    } else {
                        out.push('[');
                        if neg {
                            out.push('^');
                        }
                        out.push_str(set);
                        out.push(']');
                    }
                }
                None if !in_class && (e == 'b' || e == 'B') => {
                    out.push_str(if e == 'b' { "(?-u:\\b)" } else { "(?-u:\\B)" });
                }
                None => {
                    out.push('\\');
                    out.push(e);
                }
            }
            continue;
        }
        if in_class {
            if c == '[' && k + 1 < chars.len() && chars[k + 1] == ':' {
                // A POSIX class like [:alpha:] is copied whole.
                if let Some(end) = (k + 2..chars.len().saturating_sub(1))
                    .find(|&j| chars[j] == ':' && chars[j + 1] == ']')
                {
                    out.extend(&chars[k..end + 2]);
                    k = end + 2;
                    continue;
                }
            }
            if c == '[' {
                // A literal '[' inside a Go class; Rust would read a nested class.
                out.push_str("\\[");
                k += 1;
                continue;
            }
            if c == ']' {
                in_class = false;
            }
            if c == '&' || c == '~' || c == '-' && k + 1 < chars.len() && chars[k + 1] == '-' {
                // Rust reads `&&`, `~~`, `--` in a class as set operations.
                out.push('\\');
            }
            out.push(c);
            k += 1;
            continue;
        }
        if c == '[' {
            in_class = true;
            out.push('[');
            k += 1;
            // A leading '^' and a leading ']' belong to the class syntax.
            if k < chars.len() && chars[k] == '^' {
                out.push('^');
                k += 1;
            }
            if k < chars.len() && chars[k] == ']' {
                out.push_str("\\]");
                k += 1;
            }
            continue;
        }
        out.push(c);
        k += 1;
    }
    Ok(out)
}

/// Go's error text for a pattern that does not compile.
fn go_error(pat: &str, err: &BuildError) -> FuncError {
    let msg = match (err.syntax_error(), err.size_limit()) {
        (Some(syntax), _) => syntax.to_string(),
        (None, Some(limit)) => format!("Compiled regex exceeds size limit of {limit} bytes."),
        (None, None) => err.to_string(),
    };
    let detail = msg
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .unwrap_or(msg.as_str())
        .to_string();
    let go = if detail.contains("unclosed group") {
        format!("missing closing ): `{pat}`")
    } else if detail.contains("unclosed character class") {
        let from = pat.rfind('[').unwrap_or(0);
        format!("missing closing ]: `{}`", &pat[from..])
    } else if detail.contains("unopened group") {
        format!("unexpected ): `{pat}`")
    } else if detail.contains("repetition operator missing expression") {
        "missing argument to repetition operator".to_string()
    } else if detail.contains("look-around") {
        format!("invalid or unsupported Perl syntax: `{pat}`")
    } else if detail.contains("escape") {
        format!("invalid escape sequence: `{pat}`")
    } else {
        format!("{detail}: `{pat}`")
    };
    FuncError::new(format!("error parsing regexp: {go}"))
}

/// Whether `pat` has no RE2 operator, so it matches exactly its own text
/// (Bitnami charts test protocols with `regexFind "SASL" …`): such patterns
/// are searched for as text, not compiled.
fn is_plain_text(pat: &str) -> bool {
    !pat.bytes().any(|b| b"\\.+*?()|[]{}^$".contains(&b))
}

/// Where a plain-text pattern (see [`is_plain_text`]) first matches `src`.
fn find_plain<'s>(pat: &str, src: &'s str) -> Option<&'s str> {
    src.find(pat).map(|at| &src[at..at + pat.len()])
}

fn compile(pat: &str) -> Result<Rc<Regex>, FuncError> {
    if let Some(r) = CACHE.with(|c| c.borrow().get(pat).cloned()) {
        return Ok(r);
    }
    let translated =
        translate(pat).map_err(|m| FuncError::new(format!("error parsing regexp: {m}")))?;
    let r = Regex::builder()
        .configure(Regex::config().dfa(false))
        .build(&translated)
        .map_err(|e| go_error(pat, &e))?;
    let r = Rc::new(r);
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= CACHE_LIMIT {
            c.clear();
        }
        c.insert(pat.to_string(), r.clone());
    });
    Ok(r)
}

/// Go's `Regexp.Expand` of a replacement template for one match.
fn expand(out: &mut String, tpl: &str, src: &str, re: &Regex, caps: &Captures) {
    let b = tpl.as_bytes();
    let mut k = 0;
    let mut lit_start = 0;
    while k < b.len() {
        if b[k] != b'$' {
            k += 1;
            continue;
        }
        out.push_str(&tpl[lit_start..k]);
        let rest = &tpl[k + 1..];
        if rest.starts_with('$') {
            out.push('$');
            k += 2;
            lit_start = k;
            continue;
        }
        let is_word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
        let (name, used) = if let Some(inner) = rest.strip_prefix('{') {
            match inner.find('}') {
                Some(end) if end > 0 && inner.as_bytes()[..end].iter().all(|c| is_word(*c)) => {
                    (&inner[..end], end + 2)
                }
                _ => ("", 0),
            }
        } else {
            let n = rest.bytes().take_while(|c| is_word(*c)).count();
            (&rest[..n], n)
        };
        if name.is_empty() {
            // Malformed: Go keeps the '$' as text.
            out.push('$');
            k += 1;
            lit_start = k;
            continue;
        }
        let num = if name.bytes().all(|c| c.is_ascii_digit())
            && !(name.len() > 1 && name.starts_with('0'))
            && name.len() <= 8
        {
            name.parse::<usize>().ok()
        } else {
            None
        };
        let group = match num {
            Some(n) => caps.get_group(n),
            None => re
                .group_info()
                .to_index(PatternID::ZERO, name)
                .and_then(|i| caps.get_group(i)),
        };
        if let Some(span) = group {
            out.push_str(&src[span.range()]);
        }
        k += 1 + used;
        lit_start = k;
    }
    out.push_str(&tpl[lit_start..]);
}

fn replace_all(re: &Regex, src: &str, repl: &str, literal: bool) -> String {
    let mut out = String::with_capacity(src.len());
    let mut last = 0;
    if literal {
        for m in re.find_iter(src) {
            out.push_str(&src[last..m.start()]);
            out.push_str(repl);
            last = m.end();
        }
    } else {
        for caps in re.captures_iter(src) {
            let Some(m) = caps.get_match() else { continue };
            out.push_str(&src[last..m.start()]);
            expand(&mut out, repl, src, re, &caps);
            last = m.end();
        }
    }
    out.push_str(&src[last..]);
    out
}

fn find_all(re: &Regex, src: &str, n: i64) -> Vec<(usize, usize)> {
    if n == 0 {
        return Vec::new();
    }
    let it = re.find_iter(src).map(|m| (m.start(), m.end()));
    if n < 0 {
        it.collect()
    } else {
        it.take(n as usize).collect()
    }
}

/// Go's `Regexp.Split`.
fn split(re: &Regex, pat: &str, src: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if !pat.is_empty() && src.is_empty() {
        return vec![String::new()];
    }
    let matches = find_all(re, src, n);
    let mut parts = Vec::with_capacity(matches.len() + 1);
    let (mut beg, mut end) = (0usize, 0usize);
    for (ms, me) in matches {
        if n > 0 && parts.len() as i64 == n - 1 {
            break;
        }
        end = ms;
        if me != 0 {
            parts.push(src[beg..end].to_string());
        }
        beg = me;
    }
    if end != src.len() {
        parts.push(src[beg..].to_string());
    }
    parts
}

/// Go's `regexp.QuoteMeta`.
fn quote_meta(st: &str) -> String {
    let mut out = String::with_capacity(st.len());
    for c in st.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn strings(v: Vec<String>) -> Value {
    Value::List(gotmpl::List::with_kind(
        v.into_iter().map(Value::string).collect(),
        ListKind::String,
    ))
}

pub(crate) fn register(m: &mut FuncMap) {
    let s2 = [Ty::String, Ty::String];
    let s2i = [Ty::String, Ty::String, INT];
    let s3 = [Ty::String, Ty::String, Ty::String];

    // regexMatch swallows a bad pattern (false); the others fail on it.
    m.insert(
        "regexMatch",
        Func::new(&s2, |_, a| {
            let pat = s(&a[0]);
            if is_plain_text(pat) {
                return Ok(Value::Bool(s(&a[1]).contains(pat)));
            }
            Ok(Value::Bool(
                compile(pat).map(|r| r.is_match(s(&a[1]))).unwrap_or(false),
            ))
        }),
    );
    m.insert(
        "mustRegexMatch",
        Func::new(&s2, |_, a| {
            let pat = s(&a[0]);
            if is_plain_text(pat) {
                return Ok(Value::Bool(s(&a[1]).contains(pat)));
            }
            Ok(Value::Bool(compile(pat)?.is_match(s(&a[1]))))
        }),
    );
    for name in ["regexFindAll", "mustRegexFindAll"] {
        m.insert(
            name,
            Func::new(&s2i, |_, a| {
                let re = compile(s(&a[0]))?;
                let src = s(&a[1]);
                Ok(strings(
                    find_all(&re, src, i(&a[2]))
                        .into_iter()
                        .map(|(x, y)| src[x..y].to_string())
                        .collect(),
                ))
            }),
        );
    }
    for name in ["regexFind", "mustRegexFind"] {
        m.insert(
            name,
            Func::new(&s2, |_, a| {
                let (pat, src) = (s(&a[0]), s(&a[1]));
                let found = if is_plain_text(pat) {
                    find_plain(pat, src)
                } else {
                    compile(pat)?.find(src).map(|m| &src[m.range()])
                };
                Ok(Value::str(found.unwrap_or("")))
            }),
        );
    }
    for name in ["regexReplaceAll", "mustRegexReplaceAll"] {
        m.insert(
            name,
            Func::new(&s3, |_, a| {
                let re = compile(s(&a[0]))?;
                Ok(Value::string(replace_all(&re, s(&a[1]), s(&a[2]), false)))
            }),
        );
    }
    for name in ["regexReplaceAllLiteral", "mustRegexReplaceAllLiteral"] {
        m.insert(
            name,
            Func::new(&s3, |_, a| {
                let re = compile(s(&a[0]))?;
                Ok(Value::string(replace_all(&re, s(&a[1]), s(&a[2]), true)))
            }),
        );
    }
    for name in ["regexSplit", "mustRegexSplit"] {
        m.insert(
            name,
            Func::new(&s2i, |_, a| {
                let pat = s(&a[0]);
                let re = compile(pat)?;
                Ok(strings(split(&re, pat, s(&a[1]), i(&a[2]))))
            }),
        );
    }
    m.insert(
        "regexQuoteMeta",
        Func::new(&[Ty::String], |_, a| {
            Ok(Value::string(quote_meta(s(&a[0]))))
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conv::fmt_v;

    fn call(name: &str, args: Vec<Value>) -> Result<Value, FuncError> {
        crate::call_registered(register, name, args)
    }

    #[test]
    fn dash_after_class_escape_is_literal() {
        // redis-ha's masterGroupName check: `[\w-\.]` is word chars, '-' and '.'.
        let m = |s: &str| out("regexMatch", vec![Value::str(r"^[\w-\.]+$"), Value::str(s)]);
        assert_eq!(m("my-master.1"), "true");
        assert_eq!(m("a b"), "false");
    }

    fn out(name: &str, args: Vec<Value>) -> String {
        fmt_v(&call(name, args).expect("ok"))
    }

    #[test]
    fn plain_text_patterns_match_as_compiled_ones_do() {
        let pats = ["", "SASL", "SCRAM-SHA-512", "a b", "é#", "=,:/"];
        let srcs = [
            "",
            "SASL_SSL",
            "sasl",
            "x SCRAM-SHA-512 y",
            "a b",
            "café#1",
            "k=v,:/",
        ];
        for pat in pats {
            assert!(is_plain_text(pat), "{pat:?}");
            let re = compile(pat).expect("compiles");
            for src in srcs {
                assert_eq!(src.contains(pat), re.is_match(src), "{pat:?} in {src:?}");
                assert_eq!(
                    find_plain(pat, src),
                    re.find(src).map(|m| &src[m.range()]),
                    "{pat:?} in {src:?}"
                );
            }
        }
        for pat in [
            r"a\d", "a.b", "^a", "a$", "a|b", "(a)", "[a]", "a{2}", "a+", "a*", "a?",
        ] {
            assert!(!is_plain_text(pat), "{pat:?}");
        }
        assert_eq!(
            out("regexFind", vec!["SSL".into(), "SASL_SSL".into()]),
            "SSL"
        );
        assert_eq!(
            out("mustRegexMatch", vec!["SCRAM".into(), "PLAIN".into()]),
            "false"
        );
    }

    #[test]
    fn matching_and_finding() {
        assert_eq!(
            out("regexMatch", vec!["^[a-z]+$".into(), "abc".into()]),
            "true"
        );
        assert_eq!(out("regexMatch", vec!["(?=a)".into(), "a".into()]), "false");
        assert_eq!(
            out("regexMatch", vec!["\\p{Greek}".into(), "α".into()]),
            "true"
        );
        assert_eq!(out("regexMatch", vec!["^\\d$".into(), "٣".into()]), "false");
        assert_eq!(
            out("regexMatch", vec!["[\\d]x".into(), "1x".into()]),
            "true"
        );
        assert_eq!(
            out("regexMatch", vec!["[[:alpha:]]+".into(), "ab".into()]),
            "true"
        );
        assert_eq!(
            out("regexMatch", vec!["\\bfoo\\b".into(), "a foo b".into()]),
            "true"
        );
        assert_eq!(
            out("regexFind", vec!["(?i)HELLO".into(), "say hello".into()]),
            "hello"
        );
        assert_eq!(
            out(
                "regexFindAll",
                vec!["[0-9]+".into(), "a1b22c333".into(), Value::int(-1)]
            ),
            "[1 22 333]"
        );
        assert_eq!(
            out(
                "regexFindAll",
                vec!["[0-9]+".into(), "a1b2".into(), Value::int(0)]
            ),
            "[]"
        );
        let err = call("mustRegexMatch", vec!["[a".into(), "x".into()]).unwrap_err();
        assert!(
            err.0.starts_with("error parsing regexp: missing closing ]"),
            "{err}"
        );
        let err = call(
            "mustRegexFindAll",
            vec!["a**".into(), "x".into(), Value::int(-1)],
        )
        .unwrap_err();
        assert_eq!(
            err.0,
            "error parsing regexp: invalid nested repetition operator: `**`"
        );
        let err = call("regexFind", vec!["x{1001}".into(), "x".into()]).unwrap_err();
        assert_eq!(
            err.0,
            "error parsing regexp: invalid repeat count: `{1001}`"
        );
        let err = call("regexFind", vec!["(".into(), "x".into()]).unwrap_err();
        assert!(
            err.0.starts_with("error parsing regexp: missing closing )"),
            "{err}"
        );
    }

    #[test]
    fn replacing() {
        let r = |p: &str, src: &str, t: &str| {
            out("regexReplaceAll", vec![p.into(), src.into(), t.into()])
        };
        assert_eq!(r("a(x*)b", "-ab-axxb-", "${1}W"), "-W-xxW-");
        assert_eq!(r("a(x*)b", "-ab-axxb-", "$1W"), "---");
        assert_eq!(r("(a)(b)?", "ac", "[$2]"), "[]c");
        assert_eq!(r("^", "abc", ">"), ">abc");
        assert_eq!(r("\\s+", "a   b \t c", " "), "a b c");
        assert_eq!(r("(?P<x>b)", "abc", "<$x|$$|$>"), "a<b|$|$>c");
        assert_eq!(r("a*", "baaac", "-"), "-b-c-");
        assert_eq!(r("a{,2}", "a{,2}", "X"), "X");
        assert_eq!(r("\\101", "A", "X"), "X");
        assert_eq!(r("a{2}?", "aaa", "X"), "Xa");
        assert_eq!(
            out(
                "regexReplaceAllLiteral",
                vec!["a(x*)b".into(), "-ab-axxb-".into(), "${1}".into()]
            ),
            "-${1}-${1}-"
        );
    }

    #[test]
    fn splitting_and_quoting() {
        let sp = |p: &str, src: &str, n: i64| {
            out("regexSplit", vec![p.into(), src.into(), Value::int(n)])
        };
        assert_eq!(sp("z+", "pizza", -1), "[pi a]");
        assert_eq!(sp("z+", "pizza", 1), "[pizza]");
        assert_eq!(sp(",", "a,b,c", 2), "[a b,c]");
        assert_eq!(sp("", "abc", -1), "[a b c]");
        assert_eq!(sp("a", "", -1), "[]");
        assert_eq!(
            out("regexQuoteMeta", vec!["1.2.3 [x]*".into()]),
            "1\\.2\\.3 \\[x\\]\\*"
        );
    }
}
