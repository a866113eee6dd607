//! Object-metadata helpers: timestamps, uids, generated names, reading
//! and shaping `metadata`, and label/field selectors.

use crate::storage::Stored;
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// RFC 3339 UTC timestamp with second precision, as Kubernetes writes them.
pub(crate) fn now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format_rfc3339(secs)
}

/// Microsecond-precision timestamp (`MicroTime`, used by leases/events).
pub(crate) fn format_rfc3339(secs: u64) -> String {
    let days = (secs / 86400) as i64;
    let rem = secs % 86400;
    let (y, m, d) = gostd::time::civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

static RNG: AtomicU64 = AtomicU64::new(0);

/// Cheap non-cryptographic randomness (splitmix64), seeded from the clock.
pub(crate) fn random_u64() -> u64 {
    let mut s = RNG.load(Ordering::Relaxed);
    if s == 0 {
        let seed = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x1234_5678)
            ^ u64::from(std::process::id()).rotate_left(32);
        let _ = RNG.compare_exchange(0, seed | 1, Ordering::Relaxed, Ordering::Relaxed);
    }
    s = RNG.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
    let mut z = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A random version-4 UUID string.
pub(crate) fn new_uid() -> String {
    let a = random_u64();
    let b = random_u64();
    let bytes: Vec<u8> = a.to_be_bytes().into_iter().chain(b.to_be_bytes()).collect();
    let h: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-4{}-{}{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        ["8", "9", "a", "b"][(b & 3) as usize],
        &h[17..20],
        &h[20..32]
    )
}

/// The 5-character suffix Kubernetes appends for `generateName`.
pub(crate) fn random_suffix() -> String {
    const ALPHA: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut r = random_u64();
    (0..5)
        .map(|_| {
            let c = ALPHA[(r % ALPHA.len() as u64) as usize] as char;
            r /= ALPHA.len() as u64;
            c
        })
        .collect()
}

pub(crate) use apitypes::strings;

/// Looks a dotted path (`metadata.name`) up in an object, as a string.
pub(crate) fn field_str(obj: &Value, path: &str) -> Option<String> {
    let mut cur = obj;
    for part in path.split('.') {
        cur = cur.get(part)?;
    }
    match cur {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[derive(Debug, Clone, PartialEq)]
enum LabelOp {
    Eq(String),
    NotEq(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    NotExists,
}

/// A parsed label selector (`app=x,tier in (a,b),!legacy`).
#[derive(Debug, Clone, Default)]
pub(crate) struct LabelSelector {
    reqs: Vec<(String, LabelOp)>,
}

impl LabelSelector {
    pub(crate) fn parse(s: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        for part in split_top_level(s) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            if let Some(key) = part.strip_prefix('!') {
                reqs.push((check_key(key.trim())?, LabelOp::NotExists));
            } else if let Some(i) = part.find("!=") {
                reqs.push((
                    check_key(part[..i].trim())?,
                    LabelOp::NotEq(part[i + 2..].trim().to_string()),
                ));
            } else if let Some(i) = part.find("==") {
                reqs.push((
                    check_key(part[..i].trim())?,
                    LabelOp::Eq(part[i + 2..].trim().to_string()),
                ));
            } else if let Some(i) = part.find('=') {
                reqs.push((
                    check_key(part[..i].trim())?,
                    LabelOp::Eq(part[i + 1..].trim().to_string()),
                ));
            } else if let Some((key, rest)) = split_set_op(part, " notin ") {
                reqs.push((check_key(key)?, LabelOp::NotIn(parse_set(rest)?)));
            } else if let Some((key, rest)) = split_set_op(part, " in ") {
                reqs.push((check_key(key)?, LabelOp::In(parse_set(rest)?)));
            } else {
                reqs.push((check_key(part)?, LabelOp::Exists));
            }
        }
        Ok(LabelSelector { reqs })
    }

    /// Matches a stored object by its label index, without parsing it.
    pub(crate) fn matches_stored(&self, obj: &Stored) -> bool {
        let get = |k: &str| obj.label(k);
        self.reqs.iter().all(|(k, op)| match op {
            LabelOp::Eq(v) => get(k) == Some(v.as_str()),
            LabelOp::NotEq(v) => get(k) != Some(v.as_str()),
            LabelOp::In(vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelOp::NotIn(vs) => get(k).is_none_or(|x| vs.iter().all(|v| v != x)),
            LabelOp::Exists => get(k).is_some(),
            LabelOp::NotExists => get(k).is_none(),
        })
    }
}

fn check_key(k: &str) -> Result<String, String> {
    if k.is_empty() || k.contains(char::is_whitespace) || k.contains(['(', ')', ',']) {
        return Err(format!("invalid label key {k:?}"));
    }
    Ok(k.to_string())
}

fn split_set_op<'a>(part: &'a str, op: &str) -> Option<(&'a str, &'a str)> {
    let i = part.find(op)?;
    Some((part[..i].trim(), part[i + op.len()..].trim()))
}

fn parse_set(s: &str) -> Result<Vec<String>, String> {
    let inner = s
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("expected a parenthesised set of values, got {s:?}"))?;
    Ok(inner
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect())
}

fn split_top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// A parsed field selector (`metadata.name=x,type!=y`).
#[derive(Debug, Clone, Default)]
pub(crate) struct FieldSelector {
    reqs: Vec<(String, bool, String)>,
}

impl FieldSelector {
    pub(crate) fn parse(s: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        for part in s.split(',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let (k, eq, v) = if let Some(i) = part.find("!=") {
                (&part[..i], false, &part[i + 2..])
            } else if let Some(i) = part.find("==") {
                (&part[..i], true, &part[i + 2..])
            } else if let Some(i) = part.find('=') {
                (&part[..i], true, &part[i + 1..])
            } else {
                return Err(format!(
                    "invalid field selector {part:?}: expected key=value"
                ));
            };
            reqs.push((k.trim().to_string(), eq, v.trim().to_string()));
        }
        Ok(FieldSelector { reqs })
    }

    /// The field labels the selector uses.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &str> {
        self.reqs.iter().map(|(k, _, _)| k.as_str())
    }

    /// Renames selector keys (API views whose fields are stored elsewhere).
    pub(crate) fn map_keys(mut self, f: impl Fn(&str) -> String) -> Self {
        for r in &mut self.reqs {
            r.0 = f(&r.0);
        }
        self
    }

    pub(crate) fn matches(&self, obj: &Value) -> bool {
        self.reqs.iter().all(|(k, eq, v)| {
            let actual = field_str(obj, k).unwrap_or_default();
            (actual == *v) == *eq
        })
    }

    /// Matches a stored object, parsing it only when a field outside its
    /// index (name and namespace) is selected on.
    pub(crate) fn matches_stored(&self, obj: &Stored) -> bool {
        let indexed = |k: &str| match k {
            "metadata.name" => Some(obj.name()),
            "metadata.namespace" => Some(obj.namespace()),
            _ => None,
        };
        if self.reqs.iter().all(|(k, _, _)| indexed(k).is_some()) {
            self.reqs
                .iter()
                .all(|(k, eq, v)| (indexed(k) == Some(v.as_str())) == *eq)
        } else {
            self.matches(&obj.value())
        }
    }
}

