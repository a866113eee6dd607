//! Server-side printing: answers `Accept: application/json;as=Table;...`
//! with a `meta.k8s.io` Table, as the real API server does, so `kubectl get`
//! shows the same columns it shows against a cluster. Built-in kinds use the
//! columns of Kubernetes' own printers; custom resources use their CRD
//! version's `additionalPrinterColumns`; anything else gets NAME and AGE.

mod crd;

use crate::App;
use apitypes::printers::{self, s, CellsOf};
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

/// Column definitions for a resource type, and the function computing cells.
pub(crate) struct Printer {
    columns: Vec<Value>,
    cells: CellFn,
}

enum CellFn {
    Builtin(CellsOf),
    Custom(Vec<String>, Vec<String>),
}

impl Printer {
    pub(crate) fn for_type(app: &App, rt: &ResourceType) -> Printer {
        match &rt.crd {
            Some(crd) => crd::printer(app, crd, &rt.version),
            None => {
                let builtin = printers::builtin(rt);
                Printer {
                    columns: builtin.definitions,
                    cells: CellFn::Builtin(builtin.cells),
                }
            }
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

#[cfg(test)]
mod tests {
    use super::*;

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
