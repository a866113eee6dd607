//! Decoding of Kubernetes protobuf request bodies for the few simple kinds
//! kubectl's imperative commands send that way (`kubectl create namespace|
//! configmap|secret|serviceaccount`). Everything else is answered with 415.
//! Responses are always JSON, which client-go accepts.

use base64::Engine;
use serde_json::{json, Map, Value};

const MAGIC: &[u8] = b"k8s\0";

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut out = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.buf.get(self.pos).ok_or("truncated varint")?;
            self.pos += 1;
            out |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        Err("varint too long".into())
    }

    fn next(&mut self) -> Result<Option<(u64, Field<'a>)>, String> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let tag = self.varint()?;
        let field = tag >> 3;
        match tag & 7 {
            0 => Ok(Some((field, Field::Varint(self.varint()?)))),
            2 => {
                let len = usize::try_from(self.varint()?).map_err(|_| "length overflow")?;
                let end = self
                    .pos
                    .checked_add(len)
                    .filter(|e| *e <= self.buf.len())
                    .ok_or("truncated field")?;
                let b = &self.buf[self.pos..end];
                self.pos = end;
                Ok(Some((field, Field::Bytes(b))))
            }
            1 => {
                self.pos += 8;
                Ok(Some((field, Field::Varint(0))))
            }
            5 => {
                self.pos += 4;
                Ok(Some((field, Field::Varint(0))))
            }
            w => Err(format!("unsupported wire type {w}")),
        }
    }
}

fn string(b: &[u8]) -> Result<String, String> {
    String::from_utf8(b.to_vec()).map_err(|e| format!("invalid UTF-8: {e}"))
}

/// Decodes a map entry `{key = 1, value = 2}`.
fn map_entry(b: &[u8], bytes_value: bool) -> Result<(String, Value), String> {
    let mut r = Reader::new(b);
    let (mut k, mut v) = (String::new(), Value::String(String::new()));
    while let Some((f, val)) = r.next()? {
        match (f, val) {
            (1, Field::Bytes(x)) => k = string(x)?,
            (2, Field::Bytes(x)) if bytes_value => {
                v = json!(base64::engine::general_purpose::STANDARD.encode(x))
            }
            (2, Field::Bytes(x)) => v = json!(string(x)?),
            _ => {}
        }
    }
    Ok((k, v))
}

fn object_meta(b: &[u8]) -> Result<Value, String> {
    let mut r = Reader::new(b);
    let mut m = Map::new();
    let mut labels = Map::new();
    let mut annotations = Map::new();
    let mut finalizers = Vec::new();
    while let Some((f, val)) = r.next()? {
        match (f, val) {
            (1, Field::Bytes(x)) => {
                m.insert("name".into(), json!(string(x)?));
            }
            (2, Field::Bytes(x)) => {
                m.insert("generateName".into(), json!(string(x)?));
            }
            (3, Field::Bytes(x)) => {
                m.insert("namespace".into(), json!(string(x)?));
            }
            (6, Field::Bytes(x)) => {
                m.insert("resourceVersion".into(), json!(string(x)?));
            }
            (11, Field::Bytes(x)) => {
                let (k, v) = map_entry(x, false)?;
                labels.insert(k, v);
            }
            (12, Field::Bytes(x)) => {
                let (k, v) = map_entry(x, false)?;
                annotations.insert(k, v);
            }
            (14, Field::Bytes(x)) => finalizers.push(json!(string(x)?)),
            _ => {}
        }
    }
    if !labels.is_empty() {
        m.insert("labels".into(), Value::Object(labels));
    }
    if !annotations.is_empty() {
        m.insert("annotations".into(), Value::Object(annotations));
    }
    if !finalizers.is_empty() {
        m.insert("finalizers".into(), Value::Array(finalizers));
    }
    Ok(Value::Object(m))
}

fn name_ref(b: &[u8]) -> Result<Value, String> {
    let mut r = Reader::new(b);
    let mut out = json!({});
    while let Some((f, val)) = r.next()? {
        if let (1, Field::Bytes(x)) = (f, val) {
            out["name"] = json!(string(x)?);
        }
    }
    Ok(out)
}

