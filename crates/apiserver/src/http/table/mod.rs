//! Server-side printing: answers `Accept: application/json;as=Table;...`
//! with a `meta.k8s.io` Table, as the real API server does, so `kubectl get`
//! shows the same columns it shows against a cluster. Built-in kinds use the
//! columns of Kubernetes' own printers; custom resources use their CRD
//! version's `additionalPrinterColumns`; anything else gets NAME and AGE.

mod builtin;
mod crd;

use crate::App;
use apitypes::ResourceType;
use axum::http::HeaderMap;
use serde_json::{json, Value};
use std::time::{SystemTime, UNIX_EPOCH};

/// What a client asked the rows to carry (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Include {
    None,
    Metadata,
    Object,
}

/// A request for Table output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TableOpts {
    /// `meta.k8s.io` version the client accepts (v1 preferred).
    pub(crate) v1: bool,
    pub(crate) include: Include,
}

impl TableOpts {
    /// Table output when the Accept header asks for it before any plain
    /// JSON alternative.
    pub(crate) fn from_request(
        headers: &HeaderMap,
        include_object: Option<&str>,
    ) -> Option<TableOpts> {
        let accept = headers.get("accept").and_then(|v| v.to_str().ok())?;
        let mut v1beta1 = false;
        for part in accept.split(',') {
            let params: Vec<&str> = part.split(';').map(str::trim).collect();
            if !params.contains(&"as=Table") {
                // The first acceptable plain type wins over later Table ones.
                if params
                    .first()
                    .is_some_and(|t| *t == "application/json" || *t == "*/*")
                    && !v1beta1
                {
                    return None;
                }
                continue;
            }
            if params.contains(&"g=meta.k8s.io") || !params.iter().any(|p| p.starts_with("g=")) {
                let include = match include_object {
                    Some("None") => Include::None,
                    Some("Object") => Include::Object,
                    _ => Include::Metadata,
                };
                if params.contains(&"v=v1beta1") {
                    v1beta1 = true;
                    continue;
                }
                return Some(TableOpts { v1: true, include });
            }
        }
        v1beta1.then_some(TableOpts {
            v1: false,
            include: match include_object {
                Some("None") => Include::None,
                Some("Object") => Include::Object,
                _ => Include::Metadata,
            },
        })
    }
}

/// One column: name, type, format, priority (1 = only with `-o wide`),
/// description.
struct Col {
    name: &'static str,
    kind: &'static str,
    format: &'static str,
    priority: u8,
}

const NAME: Col = Col {
    name: "Name",
    kind: "string",
    format: "name",
    priority: 0,
};

fn col_json(name: &str, kind: &str, format: &str, priority: u64, description: &str) -> Value {
    json!({"name": name, "type": kind, "format": format, "description": description, "priority": priority})
}

/// Column definitions for a resource type, and the function computing cells.
pub(crate) struct Printer {
    columns: Vec<Value>,
    cells: CellFn,
}

/// Computes a row's cells from an object and the current time.
type CellsOf = fn(&Value, u64) -> Vec<Value>;

enum CellFn {
    Builtin(CellsOf),
    Custom(Vec<String>, Vec<String>),
}

impl Printer {
    pub(crate) fn for_type(app: &App, rt: &ResourceType) -> Printer {
        match &rt.crd {
            Some(crd) => crd::printer(app, crd, &rt.version),
            None => builtin::printer(rt),
        }
    }

    fn cells(&self, obj: &Value, now: u64) -> Vec<Value> {
        match &self.cells {
            CellFn::Builtin(f) => f(obj, now),
            CellFn::Custom(paths, kinds) => {
                let mut out = vec![json!(s(obj, "/metadata/name"))];
                for (p, k) in paths.iter().zip(kinds) {
                    out.push(crd::cell(obj, p, k, now));
                }
                out
            }
        }
    }

