//! Semantic versions as Masterminds/semver v3.4 (the library Sprig and Helm
//! use) parses and compares them, plus the `semver` and `semverCompare`
//! template functions.
//!
//! The parsing rules are regex driven in the Go library. Versions and
//! constraints are scanned by hand here (see [`constraint_syntax`]), with
//! tests that compare the scanners with the Go patterns on every short
//! string, because the odd corners of constraint syntax (`>= 1.21-0`,
//! `1.2 - 1.4`, `~> 1.2`, `||` and `,`) only behave identically if the
//! matches are identical. The chart loader reuses [`parse_version`] and
//! [`constraint_matches`] for `kubeVersion` and dependency ranges.

mod constraint_syntax;

use std::any::Any;
use std::cmp::Ordering;
use std::fmt;

use gotmpl::{Func, FuncError, FuncMap, Kind, Object, Ty, UintKind, Value};
use thiserror::Error;

/// Why a version or a constraint was rejected. The messages are the Go
/// library's, since templates print them.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SemverError {
    #[error("invalid semantic version")]
    InvalidSemVer,
    #[error("invalid prerelease string")]
    InvalidPrerelease,
    #[error("version segment starts with 0")]
    SegmentStartsZero,
    #[error("invalid metadata string")]
    InvalidMetadata,
    #[error(
        "error parsing version segment: strconv.ParseUint: parsing \"{0}\": value out of range"
    )]
    SegmentOutOfRange(String),
    #[error("improper constraint: {}", gotmpl::fmt::quote(.0))]
    ImproperConstraint(String),
    #[error("constraint parser error")]
    ConstraintParser,
}

/// A parsed version (Masterminds' `semver.Version`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pub pre: String,
    pub metadata: String,
    pub original: String,
}

fn parse_segment(s: &str) -> Result<u64, SemverError> {
    s.parse::<u64>()
        .map_err(|_| SemverError::SegmentOutOfRange(s.to_string()))
}

fn is_num(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit())
}

fn is_allowed(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

fn validate_prerelease(p: &str) -> Result<(), SemverError> {
    for part in p.split('.') {
        if part.is_empty() {
            return Err(SemverError::InvalidPrerelease);
        } else if is_num(part) {
            if part.len() > 1 && part.starts_with('0') {
                return Err(SemverError::SegmentStartsZero);
            }
        } else if !is_allowed(part) {
            return Err(SemverError::InvalidPrerelease);
        }
    }
    Ok(())
}

fn validate_metadata(m: &str) -> Result<(), SemverError> {
    for part in m.split('.') {
        if part.is_empty() || !is_allowed(part) {
            return Err(SemverError::InvalidMetadata);
        }
    }
    Ok(())
}

/// The parts of a version as Masterminds' loose `versionRegex` captures
/// them (empty when absent).
struct LooseParts<'a> {
    major: &'a str,
    minor: &'a str,
    patch: &'a str,
    pre: &'a str,
    metadata: &'a str,
}

/// Matches `^v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-(ID(\.ID)*))?(\+(ID(\.ID)*))?$`
/// with `ID` = `[0-9A-Za-z-]+`. Every version in every chart is checked
/// against it, and scanning it by hand spares each process compiling the
/// regex. Each part ends where the only character that can follow it
/// begins, so the match is found without backtracking.
fn loose_version_parts(v: &str) -> Option<LooseParts<'_>> {
    fn digits(s: &str) -> usize {
        s.bytes().take_while(u8::is_ascii_digit).count()
    }
    /// Dot-separated identifiers, each non-empty.
    fn identifiers(s: &str) -> bool {
        s.split('.')
            .all(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
    }
    let mut rest = v.strip_prefix('v').unwrap_or(v);
    let n = digits(rest);
    if n == 0 {
        return None;
    }
    let major = &rest[..n];
    rest = &rest[n..];
    let mut numbers = ["", ""];
    for part in &mut numbers {
        let Some(after) = rest.strip_prefix('.') else {
            break;
        };
        let n = digits(after);
        if n == 0 {
            return None;
        }
        *part = &after[..n];
        rest = &after[n..];
    }
    let (before_meta, metadata) = match rest.split_once('+') {
        Some((b, m)) => (b, Some(m)),
        None => (rest, None),
    };
    let pre = match before_meta {
        "" => "",
        p => p.strip_prefix('-').filter(|p| identifiers(p))?,
    };
    let metadata = match metadata {
        None => "",
        Some(m) => Some(m).filter(|m| identifiers(m))?,
    };
    Some(LooseParts {
        major,
        minor: numbers[0],
        patch: numbers[1],
        pre,
        metadata,
    })
}

