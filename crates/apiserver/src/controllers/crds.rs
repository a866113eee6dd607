//! The establishing controller: kube-apiserver serves a new CRD's kinds only once
//! its `Established` condition is set, a moment after the create (until then a
//! request for them answers 404 and discovery does not list them). Clients that
//! create custom resources right after their CRD must wait for it, as `helm`,
//! `kubectl wait --for condition=established` and rudder's own install do; this
//! controller makes the embedded server take that moment too, so a client that
//! does not wait fails here as it would on a real cluster.

use super::{Change, Changes};
use crate::object::{self, admission, Target, WriteOpts};
use crate::storage::EventType;
use crate::App;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

const CRDS: &str = "apiextensions.k8s.io/customresourcedefinitions/";

/// How long a new CRD waits to be established: kube-apiserver takes from a few
/// milliseconds to about a second, depending on its load.
const ESTABLISH_AFTER: Duration = Duration::from_millis(150);

/// Runs until shutdown, establishing each CRD a moment after it is stored.
pub(super) async fn run(app: Arc<App>, mut changes: Changes) {
    while let Some(change) = changes.next().await {
        let mut waiting = BTreeSet::new();
        match change {
            Change::Event(ev) if ev.kind != EventType::Deleted && ev.key.starts_with(CRDS) => {
                if !admission::crd_established(&ev.object.value()) {
                    waiting.insert(ev.key.clone());
                }
            }
            Change::Event(_) => {}
            Change::Listed(all) => {
                for (key, obj) in &all {
                    if key.starts_with(CRDS) && !admission::crd_established(&obj.value()) {
                        waiting.insert(key.clone());
                    }
                }
            }
        }
        if waiting.is_empty() {
            continue;
        }
        if !changes.idle(ESTABLISH_AFTER).await {
            return;
        }
        for key in waiting {
            establish(&app, &key);
        }
    }
}

fn establish(app: &App, key: &str) {
    let Some(rt) = app
        .registry
        .find("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    else {
        return;
    };
    let opts = WriteOpts {
        manager: "kube-apiserver".into(),
        ..Default::default()
    };
    let res = object::modify(app, &rt, key, Target::Status, &opts, true, |cur| {
        let mut crd = cur.clone();
        admission::establish_crd(&mut crd);
        Ok(crd)
    });
    match res {
        Ok(_) => {}
        Err(e) if matches!(e.code, 404 | 409) => {
            tracing::debug!("CRD {key} not established: {e}");
        }
        Err(e) => tracing::warn!("cannot establish CRD {key}: {e}"),
    }
}