pub(crate) fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

pub(crate) fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = json!({});
    }
    let meta = &mut obj["metadata"];
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    match meta {
        Value::Object(m) => m,
        // Just made an object above.
        _ => unreachable!("metadata was set to an object"),
    }
}

pub(crate) fn finalizers(obj: &Value) -> Vec<String> {
    strings(obj.pointer("/metadata/finalizers"))
}

pub(crate) fn is_deleting(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors() {
        let o = Stored::new(&json!({"metadata": {"labels": {"app": "web", "tier": "fe"}}}));
        let m = |s: &str| LabelSelector::parse(s).map(|x| x.matches_stored(&o));
        assert_eq!(m("app=web"), Ok(true));
        assert_eq!(m("app==web,tier=fe"), Ok(true));
        assert_eq!(m("app!=web"), Ok(false));
        assert_eq!(m("tier in (fe, be)"), Ok(true));
        assert_eq!(m("tier notin (fe,be)"), Ok(false));
        assert_eq!(m("app,!legacy"), Ok(true));
        assert_eq!(m("!app"), Ok(false));
        assert_eq!(m("missing notin (x)"), Ok(true));
        assert!(LabelSelector::parse("tier in fe").is_err());
    }

    #[test]
    fn field_selectors() {
        let o = json!({"metadata": {"name": "a", "namespace": "ns"}, "type": "Opaque"});
        let f = FieldSelector::parse("metadata.name=a,type!=kubernetes.io/tls").unwrap();
        assert!(f.matches(&o));
        assert_eq!(f.keys().collect::<Vec<_>>(), ["metadata.name", "type"]);
        assert!(!FieldSelector::parse("metadata.namespace=x")
            .unwrap()
            .matches(&o));
        // Stored objects match the same, by their index where it suffices.
        let stored = Stored::new(&o);
        let m = |s: &str| FieldSelector::parse(s).unwrap().matches_stored(&stored);
        assert!(m("metadata.name=a,type!=kubernetes.io/tls"));
        assert!(m("metadata.name=a,metadata.namespace==ns"));
        assert!(!m("metadata.namespace=x"));
        assert!(m("metadata.namespace!=x"));
        assert!(!m("type=kubernetes.io/tls"));
        assert!(m("type=Opaque"));
    }

    #[test]
    fn generated_names_and_times() {
        assert_eq!(new_uid().len(), 36);
        assert_eq!(random_suffix().len(), 5);
        assert_eq!(format_rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
    }
}
