//! Sprig's path functions (Go's `path` and, on Linux, identical
//! `path/filepath`) and `urlParse`/`urlJoin` over a port of the parts of
//! Go's `net/url` they use, so that escaping and error texts match.

use gotmpl::{Func, FuncError, FuncMap, Map, Ty, Value};

use gostd::path::clean;

/// Go's `path.Base`.
pub(crate) fn base(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/".into();
    }
    match trimmed.rfind('/') {
        Some(i) => trimmed[i + 1..].to_string(),
        None => trimmed.to_string(),
    }
}

/// Go's `path.Dir`.
pub(crate) fn dir(path: &str) -> String {
    let i = path.rfind('/').map(|i| i + 1).unwrap_or(0);
    clean(&path[..i])
}

/// Go's `path.Ext`.
pub(crate) fn ext(path: &str) -> String {
    for (i, c) in path.char_indices().rev() {
        match c {
            '/' => break,
            '.' => return path[i..].to_string(),
            _ => {}
        }
    }
    String::new()
}

/// Go's `path.IsAbs`.
pub(crate) fn is_abs(path: &str) -> bool {
    path.starts_with('/')
}

// ---------------------------------------------------------------------------
// net/url

#[derive(Clone, Copy, PartialEq, Eq)]
enum Enc {
    Path,
    Host,
    UserPassword,
    Fragment,
}

fn should_escape(c: u8, mode: Enc) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if mode == Enc::Host
        && matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
        )
    {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => return false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => {
            return match mode {
                Enc::Path => c == b'?',
                Enc::UserPassword => matches!(c, b'@' | b'/' | b'?' | b':'),
                Enc::Fragment => false,
                Enc::Host => true,
            }
        }
        _ => {}
    }
    if mode == Enc::Fragment && matches!(c, b'!' | b'(' | b')' | b'*') {
        return false;
    }
    true
}

fn escape(s: &str, mode: Enc) -> String {
    let mut out = String::with_capacity(s.len());
    for &c in s.as_bytes() {
        if should_escape(c, mode) {
            out.push_str(&format!("%{c:02X}"));
        } else {
            out.push(c as char);
        }
    }
    out
}

fn go_quote(s: &str) -> String {
    gotmpl::fmt::quote(s)
}

fn unescape(s: &str, mode: Enc) -> Result<String, String> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                if i + 2 >= b.len()
                    || !b[i + 1].is_ascii_hexdigit()
                    || !b[i + 2].is_ascii_hexdigit()
                {
                    let end = (i + 3).min(b.len());
                    let frag = String::from_utf8_lossy(&b[i..end]).into_owned();
                    return Err(format!("invalid URL escape {}", go_quote(&frag)));
                }
                if mode == Enc::Host && hexval(b[i + 1]) < 8 && &s[i..i + 3] != "%25" {
                    return Err(format!("invalid URL escape {}", go_quote(&s[i..i + 3])));
                }
                i += 3;
            }
            c => {
                if mode == Enc::Host && c < 0x80 && should_escape(c, mode) {
                    return Err(format!(
                        "invalid character {} in host name",
                        go_quote(&(c as char).to_string())
                    ));
                }
                i += 1;
            }
        }
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push(hexval(b[i + 1]) << 4 | hexval(b[i + 2]));
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn hexval(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => 0,
    }
}

/// The parts of Go's `url.URL` that Sprig exposes.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Url {
    pub scheme: String,
    pub opaque: String,
    /// `(username, password)`.
    pub user: Option<(String, Option<String>)>,
    pub host: String,
    pub path: String,
    pub raw_query: String,
    pub fragment: String,
    pub force_query: bool,
    pub omit_host: bool,
}

fn get_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' => {
                if i == 0 {
                    return Ok(("", raw));
                }
            }
            b':' => {
                if i == 0 {
                    return Err("missing protocol scheme".into());
                }
                return Ok((&raw[..i], &raw[i + 1..]));
            }
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

fn valid_userinfo(s: &str) -> bool {
    s.bytes().all(|c| {
        c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'-' | b'.'
                    | b'_'
                    | b':'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b'%'
                    | b'@'
            )
    })
}

fn valid_optional_port(port: &str) -> bool {
    if port.is_empty() {
        return true;
    }
    match port.strip_prefix(':') {
        Some(digits) => digits.bytes().all(|c| c.is_ascii_digit()),
        None => false,
    }
}

