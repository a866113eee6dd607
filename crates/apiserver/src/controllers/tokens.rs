//! The token controller: fills each new `kubernetes.io/service-account-token`
//! Secret with a token for its ServiceAccount (and the namespace and CA
//! clients need), as kube-controller-manager's does.

use super::{Change, Changes};
use crate::http::auth::{SA_NAME, SA_TOKEN_TYPE, SA_UID};
use crate::object::{self, Target, WriteOpts};
use crate::storage::{EventType, Stored};
use crate::App;
use serde_json::{json, Value};
use std::sync::Arc;

/// Runs until shutdown, filling token Secrets as they are written.
pub(super) async fn run(app: Arc<App>, mut changes: Changes) {
    while let Some(change) = changes.next().await {
        match change {
            Change::Event(ev) if ev.kind != EventType::Deleted => fill(&app, &ev.key, &ev.object),
            Change::Event(_) => {}
            Change::Listed(all) => {
                for (key, obj) in &all {
                    fill(&app, key, obj);
                }
            }
        }
    }
}

fn fill(app: &App, key: &str, stored: &Stored) {
    // Release Secrets are large and frequent: only a token Secret's JSON
    // names the type, so the others are never parsed.
    if !key.starts_with("/secrets/") || !stored.json().contains(SA_TOKEN_TYPE) {
        return;
    }
    let Some(filled) = populate(app, &stored.value()) else {
        return;
    };
    let Some(rt) = app.registry.find("", "v1", "secrets") else {
        return;
    };
    let opts = WriteOpts {
        manager: "kube-controller-manager".into(),
        ..Default::default()
    };
    // `filled` carries the resourceVersion it was made from: a Secret
    // written since conflicts here and comes back on the stream.
    match object::modify(app, &rt, key, Target::Main, &opts, true, move |_| {
        Ok(filled)
    }) {
        Ok(_) => {}
        Err(e) if matches!(e.code, 404 | 409) => {
            tracing::debug!("token of Secret {key} not filled: {e}");
        }
        Err(e) => tracing::warn!("cannot fill the token of Secret {key}: {e}"),
    }
}

/// The Secret with its token filled in, when it is a token Secret without
/// one whose ServiceAccount exists.
fn populate(app: &App, secret: &Value) -> Option<Value> {
    if secret.get("type").and_then(Value::as_str) != Some(SA_TOKEN_TYPE) {
        return None;
    }
    if secret.pointer("/data/token").is_some() {
        return None;
    }
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let ns = secret.pointer("/metadata/namespace")?.as_str()?.to_string();
    let sa = secret
        .pointer("/metadata/annotations")?
        .get(SA_NAME)?
        .as_str()?
        .to_string();
    let sa_obj = app.store.get(&format!("/serviceaccounts/{ns}/{sa}"))?;
    let uid = sa_obj
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let token = app.auth.issue(&ns, &sa, &uid);
    let mut s = secret.clone();
    s["data"]["token"] = json!(b64(&token));
    s["data"]["namespace"] = json!(b64(&ns));
    s["data"]["ca.crt"] = json!(b64(app.ca_pem.as_deref().unwrap_or_default()));
    s["metadata"]["annotations"][SA_UID] = json!(uid);
    Some(s)
}