/// `semver.NewVersion` with the library default `CoerceNewVersion = true`:
/// a leading `v`, missing minor/patch and leading zeros are accepted.
pub fn parse_version(v: &str) -> Result<Version, SemverError> {
    let parts = loose_version_parts(v).ok_or(SemverError::InvalidSemVer)?;
    let major = parse_segment(parts.major)?;
    let minor = match parts.minor {
        "" => 0,
        s => parse_segment(s)?,
    };
    let patch = match parts.patch {
        "" => 0,
        s => parse_segment(s)?,
    };
    let pre = parts.pre.to_string();
    let metadata = parts.metadata.to_string();
    if !pre.is_empty() {
        validate_prerelease(&pre)?;
    }
    if !metadata.is_empty() {
        validate_metadata(&metadata)?;
    }
    Ok(Version {
        major,
        minor,
        patch,
        pre,
        metadata,
        original: v.to_string(),
    })
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if !self.pre.is_empty() {
            write!(f, "-{}", self.pre)?;
        }
        if !self.metadata.is_empty() {
            write!(f, "+{}", self.metadata)?;
        }
        Ok(())
    }
}

fn compare_pre_part(s: &str, o: &str) -> Ordering {
    if s == o {
        return Ordering::Equal;
    }
    if s.is_empty() {
        return Ordering::Less;
    }
    if o.is_empty() {
        return Ordering::Greater;
    }
    match (s.parse::<u64>(), o.parse::<u64>()) {
        (Err(_), Err(_)) => {
            if s > o {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
        // A number sorts below an identifier.
        (Ok(_), Err(_)) => Ordering::Less,
        (Err(_), Ok(_)) => Ordering::Greater,
        (Ok(a), Ok(b)) => {
            if a > b {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
    }
}

fn compare_prerelease(v: &str, o: &str) -> Ordering {
    let sparts: Vec<&str> = v.split('.').collect();
    let oparts: Vec<&str> = o.split('.').collect();
    for i in 0..sparts.len().max(oparts.len()) {
        let s = sparts.get(i).copied().unwrap_or("");
        let o = oparts.get(i).copied().unwrap_or("");
        let d = compare_pre_part(s, o);
        if d != Ordering::Equal {
            return d;
        }
    }
    Ordering::Equal
}

impl Version {
    /// Precedence order; metadata is ignored and a prerelease sorts below
    /// its release.
    pub fn compare(&self, o: &Version) -> Ordering {
        let d = (self.major, self.minor, self.patch).cmp(&(o.major, o.minor, o.patch));
        if d != Ordering::Equal {
            return d;
        }
        match (self.pre.is_empty(), o.pre.is_empty()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => compare_prerelease(&self.pre, &o.pre),
        }
    }

    fn v_prefix(&self) -> &'static str {
        if self.original.starts_with('v') {
            "v"
        } else {
            ""
        }
    }

    fn with_original(mut self, prefix: &str) -> Version {
        self.original = format!("{prefix}{self}");
        self
    }

    pub fn inc_patch(&self) -> Version {
        let mut n = self.clone();
        if self.pre.is_empty() {
            n.patch = self.patch.wrapping_add(1);
        }
        n.pre.clear();
        n.metadata.clear();
        n.with_original(self.v_prefix())
    }

    pub fn inc_minor(&self) -> Version {
        let mut n = self.clone();
        n.pre.clear();
        n.metadata.clear();
        n.patch = 0;
        n.minor = self.minor.wrapping_add(1);
        n.with_original(self.v_prefix())
    }

    pub fn inc_major(&self) -> Version {
        let mut n = self.clone();
        n.pre.clear();
        n.metadata.clear();
        n.patch = 0;
        n.minor = 0;
        n.major = self.major.wrapping_add(1);
        n.with_original(self.v_prefix())
    }
}

/// One comparison of a constraint (`>=1.2`, `~1.x`, ...).
#[derive(Debug, Clone)]
struct Comparator {
    con: Version,
    op: String,
    minor_dirty: bool,
    patch_dirty: bool,
    dirty: bool,
}

/// A parsed constraint: OR groups of AND-ed comparators.
#[derive(Debug, Clone)]
pub(crate) struct Constraints {
    groups: Vec<Vec<Comparator>>,
    contains_pre: Vec<bool>,
}

fn is_x(s: &str) -> bool {
    matches!(s, "x" | "*" | "X")
}

/// `rewriteRange`: each `a - b` becomes `>= a, <= b `. Like Go's
/// `strings.Replace(o, match, t, 1)`, each replacement goes to the first
/// occurrence of the matched text, which may be an earlier one.
fn rewrite_range(input: &str) -> String {
    let mut out = input.to_string();
    for m in constraint_syntax::find_ranges(input) {
        out = out.replacen(m.whole, &format!(">= {}, <= {} ", m.from, m.to), 1);
    }
    out
}

fn parse_comparator(c: &str) -> Result<Comparator, SemverError> {
    let parts = constraint_syntax::comparator_parts(c)
        .ok_or_else(|| SemverError::ImproperConstraint(c.to_string()))?;
    let op = parts.op.to_string();
    let (mut ver, mut minor_dirty, mut patch_dirty, mut dirty) =
        (parts.version.to_string(), false, false, false);
    if is_x(parts.major) {
        ver = format!("0.0.0{}", parts.pre);
        dirty = true;
    } else if is_x(parts.minor.trim_start_matches('.')) || parts.minor.is_empty() {
        minor_dirty = true;
        dirty = true;
        ver = format!("{}.0.0{}", parts.major, parts.pre);
    } else if is_x(parts.patch.trim_start_matches('.')) || parts.patch.is_empty() {
        dirty = true;
        patch_dirty = true;
        ver = format!("{}{}.0{}", parts.major, parts.minor, parts.pre);
    }
    let con = parse_version(&ver).map_err(|_| SemverError::ConstraintParser)?;
    Ok(Comparator {
        con,
        op,
        minor_dirty,
        patch_dirty,
        dirty,
    })
}

/// `semver.NewConstraint`.
pub(crate) fn parse_constraint(c: &str) -> Result<Constraints, SemverError> {
    let c = rewrite_range(c);
    let mut groups = Vec::new();
    let mut contains_pre = Vec::new();
    for part in c.split("||") {
        if !constraint_syntax::is_valid_group(part) {
            return Err(SemverError::ImproperConstraint(part.to_string()));
        }
        let mut found = constraint_syntax::find_comparators(part);
        if found.is_empty() {
            found.push(part);
        }
        let mut group = Vec::with_capacity(found.len());
        let mut has_pre = false;
        for s in found {
            let pc = parse_comparator(s)?;
            has_pre |= !pc.con.pre.is_empty();
            group.push(pc);
        }
        groups.push(group);
        contains_pre.push(has_pre);
    }
    Ok(Constraints {
        groups,
        contains_pre,
    })
}

impl Comparator {
    fn check(&self, v: &Version, include_pre: bool) -> bool {
        if !v.pre.is_empty() && !include_pre {
            return false;
        }
        let c = &self.con;
        match self.op.as_str() {
            "" | "=" => {
                if self.dirty {
                    self.tilde(v)
                } else {
                    v.compare(c) == Ordering::Equal
                }
            }
            "!=" => {
                if self.dirty {
                    if c.major != v.major {
                        return true;
                    }
                    if c.minor != v.minor && !self.minor_dirty {
                        return true;
                    } else if self.minor_dirty {
                        return false;
                    } else if c.patch != v.patch && !self.patch_dirty {
                        return true;
                    } else if self.patch_dirty {
                        if !v.pre.is_empty() || !c.pre.is_empty() {
                            return compare_prerelease(&v.pre, &c.pre) != Ordering::Equal;
                        }
                        return false;
                    }
                }
                v.compare(c) != Ordering::Equal
            }
            ">" => {
                if !self.dirty {
                    return v.compare(c) == Ordering::Greater;
                }
                if v.major > c.major {
                    true
                } else if v.major < c.major || self.minor_dirty {
                    false
                } else if self.patch_dirty {
                    v.minor > c.minor
                } else {
                    v.compare(c) == Ordering::Greater
                }
            }
            "<" => v.compare(c) == Ordering::Less,
            ">=" | "=>" => v.compare(c) != Ordering::Less,
            "<=" | "=<" => {
                if !self.dirty {
                    return v.compare(c) != Ordering::Greater;
                }
                !(v.major > c.major
                    || (v.major == c.major && v.minor > c.minor && !self.minor_dirty))
            }
            "~" | "~>" => self.tilde(v),
            "^" => self.caret(v),
            _ => false,
        }
    }

    fn tilde(&self, v: &Version) -> bool {
        let c = &self.con;
        if v.compare(c) == Ordering::Less {
            return false;
        }
        if c.major == 0 && c.minor == 0 && c.patch == 0 && !self.minor_dirty && !self.patch_dirty {
            return true;
        }
        if v.major != c.major {
            return false;
        }
        v.minor == c.minor || self.minor_dirty
    }

    fn caret(&self, v: &Version) -> bool {
        let c = &self.con;
        if v.compare(c) == Ordering::Less {
            return false;
        }
        if c.major > 0 || self.minor_dirty {
            return v.major == c.major;
        }
        if c.major == 0 && v.major > 0 {
            return false;
        }
        if c.minor > 0 || self.patch_dirty {
            return v.minor == c.minor;
        }
        if c.minor == 0 && v.minor > 0 {
            return false;
        }
        c.patch == v.patch
    }
}

impl Constraints {
    /// `Constraints.Check`: a prerelease only matches an AND group that
    /// itself names a prerelease somewhere.
    pub(crate) fn check(&self, v: &Version) -> bool {
        self.groups
            .iter()
            .zip(&self.contains_pre)
            .any(|(group, &pre)| group.iter().all(|c| c.check(v, pre)))
    }
}

/// Sprig's `semverCompare`: parse both, then check.
pub fn constraint_matches(constraint: &str, version: &str) -> Result<bool, SemverError> {
    let c = parse_constraint(constraint)?;
    let v = parse_version(version)?;
    Ok(c.check(&v))
}

/// `*semver.Version` (or a `semver.Version` value, as `IncMinor` returns)
/// seen by templates.
#[derive(Debug, Clone)]
pub(crate) struct SemverObject {
    pub version: Version,
    /// True for `*semver.Version`; pointer-receiver methods (`Original`,
    /// `Compare`, `LessThan`, ...) exist only on the pointer.
    pub ptr: bool,
}

impl SemverObject {
    pub(crate) fn value(version: Version, ptr: bool) -> Value {
        Value::object(SemverObject { version, ptr })
    }
}

/// The parameter type of `*semver.Version` method parameters (checked by
/// `version_arg` while the engine cannot check host types itself).
pub(crate) const VERSION_TY: Ty = Ty::Any;

fn version_arg(v: &Value) -> Result<Option<Version>, FuncError> {
    match v {
        Value::Invalid | Value::Nil => Ok(None),
        Value::Object(o) => match o.as_any().downcast_ref::<SemverObject>() {
            Some(s) if s.ptr => Ok(Some(s.version.clone())),
            _ => Err(FuncError::new(format!(
                "wrong type for value; expected *semver.Version; got {}",
                v.type_name()
            ))),
        },
        other => Err(FuncError::new(format!(
            "wrong type for value; expected *semver.Version; got {}",
            other.type_name()
        ))),
    }
}

const NIL_DEREF: &str = "runtime error: invalid memory address or nil pointer dereference";

fn compare_method(
    me: Version,
    f: impl Fn(Ordering) -> bool + 'static,
    nil_result: Option<bool>,
) -> Func {
    Func::new(&[VERSION_TY], move |_, args| {
        match version_arg(args.first().unwrap_or(&Value::Nil))? {
            Some(o) => Ok(Value::Bool(f(me.compare(&o)))),
            None => nil_result
                .map(Value::Bool)
                .ok_or_else(|| FuncError::new(NIL_DEREF)),
        }
    })
}

impl Object for SemverObject {
    fn type_name(&self) -> String {
        if self.ptr {
            "*semver.Version".into()
        } else {
            "semver.Version".into()
        }
    }

    fn kind(&self) -> Kind {
        if self.ptr {
            Kind::Ptr
        } else {
            Kind::Struct
        }
    }

    fn method(&self, name: &str) -> Option<Func> {
        let v = self.version.clone();
        let uint = |n: u64| Value::Uint(n, UintKind::Uint64);
        let f = match name {
            "String" => Func::new(&[], move |_, _| Ok(Value::string(v.to_string()))),
            "Major" => Func::new(&[], move |_, _| Ok(uint(v.major))),
            "Minor" => Func::new(&[], move |_, _| Ok(uint(v.minor))),
            "Patch" => Func::new(&[], move |_, _| Ok(uint(v.patch))),
            "Prerelease" => Func::new(&[], move |_, _| Ok(Value::str(&v.pre))),
            "Metadata" => Func::new(&[], move |_, _| Ok(Value::str(&v.metadata))),
            "IncPatch" => Func::new(&[], move |_, _| {
                Ok(SemverObject::value(v.inc_patch(), false))
            }),
            "IncMinor" => Func::new(&[], move |_, _| {
                Ok(SemverObject::value(v.inc_minor(), false))
            }),
            "IncMajor" => Func::new(&[], move |_, _| {
                Ok(SemverObject::value(v.inc_major(), false))
            }),
            "SetPrerelease" => Func::new(&[Ty::String], move |_, args| {
                let p = args.first().and_then(|a| a.as_str()).unwrap_or("");
                if !p.is_empty() {
                    validate_prerelease(p).map_err(|e| FuncError::new(e.to_string()))?;
                }
                let mut n = v.clone();
                n.pre = p.to_string();
                Ok(SemverObject::value(n.with_original(v.v_prefix()), false))
            }),
            "SetMetadata" => Func::new(&[Ty::String], move |_, args| {
                let m = args.first().and_then(|a| a.as_str()).unwrap_or("");
                if !m.is_empty() {
                    validate_metadata(m).map_err(|e| FuncError::new(e.to_string()))?;
                }
                let mut n = v.clone();
                n.metadata = m.to_string();
                Ok(SemverObject::value(n.with_original(v.v_prefix()), false))
            }),
            "MarshalJSON" => Func::new(&[], move |_, _| {
                let s = serde_json::to_string(&v.to_string()).unwrap_or_default();
                Ok(Value::Bytes(s.into_bytes().into()))
            }),
            "MarshalText" => Func::new(&[], move |_, _| {
                Ok(Value::Bytes(v.to_string().into_bytes().into()))
            }),
            "Value" => Func::new(&[], move |_, _| Ok(Value::string(v.to_string()))),
            _ if !self.ptr => return None,
            "Original" => Func::new(&[], move |_, _| Ok(Value::str(&v.original))),
            "LessThan" => compare_method(v, |o| o == Ordering::Less, None),
            "LessThanEqual" => compare_method(v, |o| o != Ordering::Greater, None),
            "GreaterThan" => compare_method(v, |o| o == Ordering::Greater, None),
            "GreaterThanEqual" => compare_method(v, |o| o != Ordering::Less, None),
            "Equal" => compare_method(v, |o| o == Ordering::Equal, Some(false)),
            "Compare" => Func::new(&[VERSION_TY], move |_, args| {
                match version_arg(args.first().unwrap_or(&Value::Nil))? {
                    Some(o) => Ok(Value::int(match v.compare(&o) {
                        Ordering::Less => -1,
                        Ordering::Equal => 0,
                        Ordering::Greater => 1,
                    })),
                    None => Err(FuncError::new(NIL_DEREF)),
                }
            }),
            _ => return None,
        };
        Some(f)
    }

    fn format_v(&self) -> String {
        self.version.to_string()
    }

    fn format_sharp_v(&self) -> String {
        let v = &self.version;
        format!(
            "{}semver.Version{{major:0x{:x}, minor:0x{:x}, patch:0x{:x}, pre:{:?}, metadata:{:?}, original:{:?}}}",
            if self.ptr { "&" } else { "" },
            v.major,
            v.minor,
            v.patch,
            v.pre,
            v.metadata,
            v.original
        )
    }

    fn to_json(&self) -> Option<serde_json::Value> {
        Some(serde_json::Value::String(self.version.to_string()))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

pub(crate) fn register(m: &mut FuncMap) {
    m.insert(
        "semver",
        Func::new(&[Ty::String], |_, args| {
            let s = args.first().and_then(|a| a.as_str()).unwrap_or("");
            parse_version(s)
                .map(|v| SemverObject::value(v, true))
                .map_err(|e| FuncError::new(e.to_string()))
        }),
    );
    m.insert(
        "semverCompare",
        Func::new(&[Ty::String, Ty::String], |_, args| {
            let c = args.first().and_then(|a| a.as_str()).unwrap_or("");
            let v = args.get(1).and_then(|a| a.as_str()).unwrap_or("");
            constraint_matches(c, v)
                .map(Value::Bool)
                .map_err(|e| FuncError::new(e.to_string()))
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use gotmpl::CallCtx;
    use regex::Regex;

    fn cmp(c: &str, v: &str) -> bool {
        constraint_matches(c, v).unwrap()
    }

    fn call(m: &FuncMap, name: &str, args: Vec<Value>) -> Result<Value, FuncError> {
        let f = m.get(name).unwrap();
        (f.imp)(&mut CallCtx::detached(), args)
    }

    #[test]
    fn version_scanner_matches_masterminds_regex() {
        let re = Regex::new(
            r"^v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?$",
        )
        .unwrap();
        // Every string of up to four characters from an alphabet with
        // each kind of character the pattern treats apart, and some longer.
        let alphabet = ['v', '1', '0', '.', '-', '+', 'a', 'Z', '_', ' ', 'é'];
        let mut inputs = vec![String::new()];
        let mut last = vec![String::new()];
        for _ in 0..4 {
            last = last
                .iter()
                .flat_map(|p| alphabet.iter().map(move |c| format!("{p}{c}")))
                .collect();
            inputs.extend(last.iter().cloned());
        }
        inputs.extend(
            [
                "v1.2.3-beta.1+build.5",
                "1.2.3-a-b+c-d.e",
                "1.2.3+a+b",
                "1.2.3-+a",
                "1.2.3-a.+b",
                "10.20.30-rc.1.x-y",
                "1.2.3.",
                "1..2",
                "v1.2.3-",
                "1.2.3-a..b",
                "99999999999999999999",
            ]
            .map(String::from),
        );
        for v in &inputs {
            let by_regex = re.captures(v).map(|c| {
                let g = |i: usize| c.get(i).map_or("", |m| m.as_str());
                [
                    g(1).to_string(),
                    g(2).trim_start_matches('.').to_string(),
                    g(3).trim_start_matches('.').to_string(),
                    g(5).to_string(),
                    g(8).to_string(),
                ]
            });
            let by_hand = loose_version_parts(v)
                .map(|p| [p.major, p.minor, p.patch, p.pre, p.metadata].map(String::from));
            assert_eq!(by_hand, by_regex, "{v:?}");
        }
    }

    #[test]
    fn parses_loose_versions() {
        let v = parse_version("v1.2.3-beta.1+build.5").unwrap();
        assert_eq!((v.major, v.minor, v.patch), (1, 2, 3));
        assert_eq!(v.pre, "beta.1");
        assert_eq!(v.metadata, "build.5");
        assert_eq!(v.original, "v1.2.3-beta.1+build.5");
        assert_eq!(parse_version("1").unwrap().to_string(), "1.0.0");
        assert_eq!(parse_version("01.2.3").unwrap().major, 1);
        assert_eq!(parse_version("1.2-rc.1").unwrap().to_string(), "1.2.0-rc.1");
        for bad in ["", "bogus", "1.2.3.4", "1.2.3-", "v", "1.2.3+a..b"] {
            assert!(parse_version(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_version("1.2.3-01").unwrap_err(),
            SemverError::SegmentStartsZero
        );
        assert_eq!(
            parse_version("bogus").unwrap_err().to_string(),
            "invalid semantic version"
        );
    }

    #[test]
    fn compares_with_prerelease_precedence() {
        let p = |s| parse_version(s).unwrap();
        assert_eq!(p("1.0.0").compare(&p("1.0.0-alpha")), Ordering::Greater);
        assert_eq!(
            p("1.0.0-alpha.2").compare(&p("1.0.0-alpha.10")),
            Ordering::Less
        );
        assert_eq!(
            p("1.0.0-alpha").compare(&p("1.0.0-alpha.1")),
            Ordering::Less
        );
        assert_eq!(p("1.0.0-1").compare(&p("1.0.0-a")), Ordering::Less);
        assert_eq!(p("1.2.3+x").compare(&p("v1.2.3")), Ordering::Equal);
    }

    #[test]
    fn basic_operators() {
        assert!(!cmp(">=1.2.3", "1.2.2"));
        assert!(cmp(">=1.2.3", "2.0.0"));
        assert!(cmp("=1.2.3", "v1.2.3"));
        assert!(!cmp("!=1.2.3", "1.2.3"));
        assert!(!cmp("1.2.3", "1.2.4"));
        assert!(cmp("<1.2.3", "1.2.2"));
        assert!(!cmp("> 1", "1.0.1"));
        assert!(cmp("> 1", "2.0.0"));
        assert!(!cmp("<= 1.2", "1.3.0"));
        assert!(cmp("<= 1.2", "1.2.9"));
    }

    #[test]
    fn tilde_caret_and_wildcards() {
        assert!(cmp("~1.2", "1.2.9"));
        assert!(!cmp("~1.2", "1.3.0"));
        assert!(!cmp("~1.2.3", "1.3.0"));
        assert!(cmp("~1", "1.9.9"));
        assert!(cmp("~> 1.2", "1.2.5"));
        assert!(cmp("^1.2", "1.9.0"));
        assert!(!cmp("^1.2", "2.0.0"));
        assert!(!cmp("^1.2", "1.1.0"));
        assert!(!cmp("^0.2.3", "0.3.0"));
        assert!(cmp("^0.0.3", "0.0.3"));
        assert!(!cmp("^0.0.3", "0.0.4"));
        assert!(cmp("^1.x", "1.5.0"));
        assert!(cmp("1.x", "1.5.5"));
        assert!(!cmp("1.2.x", "1.3.0"));
        assert!(cmp("*", "0.0.1"));
    }

    #[test]
    fn ranges_and_groups() {
        assert!(!cmp(">1.0 <2.0", "2.0.0"));
        assert!(cmp(">=1.0, <2.0", "1.0.0"));
        assert!(cmp("<1.0 || >=2.0", "0.9.0"));
        assert!(cmp("<1.0 || >=2.0", "2.1.0"));
        assert!(!cmp("<1.0 || >=2.0", "1.5.0"));
        assert!(cmp("1.2.3 - 1.4.5", "1.4.5"));
        assert!(!cmp("1.2.3 - 1.4.5", "1.4.6"));
        assert!(cmp("1.2 - 1.4", "1.4.9"));
        assert!(cmp(">=1.2.3 <1.2.4 || 2.x", "2.3.4"));
        assert!(!cmp(">=1.2.3 <1.2.4 || 2.x", "1.2.5"));
    }

    #[test]
    fn prerelease_rules() {
        assert!(!cmp(">=1.2.3", "1.2.4-beta.1"));
        assert!(cmp(">=1.2.3-0", "1.2.4-beta.1"));
        assert!(!cmp(">=1.2.3-0", "1.2.2"));
        assert!(!cmp("*", "1.0.0-beta"));
        assert!(cmp("^1.2.3-beta.1", "1.2.3-beta.2"));
        assert!(cmp("^1.2.3-beta.1", "1.2.4-beta.1"));
        assert!(cmp(">= 1.21-0", "v1.25.0-eks-123"));
        assert!(cmp(">=1.19-0", "v1.36.0"));
        assert!(!cmp("<1.2.3", "1.2.3-alpha"));
        // v3.4: one prerelease comparator opens the whole AND group.
        assert!(cmp(">=1.2.0-0 <2.0.0", "1.5.0-beta"));
    }

    #[test]
    fn constraint_errors() {
        assert_eq!(
            constraint_matches("bogus", "1.0.0")
                .unwrap_err()
                .to_string(),
            "improper constraint: \"bogus\""
        );
        assert_eq!(
            constraint_matches(">=1.0.0", "bogus")
                .unwrap_err()
                .to_string(),
            "invalid semantic version"
        );
        assert!(constraint_matches("", "1.0.0").is_err());
    }

    #[test]
    fn template_object() {
        let mut m = FuncMap::new();
        register(&mut m);
        let v = call(&m, "semver", vec![Value::str("v1.2.3-x")]).unwrap();
        assert_eq!(v.type_name(), "*semver.Version");
        assert_eq!(v.kind(), Kind::Ptr);
        let Value::Object(o) = &v else { panic!() };
        assert_eq!(o.format_v(), "1.2.3-x");
        let major = (o.method("Major").unwrap().imp)(&mut CallCtx::detached(), vec![]).unwrap();
        assert!(matches!(major, Value::Uint(1, UintKind::Uint64)));
        let inc = (o.method("IncPatch").unwrap().imp)(&mut CallCtx::detached(), vec![]).unwrap();
        let Value::Object(inc) = inc else { panic!() };
        assert_eq!(inc.format_v(), "1.2.3");
        assert!(inc.method("Original").is_none());
        let other = call(&m, "semver", vec![Value::str("1.3.0")]).unwrap();
        let c = (o.method("Compare").unwrap().imp)(&mut CallCtx::detached(), vec![other]).unwrap();
        assert!(matches!(c, Value::Int(-1, _)));
        assert!(call(&m, "semver", vec![Value::str("")]).is_err());
        let r = call(
            &m,
            "semverCompare",
            vec![Value::str("~1.2"), Value::str("1.2.0")],
        );
        assert!(matches!(r, Ok(Value::Bool(true))));
    }
}