fn parse_host(host: &str) -> Result<String, String> {
    if host.starts_with('[') {
        let Some(i) = host.rfind(']') else {
            return Err("missing ']' in host".into());
        };
        let port = &host[i + 1..];
        if !valid_optional_port(port) {
            return Err(format!("invalid port {} after host", go_quote(port)));
        }
    } else if let Some(i) = host.rfind(':') {
        let port = &host[i..];
        if !valid_optional_port(port) {
            return Err(format!("invalid port {} after host", go_quote(port)));
        }
    }
    unescape(host, Enc::Host)
}

type Authority = (Option<(String, Option<String>)>, String);

fn parse_authority(authority: &str) -> Result<Authority, String> {
    let at = authority.rfind('@');
    let host = parse_host(match at {
        Some(i) => &authority[i + 1..],
        None => authority,
    })?;
    let Some(i) = at else {
        return Ok((None, host));
    };
    let userinfo = &authority[..i];
    if !valid_userinfo(userinfo) {
        return Err("net/url: invalid userinfo".into());
    }
    let user = match userinfo.split_once(':') {
        None => (unescape(userinfo, Enc::UserPassword)?, None),
        Some((u, p)) => (
            unescape(u, Enc::UserPassword)?,
            Some(unescape(p, Enc::UserPassword)?),
        ),
    };
    Ok((Some(user), host))
}

fn parse_no_fragment(raw: &str) -> Result<Url, String> {
    if raw.bytes().any(|c| c < 0x20 || c == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    let mut url = Url::default();
    if raw == "*" {
        url.path = "*".into();
        return Ok(url);
    }
    let (scheme, mut rest) = get_scheme(raw)?;
    url.scheme = scheme.to_ascii_lowercase();
    let rest_owned;
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        url.force_query = true;
        rest = &rest[..rest.len() - 1];
    } else if let Some((r, q)) = rest.split_once('?') {
        url.raw_query = q.to_string();
        rest_owned = r.to_string();
        rest = &rest_owned;
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            url.opaque = rest.to_string();
            return Ok(url);
        }
        let segment = rest.split('/').next().unwrap_or("");
        if segment.contains(':') {
            return Err("first path segment in URL cannot contain colon".into());
        }
    }
    let mut path = rest;
    if (!url.scheme.is_empty() || !rest.starts_with("///")) && rest.starts_with("//") {
        let authority_and_rest = &rest[2..];
        let (authority, p) = match authority_and_rest.find('/') {
            Some(i) => (&authority_and_rest[..i], &authority_and_rest[i..]),
            None => (authority_and_rest, ""),
        };
        let (user, host) = parse_authority(authority)?;
        url.user = user;
        url.host = host;
        path = p;
    } else if !url.scheme.is_empty() && rest.starts_with('/') {
        url.omit_host = true;
    }
    url.path = unescape(path, Enc::Path)?;
    Ok(url)
}

/// Go's `url.Parse`; the error is the text of Go's `*url.Error`.
pub(crate) fn parse_url(raw: &str) -> Result<Url, String> {
    let (u, frag) = match raw.split_once('#') {
        Some((u, f)) => (u, Some(f)),
        None => (raw, None),
    };
    let mut url = parse_no_fragment(u).map_err(|e| format!("parse {}: {e}", go_quote(u)))?;
    if let Some(f) = frag {
        url.fragment =
            unescape(f, Enc::Fragment).map_err(|e| format!("parse {}: {e}", go_quote(raw)))?;
    }
    Ok(url)
}

impl Url {
    /// `u.Hostname()`.
    pub(crate) fn hostname(&self) -> String {
        let host = &self.host;
        if let Some(rest) = host.strip_prefix('[') {
            return rest.split(']').next().unwrap_or("").to_string();
        }
        match host.rfind(':') {
            Some(i) => host[..i].to_string(),
            None => host.clone(),
        }
    }

    fn userinfo_string(&self) -> Option<String> {
        self.user.as_ref().map(|(u, p)| {
            let mut s = escape(u, Enc::UserPassword);
            if let Some(p) = p {
                s.push(':');
                s.push_str(&escape(p, Enc::UserPassword));
            }
            s
        })
    }

    fn escaped_path(&self) -> String {
        if self.path == "*" {
            return "*".into();
        }
        escape(&self.path, Enc::Path)
    }