    /// A Table of `objs` (already presented in the requested version).
    pub(crate) fn table(
        &self,
        objs: &[Value],
        list_meta: Value,
        opts: TableOpts,
        headers: bool,
    ) -> Value {
        let now = now_secs();
        let rows: Vec<Value> = objs
            .iter()
            .map(|o| {
                let mut row = json!({"cells": self.cells(o, now)});
                match opts.include {
                    Include::None => {}
                    Include::Object => row["object"] = o.clone(),
                    Include::Metadata => row["object"] = partial_metadata(o, opts.v1),
                }
                row
            })
            .collect();
        let mut t = json!({
            "kind": "Table",
            "apiVersion": if opts.v1 { "meta.k8s.io/v1" } else { "meta.k8s.io/v1beta1" },
            "metadata": list_meta,
            "rows": rows,
        });
        t["columnDefinitions"] = if headers {
            Value::Array(self.columns.clone())
        } else {
            json!([])
        };
        t
    }
}

fn describe(name: &str) -> String {
    match name {
        "Name" => "Name must be unique within a namespace. Cannot be updated.".into(),
        "Age" => "CreationTimestamp is a timestamp representing the server time when this object was created.".into(),
        other => format!("{other} of the object."),
    }
}

fn partial_metadata(obj: &Value, v1: bool) -> Value {
    let mut md = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
    if let Some(m) = md.as_object_mut() {
        m.remove("managedFields");
    }
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": if v1 { "meta.k8s.io/v1" } else { "meta.k8s.io/v1beta1" },
        "metadata": md,
    })
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)` to Unix seconds.
pub(crate) fn parse_rfc3339(t: &str) -> Option<u64> {
    let b = t.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let num = |r: std::ops::Range<usize>| t.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut rest = &t[19..];
    if let Some(r) = rest.strip_prefix('.') {
        rest = r.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    let offset = match rest {
        "Z" | "z" => 0,
        o if o.len() == 6 => {
            let sign = if o.starts_with('-') { -1 } else { 1 };
            sign * (o.get(1..3)?.parse::<i64>().ok()? * 3600
                + o.get(4..6)?.parse::<i64>().ok()? * 60)
        }
        _ => return None,
    };
    // Howard Hinnant's days-from-civil.
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86400 + h * 3600 + mi * 60 + s - offset).ok()
}

/// Kubernetes' `duration.HumanDuration`, which kubectl shows as AGE.
pub(crate) fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    if secs < 0 {
        return "0s".into();
    }
    if secs < 120 {
        return format!("{secs}s");
    }
    let minutes = secs / 60;
    if minutes < 10 {
        let s = secs % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

fn s<'a>(obj: &'a Value, ptr: &str) -> &'a str {
    obj.pointer(ptr).and_then(Value::as_str).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(125), "2m5s");
        assert_eq!(human_duration(600), "10m");
        assert_eq!(human_duration(3 * 3600 + 60), "3h1m");
        assert_eq!(human_duration(30 * 3600), "30h");
        assert_eq!(human_duration(3 * 86400 + 3600), "3d1h");
        assert_eq!(human_duration(-5), "<invalid>");
    }

    #[test]
    fn timestamps() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("2023-11-14T22:13:20Z"), Some(1_700_000_000));
        assert_eq!(
            parse_rfc3339("2023-11-14T22:13:20.123456Z"),
            Some(1_700_000_000)
        );
        assert_eq!(
            parse_rfc3339("2023-11-14T23:13:20+01:00"),
            Some(1_700_000_000)
        );
        assert_eq!(parse_rfc3339("yesterday"), None);
    }

    #[test]
    fn accept_negotiation() {
        let mut h = HeaderMap::new();
        h.insert(
            "accept",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
                .parse()
                .unwrap(),
        );
        let t = TableOpts::from_request(&h, None).unwrap();
        assert!(t.v1);
        assert_eq!(t.include, Include::Metadata);
        h.insert("accept", "application/json".parse().unwrap());
        assert!(TableOpts::from_request(&h, None).is_none());
    }
}