/// Decodes a `k8s\0`-prefixed protobuf body of a supported kind to JSON.
pub(crate) fn decode(body: &[u8]) -> Result<Value, String> {
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or("missing the k8s protobuf magic prefix")?;
    let mut r = Reader::new(rest);
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    while let Some((f, val)) = r.next()? {
        match (f, val) {
            (1, Field::Bytes(tm)) => {
                let mut t = Reader::new(tm);
                while let Some((tf, tv)) = t.next()? {
                    match (tf, tv) {
                        (1, Field::Bytes(x)) => api_version = string(x)?,
                        (2, Field::Bytes(x)) => kind = string(x)?,
                        _ => {}
                    }
                }
            }
            (2, Field::Bytes(x)) => raw = x,
            _ => {}
        }
    }
    let mut obj = Map::new();
    obj.insert("apiVersion".into(), json!(api_version));
    obj.insert("kind".into(), json!(kind));
    if api_version == "authorization.k8s.io/v1" {
        // Access reviews are always allowed; what they ask is not needed.
        obj.insert("metadata".into(), json!({}));
        return Ok(Value::Object(obj));
    }
    let supported = matches!(
        (api_version.as_str(), kind.as_str()),
        (
            "v1",
            "Namespace" | "ConfigMap" | "Secret" | "ServiceAccount"
        )
    );
    if !supported {
        return Err(format!(
            "protobuf request bodies are only understood for v1 Namespace, ConfigMap, Secret and ServiceAccount, not {api_version} {kind}; send JSON instead (for example `kubectl create ... --dry-run=client -o yaml | kubectl apply -f -`)"
        ));
    }
    let mut r = Reader::new(raw);
    let mut data = Map::new();
    let mut binary = Map::new();
    let mut string_data = Map::new();
    let mut image_pull = Vec::new();
    while let Some((f, val)) = r.next()? {
        match (kind.as_str(), f, val) {
            (_, 1, Field::Bytes(x)) => {
                obj.insert("metadata".into(), object_meta(x)?);
            }
            ("ConfigMap", 2, Field::Bytes(x)) => {
                let (k, v) = map_entry(x, false)?;
                data.insert(k, v);
            }
            ("ConfigMap", 3, Field::Bytes(x)) => {
                let (k, v) = map_entry(x, true)?;
                binary.insert(k, v);
            }
            ("ConfigMap", 4, Field::Varint(v)) | ("Secret", 5, Field::Varint(v)) => {
                obj.insert("immutable".into(), json!(v != 0));
            }
            ("Secret", 2, Field::Bytes(x)) => {
                let (k, v) = map_entry(x, true)?;
                data.insert(k, v);
            }
            ("Secret", 3, Field::Bytes(x)) => {
                obj.insert("type".into(), json!(string(x)?));
            }
            ("Secret", 4, Field::Bytes(x)) => {
                let (k, v) = map_entry(x, false)?;
                string_data.insert(k, v);
            }
            ("Namespace", 2, Field::Bytes(x)) => {
                let mut s = Reader::new(x);
                let mut fins = Vec::new();
                while let Some((sf, sv)) = s.next()? {
                    if let (1, Field::Bytes(y)) = (sf, sv) {
                        fins.push(json!(string(y)?));
                    }
                }
                obj.insert("spec".into(), json!({"finalizers": fins}));
            }
            ("ServiceAccount", 3, Field::Bytes(x)) => image_pull.push(name_ref(x)?),
            ("ServiceAccount", 4, Field::Varint(v)) => {
                obj.insert("automountServiceAccountToken".into(), json!(v != 0));
            }
            _ => {}
        }
    }
    if !data.is_empty() {
        obj.insert("data".into(), Value::Object(data));
    }
    if !binary.is_empty() {
        obj.insert("binaryData".into(), Value::Object(binary));
    }
    if !string_data.is_empty() {
        obj.insert("stringData".into(), Value::Object(string_data));
    }
    if !image_pull.is_empty() {
        obj.insert("imagePullSecrets".into(), Value::Array(image_pull));
    }
    Ok(Value::Object(obj))
}

/// Decodes a protobuf `DeleteOptions` (client-go's typed clients send it
/// that way) into its JSON form.
pub(crate) fn decode_delete_options(body: &[u8]) -> Result<Value, String> {
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or("missing the k8s protobuf magic prefix")?;
    let mut r = Reader::new(rest);
    let mut raw = &[][..];
    while let Some((f, val)) = r.next()? {
        if let (2, Field::Bytes(x)) = (f, val) {
            raw = x;
        }
    }
    let mut out = Map::new();
    let mut r = Reader::new(raw);
    let mut dry = Vec::new();
    while let Some((f, val)) = r.next()? {
        match (f, val) {
            (1, Field::Varint(v)) => {
                out.insert("gracePeriodSeconds".into(), json!(v as i64));
            }
            (2, Field::Bytes(x)) => {
                let mut p = Reader::new(x);
                let mut pre = Map::new();
                while let Some((pf, pv)) = p.next()? {
                    match (pf, pv) {
                        (1, Field::Bytes(y)) => {
                            pre.insert("uid".into(), json!(string(y)?));
                        }
                        (2, Field::Bytes(y)) => {
                            pre.insert("resourceVersion".into(), json!(string(y)?));
                        }
                        _ => {}
                    }
                }
                out.insert("preconditions".into(), Value::Object(pre));
            }
            (3, Field::Varint(v)) => {
                out.insert("orphanDependents".into(), json!(v != 0));
            }
            (4, Field::Bytes(x)) => {
                out.insert("propagationPolicy".into(), json!(string(x)?));
            }
            (5, Field::Bytes(x)) => dry.push(json!(string(x)?)),
            _ => {}
        }
    }
    if !dry.is_empty() {
        out.insert("dryRun".into(), Value::Array(dry));
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(n: u8, b: &[u8]) -> Vec<u8> {
        let mut v = vec![(n << 3) | 2, b.len() as u8];
        v.extend_from_slice(b);
        v
    }

    #[test]
    fn configmap() {
        let meta = [
            field(1, b"cm"),
            field(11, &[field(1, b"a"), field(2, b"b")].concat()),
        ]
        .concat();
        let raw = [
            field(1, &meta),
            field(2, &[field(1, b"k"), field(2, b"v")].concat()),
        ]
        .concat();
        let tm = [field(1, b"v1"), field(2, b"ConfigMap")].concat();
        let body = [b"k8s\0".to_vec(), field(1, &tm), field(2, &raw)].concat();
        let v = decode(&body).unwrap();
        assert_eq!(
            v,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "labels": {"a": "b"}}, "data": {"k": "v"}})
        );
        assert!(decode(b"k8s\0\x0a\x05").is_err());
        assert!(decode(b"{}").is_err());
    }
}