    /// `u.String()`.
    pub(crate) fn to_url_string(&self) -> String {
        let mut buf = String::new();
        if !self.scheme.is_empty() {
            buf.push_str(&self.scheme);
            buf.push(':');
        }
        if !self.opaque.is_empty() {
            buf.push_str(&self.opaque);
        } else {
            let has_authority =
                !self.scheme.is_empty() || !self.host.is_empty() || self.user.is_some();
            let omit = self.omit_host && self.host.is_empty() && self.user.is_none();
            if has_authority && !omit {
                if !self.host.is_empty() || !self.path.is_empty() || self.user.is_some() {
                    buf.push_str("//");
                }
                if let Some(ui) = self.userinfo_string() {
                    buf.push_str(&ui);
                    buf.push('@');
                }
                if !self.host.is_empty() {
                    buf.push_str(&escape(&self.host, Enc::Host));
                }
            }
            let path = self.escaped_path();
            if !path.is_empty() && !path.starts_with('/') && !self.host.is_empty() {
                buf.push('/');
            }
            if buf.is_empty() {
                let segment = path.split('/').next().unwrap_or("");
                if segment.contains(':') {
                    buf.push_str("./");
                }
            }
            buf.push_str(&path);
        }
        if self.force_query || !self.raw_query.is_empty() {
            buf.push('?');
            buf.push_str(&self.raw_query);
        }
        if !self.fragment.is_empty() {
            buf.push('#');
            buf.push_str(&escape(&self.fragment, Enc::Fragment));
        }
        buf
    }
}

fn url_parse(v: &str) -> Result<Value, FuncError> {
    let u = parse_url(v).map_err(|e| FuncError::new(format!("unable to parse url: {e}")))?;
    let mut m = Map::new();
    let s = |x: &str| Value::str(x);
    m.insert("scheme".into(), s(&u.scheme));
    m.insert("host".into(), s(&u.host));
    m.insert("hostname".into(), Value::string(u.hostname()));
    m.insert("path".into(), s(&u.path));
    m.insert("query".into(), s(&u.raw_query));
    m.insert("opaque".into(), s(&u.opaque));
    m.insert("fragment".into(), s(&u.fragment));
    m.insert(
        "userinfo".into(),
        Value::string(u.userinfo_string().unwrap_or_default()),
    );
    Ok(Value::map(m))
}

fn dict_get_or_empty(d: &Map, key: &str) -> Result<String, FuncError> {
    match d.get(key) {
        None => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.to_string()),
        Some(Value::Nil | Value::Invalid) => Err(FuncError::new(
            "runtime error: invalid memory address or nil pointer dereference",
        )),
        Some(other) => Err(FuncError::new(format!(
            "unable to parse {key} key, must be of type string, but {} found",
            other.kind().go_name()
        ))),
    }
}

fn url_join(d: &Map) -> Result<Value, FuncError> {
    let mut u = Url {
        scheme: dict_get_or_empty(d, "scheme")?,
        host: dict_get_or_empty(d, "host")?,
        path: dict_get_or_empty(d, "path")?,
        raw_query: dict_get_or_empty(d, "query")?,
        opaque: dict_get_or_empty(d, "opaque")?,
        fragment: dict_get_or_empty(d, "fragment")?,
        ..Url::default()
    };
    let userinfo = dict_get_or_empty(d, "userinfo")?;
    if !userinfo.is_empty() {
        let tmp = parse_url(&format!("proto://{userinfo}@host"))
            .map_err(|e| FuncError::new(format!("unable to parse userinfo in dict: {e}")))?;
        u.user = tmp.user;
    }
    Ok(Value::string(u.to_url_string()))
}

fn str_fn<T: Into<Value> + 'static>(m: &mut FuncMap, name: &str, f: fn(&str) -> T) {
    m.insert(
        name,
        Func::new(&[Ty::String], move |_, args| {
            let s = args.first().and_then(|a| a.as_str()).unwrap_or("");
            Ok(f(s).into())
        }),
    );
}

pub(crate) fn register(m: &mut FuncMap) {
    for prefix in ["", "os"] {
        let name = |n: &str| {
            if prefix.is_empty() {
                n.to_string()
            } else {
                let mut c = n.chars();
                let first = c.next().map(|f| f.to_ascii_uppercase()).unwrap_or_default();
                format!("{prefix}{first}{}", c.as_str())
            }
        };
        str_fn(m, &name("base"), base);
        str_fn(m, &name("dir"), dir);
        str_fn(m, &name("clean"), clean);
        str_fn(m, &name("ext"), ext);
        str_fn(m, &name("isAbs"), is_abs);
    }
    m.insert(
        "urlParse",
        Func::new(&[Ty::String], |_, args| {
            url_parse(args.first().and_then(|a| a.as_str()).unwrap_or(""))
        }),
    );
    m.insert(
        "urlJoin",
        Func::new(&[Ty::Map], |_, args| match args.first() {
            Some(Value::Map(d)) => url_join(&d.borrow()),
            _ => url_join(&Map::new()),
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: Vec<Value>) -> Result<Value, FuncError> {
        crate::call_registered(register, name, args)
    }

    #[test]
    fn go_path_semantics() {
        assert_eq!(base("a/b/c.txt"), "c.txt");
        assert_eq!(base(""), ".");
        assert_eq!(base("a/b/"), "b");
        assert_eq!(base("///"), "/");
        assert_eq!(base("c:\\x\\y"), "c:\\x\\y");
        assert_eq!(dir("a/b/c.txt"), "a/b");
        assert_eq!(dir(""), ".");
        assert_eq!(dir("/a"), "/");
        assert_eq!(dir("a/b/../c"), "a");
        assert_eq!(ext("a/b.tar.gz"), ".gz");
        assert_eq!(ext("noext"), "");
        assert_eq!(ext(".hidden"), ".hidden");
        assert_eq!(ext("a.b/c"), "");
        assert_eq!(clean("a/../b//c/./d/"), "b/c/d");
        assert_eq!(clean("/../a"), "/a");
        assert_eq!(clean("../../a/.."), "../..");
        assert_eq!(clean("a/.."), ".");
        assert!(is_abs("/a"));
        assert!(!is_abs("a"));
        assert!(matches!(
            call("osIsAbs", vec![Value::str("/x")]),
            Ok(Value::Bool(true))
        ));
        assert!(
            matches!(call("osClean", vec![Value::str("a//b")]), Ok(Value::String(s)) if &*s == "a/b")
        );
    }

    fn parsed(raw: &str) -> Map {
        match call("urlParse", vec![Value::str(raw)]).unwrap() {
            Value::Map(m) => m.borrow().clone(),
            other => panic!("{other:?}"),
        }
    }

    fn get(m: &Map, k: &str) -> String {
        m.get(k).and_then(|v| v.as_str()).unwrap_or("?").to_string()
    }

    #[test]
    fn url_parse() {
        let m = parsed("https://user:pw@host.example:8080/p/a?q=1&r=2#frag");
        assert_eq!(get(&m, "scheme"), "https");
        assert_eq!(get(&m, "host"), "host.example:8080");
        assert_eq!(get(&m, "hostname"), "host.example");
        assert_eq!(get(&m, "path"), "/p/a");
        assert_eq!(get(&m, "query"), "q=1&r=2");
        assert_eq!(get(&m, "fragment"), "frag");
        assert_eq!(get(&m, "userinfo"), "user:pw");
        assert_eq!(get(&m, "opaque"), "");
        assert_eq!(get(&parsed("https://h/a%20b"), "path"), "/a b");
        let rel = parsed("relative/path?x");
        assert_eq!(get(&rel, "path"), "relative/path");
        assert_eq!(get(&rel, "query"), "x");
        assert_eq!(
            get(&parsed("mailto:joe@example.com"), "opaque"),
            "joe@example.com"
        );
        assert_eq!(
            call("urlParse", vec![Value::str("::bad")]).unwrap_err().0,
            "unable to parse url: parse \"::bad\": missing protocol scheme"
        );
        assert!(call("urlParse", vec![Value::str("http://h:x/")]).is_err());
    }

    #[test]
    fn url_join() {
        let mut d = Map::new();
        for (k, v) in [
            ("scheme", "https"),
            ("host", "example.com"),
            ("path", "/x y"),
            ("query", "a=1"),
            ("fragment", "f"),
        ] {
            d.insert(k.into(), Value::str(v));
        }
        let j = |d: Map| match call("urlJoin", vec![Value::map(d)]).unwrap() {
            Value::String(s) => s.to_string(),
            other => panic!("{other:?}"),
        };
        assert_eq!(j(d), "https://example.com/x%20y?a=1#f");
        let mut d = Map::new();
        for (k, v) in [("host", "h"), ("userinfo", "u:p"), ("scheme", "http")] {
            d.insert(k.into(), Value::str(v));
        }
        assert_eq!(j(d), "http://u:p@h");
        assert_eq!(j(parsed("http://a/b?c#d")), "http://a/b?c#d");
        let mut bad = Map::new();
        bad.insert("host".into(), Value::int(1));
        assert_eq!(
            call("urlJoin", vec![Value::map(bad)]).unwrap_err().0,
            "unable to parse host key, must be of type string, but int found"
        );
    }
}
