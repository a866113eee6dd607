//! The reconciler's decisions without an API server: a fake [`ActionClient`] keeps the
//! release's history in memory, and a fake API answers the CR's finalizer and status
//! patches and the Events (recording what was asked), so each test says what a
//! reconcile did with the release and what it told the CR.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use action::{ActionOptions, Installed, ObjectRef, RepairReport, UninstallOptions, UpgradeDiff};
use async_trait::async_trait;
use chart::loader::Chart;
use chart::values::Values;
use http::{Method, Request, Response, StatusCode};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::client::Body;
use kube::Client;
use release::record::{Info, Release, Status};
use release::RecordMeta;
use serde_json::{json, Value};

use super::timing::{IN_PROGRESS_RETRY, RELEASE_BACKOFF};
use super::*;
use crate::cr::CustomResource;
use crate::ActionClient;

const NS: &str = "default";
const MANIFEST: &str = "---\n# Source: demo/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-cfg\n";

/// The release actions, over a history kept in memory.
#[derive(Default)]
struct FakeActions {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    history: Vec<RecordMeta>,
    /// The verbs called, in order.
    calls: Vec<&'static str>,
    /// Verbs that fail; with `true` they write a failed revision first, as an action
    /// that got past its checks does.
    fail: HashMap<&'static str, bool>,
    /// Install finds this many live objects of a release without records.
    adopt: Option<usize>,
    diff_changed: bool,
    /// Another action holds the release: recovery finds nothing to do.
    locked: bool,
    repaired: Vec<ObjectRef>,
    /// What repair finds not ready.
    not_ready: Vec<String>,
    /// The chart name decoding a record finds.
    chart: Option<String>,
    /// The lookups digest a diff reports.
    lookups: Option<String>,
    /// What each `leftovers` call finds, in turn (then nothing).
    leftovers: Vec<Vec<ObjectRef>>,
    /// Upgrades fail rendering their candidate, writing nothing.
    render_fails: bool,
    /// When the revisions written were deployed.
    deployed_at: Option<release::Time>,
    /// The options of the last install, upgrade or rollback.
    last_opts: Option<ActionOptions>,
}

/// A record of the demo chart, as rudder labels them.
fn meta(version: i64, status: Status, mut labels: BTreeMap<String, String>) -> RecordMeta {
    labels
        .entry(ann::CHART_LABEL.to_string())
        .or_insert_with(|| "demo".to_string());
    bare_meta(version, status, labels)
}

/// A record with exactly `labels` (Helm's, or an older rudder's).
fn bare_meta(version: i64, status: Status, labels: BTreeMap<String, String>) -> RecordMeta {
    RecordMeta {
        key: format!("sh.helm.release.v1.app.v{version}"),
        name: "app".into(),
        version,
        status,
        labels,
        ..RecordMeta::default()
    }
}

fn release_of(m: &RecordMeta, deployed_at: Option<release::Time>) -> Release {
    Release {
        name: m.name.clone(),
        namespace: NS.into(),
        version: m.version,
        info: Some(Info {
            status: Some(m.status.clone()),
            notes: "the notes".into(),
            last_deployed: deployed_at,
            ..Info::default()
        }),
        labels: m.labels.clone(),
        manifest: MANIFEST.into(),
        ..Release::default()
    }
}

/// Labels as an action writes them on revision `version`: `null` removes one.
fn written(
    base: &BTreeMap<String, String>,
    opts: &ActionOptions,
    version: i64,
) -> BTreeMap<String, String> {
    let mut out = base.clone();
    if let Some(label) = &opts.revision_label {
        out.insert(label.clone(), version.to_string());
    }
    for (k, v) in &opts.labels {
        if v == "null" {
            out.remove(k);
        } else {
            out.insert(k.clone(), v.clone());
        }
    }
    out
}

fn failure(verb: &str) -> action::Error {
    action::Error::NotReady {
        release: "app".into(),
        timeout: std::time::Duration::from_secs(1),
        not_ready: vec![format!("{verb} failed on purpose")],
    }
}

impl FakeActions {
    fn with_history(history: Vec<RecordMeta>) -> Arc<FakeActions> {
        let fake = FakeActions::default();
        fake.lock().history = history;
        Arc::new(fake)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn calls(&self) -> Vec<&'static str> {
        self.lock().calls.clone()
    }

    /// `verb` was called: its failure if one is set up, after writing a failed record
    /// with `opts`' labels when asked to.
    fn called(&self, verb: &'static str, opts: Option<&ActionOptions>) -> action::Result<()> {
        let mut s = self.lock();
        s.calls.push(verb);
        if let Some(opts) = opts {
            s.last_opts = Some(opts.clone());
        }
        match s.fail.get(verb).copied() {
            None => Ok(()),
            Some(writes) => {
                if let (true, Some(opts)) = (writes, opts) {
                    let version = s.history.last().map_or(1, |m| m.version + 1);
                    let labels = written(&BTreeMap::new(), opts, version);
                    s.history.push(meta(version, Status::Failed, labels));
                }
                Err(failure(verb))
            }
        }
    }

    /// Writes a deployed revision with `opts`' labels, superseding the deployed one.
    fn deploy(&self, opts: &ActionOptions, inherit: bool) -> Release {
        let mut s = self.lock();
        let mut base = BTreeMap::new();
        for m in s
            .history
            .iter_mut()
            .filter(|m| m.status == Status::Deployed)
        {
            m.status = Status::Superseded;
            if inherit {
                base = m.labels.clone();
            }
        }
        let version = s.history.last().map_or(1, |m| m.version + 1);
        let m = meta(version, Status::Deployed, written(&base, opts, version));
        s.history.push(m.clone());
        release_of(&m, s.deployed_at)
    }
}

#[async_trait]
impl ActionClient for FakeActions {
    async fn history(&self, _ns: &str, _name: &str) -> Result<Vec<RecordMeta>, release::Error> {
        let mut s = self.lock();
        s.calls.push("history");
        Ok(s.history.clone())
    }

    async fn install(
        &self,
        _: &Arc<Chart>,
        _: Values,
        opts: ActionOptions,
    ) -> action::Result<Installed> {
        self.called("install", Some(&opts))?;
        let adopted = self.lock().adopt;
        Ok(Installed {
            release: self.deploy(&opts, false),
            adopted,
        })
    }

    async fn upgrade(
        &self,
        _: &Arc<Chart>,
        _: Values,
        opts: ActionOptions,
    ) -> action::Result<Release> {
        if self.lock().render_fails {
            self.called("upgrade", None)?;
            return Err(action::Error::RenderAborted {
                release: opts.name.clone(),
                message: "template: demo/templates/cm.yaml:3:7: executing \"demo/templates/cm.yaml\" at <.Values.x.y>: nil pointer evaluating interface {}.y".into(),
            });
        }
        self.called("upgrade", Some(&opts))?;
        let mut rel = self.deploy(&opts, true);
        let lookups = self.lock().lookups.clone();
        if let (Some(l), Some(label)) = (lookups, &opts.lookups_label) {
            let mut s = self.lock();
            if let Some(m) = s.history.last_mut() {
                m.labels.insert(label.clone(), l);
                rel.labels = m.labels.clone();
            }
        }
        Ok(rel)
    }

    async fn diff_upgrade(
        &self,
        _: &Arc<Chart>,
        _: Values,
        _: ActionOptions,
    ) -> action::Result<UpgradeDiff> {
        self.called("diff", None)?;
        let s = self.lock();
        Ok(UpgradeDiff {
            changed: s.diff_changed,
            lookups: s.lookups.clone(),
            ..UpgradeDiff::default()
        })
    }

    async fn rollback(&self, _to: i64, opts: ActionOptions) -> action::Result<Release> {
        self.called("rollback", None)?;
        Ok(self.deploy(&opts, false))
    }

    async fn repair(
        &self,
        opts: ActionOptions,
        labels: BTreeMap<String, String>,
    ) -> action::Result<(Release, RepairReport)> {
        self.called("repair", None)?;
        let mut s = self.lock();
        let repaired = s.repaired.clone();
        let not_ready = s.not_ready.clone();
        let deployed_at = s.deployed_at;
        let deployed = s
            .history
            .iter_mut()
            .filter(|m| m.status == Status::Deployed)
            .max_by_key(|m| m.version)
            .ok_or(action::Error::NotDeployed {
                release: opts.name.clone(),
            })?;
        deployed.labels.extend(labels);
        if let Some(label) = &opts.revision_label {
            deployed
                .labels
                .insert(label.clone(), deployed.version.to_string());
        }
        Ok((
            release_of(deployed, deployed_at),
            RepairReport {
                repaired,
                not_ready,
            },
        ))
    }

    async fn recover(&self, _opts: ActionOptions) -> action::Result<Option<Release>> {
        self.called("recover", None)?;
        let mut s = self.lock();
        if s.locked {
            return Ok(None);
        }
        let Some(newest) = s.history.last_mut().filter(|m| m.status.is_pending()) else {
            return Ok(None);
        };
        newest.status = Status::Failed;
        Ok(Some(release_of(newest, None)))
    }

    async fn uninstall(&self, opts: UninstallOptions) -> action::Result<Release> {
        self.called("uninstall", None)?;
        let mut s = self.lock();
        let last = s
            .history
            .last()
            .cloned()
            .ok_or(action::Error::NotDeployed {
                release: opts.name.clone(),
            })?;
        s.history.clear();
        Ok(release_of(&last, None))
    }

    async fn release_chart(
        &self,
        _ns: &str,
        _name: &str,
    ) -> Result<Option<String>, release::Error> {
        let mut s = self.lock();
        s.calls.push("release_chart");
        Ok(s.chart.clone())
    }

    async fn prune(&self, _ns: &str, name: &str, max: usize) -> action::Result<Vec<i64>> {
        self.called("prune", None)?;
        let mut s = self.lock();
        if s.locked {
            return Err(action::Error::Locked {
                release: name.into(),
                holder: "another".into(),
                since: "now".into(),
                retry_after: "10s".into(),
            });
        }
        let doomed = release::storage::prunable(&s.history, max, jiff::Timestamp::now());
        s.history.retain(|m| !doomed.contains(&m.version));
        Ok(doomed)
    }

    async fn leftovers(
        &self,
        _opts: UninstallOptions,
        _manifest: &str,
    ) -> action::Result<Vec<ObjectRef>> {
        self.called("leftovers", None)?;
        let mut s = self.lock();
        Ok(if s.leftovers.is_empty() {
            Vec::new()
        } else {
            s.leftovers.remove(0)
        })
    }
}

/// The API as far as the reconciler talks to it itself: the CR (finalizers, status),
/// Events, and the ConfigMap list of the migration check.
struct FakeApi {
    cr: Value,
    /// The CRD has no status subresource: `/status` is not found.
    no_status: bool,
    /// Every request: method, path and JSON body.
    requests: Mutex<Vec<(Method, String, Value)>>,
}

impl FakeApi {
    fn new(cr: &DynamicObject) -> Arc<FakeApi> {
        Arc::new(FakeApi {
            cr: serde_json::to_value(cr).unwrap_or_default(),
            no_status: false,
            requests: Mutex::default(),
        })
    }

    /// The API of a CRD without a status subresource.
    fn without_status_subresource(cr: &DynamicObject) -> Arc<FakeApi> {
        Arc::new(FakeApi {
            cr: serde_json::to_value(cr).unwrap_or_default(),
            no_status: true,
            requests: Mutex::default(),
        })
    }

    fn answer(&self, method: &Method, path: &str, body: Value) -> (StatusCode, Value) {
        let list = json!({"kind": "List", "apiVersion": "v1", "metadata": {}, "items": []});
        let answer = match (method, path) {
            (&Method::GET, p) if p.ends_with("/configmaps") => (StatusCode::OK, list),
            (&Method::POST, p) if p.ends_with("/events") => (StatusCode::CREATED, body.clone()),
            (&Method::PATCH, p) if p.contains("/events/") => (StatusCode::OK, body.clone()),
            (&Method::PATCH, p) if self.no_status && p.ends_with("/status") => (
                StatusCode::NOT_FOUND,
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                    "reason": "NotFound", "code": 404, "message": path}),
            ),
            (&Method::PATCH, p) if p.contains("/demos/") => (StatusCode::OK, self.cr.clone()),
            _ => (
                StatusCode::NOT_FOUND,
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                    "reason": "NotFound", "code": 404, "message": path}),
            ),
        };
        let mut seen = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        seen.push((method.clone(), path.to_string(), body));
        answer
    }

    fn client(self: &Arc<FakeApi>) -> Client {
        let api = Arc::clone(self);
        let svc = tower::service_fn(move |req: Request<Body>| {
            let api = Arc::clone(&api);
            async move {
                let (method, path) = (req.method().clone(), req.uri().path().to_string());
                let bytes = http_body_util::BodyExt::collect(req.into_body())
                    .await
                    .map(|b| b.to_bytes().to_vec())
                    .unwrap_or_default();
                let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                let (code, answer) = api.answer(&method, &path, body);
                Response::builder()
                    .status(code)
                    .header("content-type", "application/json")
                    .body(Body::from(serde_json::to_vec(&answer).unwrap_or_default()))
                    .map_err(|e| kube::Error::Service(e.into()))
            }
        });
        Client::new(svc, NS)
    }

    fn requests(&self) -> Vec<(Method, String, Value)> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The status as last written.
    fn status(&self) -> Value {
        self.requests()
            .into_iter()
            .rev()
            .find(|(m, p, _)| m == Method::PATCH && p.ends_with("/status"))
            .map(|(_, _, b)| b["status"].clone())
            .unwrap_or(Value::Null)
    }

    /// The `(type, reason)` of the condition of `type_` as last written.
    fn condition(&self, type_: &str) -> Option<(String, String, String)> {
        let status = self.status();
        let c = status["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == type_)?;
        let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
        Some((s("status"), s("reason"), s("message")))
    }

    /// `(type, reason, note)` of every Event.
    fn events(&self) -> Vec<(String, String, String)> {
        self.requests()
            .into_iter()
            .filter(|(m, p, _)| m == Method::POST && p.ends_with("/events"))
            .map(|(_, _, e)| {
                let s = |k: &str| e[k].as_str().unwrap_or_default().to_string();
                (s("type"), s("reason"), s("message"))
            })
            .collect()
    }

    /// The finalizer lists the reconciler patched the CR with.
    fn finalizer_patches(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|(m, p, _)| m == Method::PATCH && p.ends_with("/demos/app"))
            .map(|(_, _, b)| b["metadata"]["finalizers"].clone())
            .collect()
    }
}

fn resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("test.rudder.dev", "v1", "Demo"),
        "demos",
    )
}

fn demo_chart() -> Chart {
    let mut chart = Chart::default();
    chart.metadata.name = "demo".into();
    chart.metadata.version = "0.1.0".into();
    chart
}

fn cr(spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "test.rudder.dev/v1", "kind": "Demo",
        "metadata": {"name": "app", "namespace": NS, "uid": "u-1", "resourceVersion": "7",
            "generation": 1},
        "spec": spec,
    }))
    .unwrap_or_else(|e| panic!("test CR: {e}"))
}

fn spec_values(spec: &Value) -> Values {
    spec.as_object().cloned().unwrap_or_default()
}

/// The inputs digest of the demo chart with `spec`.
fn digest_of(spec: &Value) -> String {
    digest::inputs_digest(&demo_chart(), &spec_values(spec))
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

struct Setup {
    watch: Watch,
    suppress: bool,
    chart: Chart,
}

impl Default for Setup {
    fn default() -> Setup {
        Setup {
            watch: Watch {
                group: "test.rudder.dev".into(),
                version: "v1".into(),
                kind: "Demo".into(),
                ..Watch::default()
            },
            suppress: false,
            chart: demo_chart(),
        }
    }
}

impl Setup {
    async fn reconcile(
        self,
        actions: &Arc<FakeActions>,
        cr: DynamicObject,
    ) -> (Result<Outcome, ReconcileError>, Arc<FakeApi>) {
        let api = FakeApi::new(&cr);
        self.reconcile_with(actions, api, cr.into()).await
    }

    /// Reconciles `cr` against `api` (which answers writes to the CR as it was made).
    async fn reconcile_with(
        self,
        actions: &Arc<FakeActions>,
        api: Arc<FakeApi>,
        cr: CustomResource,
    ) -> (Result<Outcome, ReconcileError>, Arc<FakeApi>) {
        let ctx = Context::new(
            api.client(),
            Arc::new(self.watch),
            Arc::new(self.chart),
            resource(),
        )
        .expect("context")
        .with_actions(actions.clone())
        .with_suppress_override_values(self.suppress);
        let result = reconcile(Arc::new(cr), Arc::new(ctx)).await;
        (result, api)
    }
}

async fn reconcile_once(
    actions: &Arc<FakeActions>,
    cr: DynamicObject,
) -> (Result<Outcome, ReconcileError>, Arc<FakeApi>) {
    Setup::default().reconcile(actions, cr).await
}

mod go_parity;
mod history;
mod kstatus;

#[tokio::test]
async fn a_new_cr_is_installed_with_its_digest() {
    let spec = json!({"greeting": "hi"});
    let actions = FakeActions::with_history(Vec::new());
    let (result, api) = reconcile_once(&actions, cr(spec.clone())).await;
    let outcome = result.expect("installed");
    assert_eq!(actions.calls(), ["history", "install"]);
    let history = actions.lock().history.clone();
    assert_eq!(history.len(), 1);
    assert_eq!(
        history[0].labels.get(digest::LABEL),
        Some(&digest_of(&spec))
    );
    assert_eq!(
        history[0].labels.get(ATTEMPT_LABEL).map(String::as_str),
        Some("1")
    );
    assert!(!history[0].labels.contains_key(ROLLBACK_OF_LABEL));
    // The finalizer went on before the release was made.
    assert_eq!(
        api.finalizer_patches(),
        [json!(["helm.sdk.operatorframework.io/uninstall-release"])]
    );
    let (status, reason, message) = api.condition(st::DEPLOYED).expect("Deployed");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "InstallSuccessful")
    );
    assert_eq!(message, "the notes");
    assert_eq!(api.status()["deployedRelease"]["manifest"], MANIFEST);
    assert!(api
        .events()
        .iter()
        .any(|(t, r, _)| t == "Normal" && r == "InstallSuccessful"));
    assert_eq!(outcome.dependents.len(), 1, "{:?}", outcome.dependents);
    assert_eq!(outcome.dependents[0].kind, "ConfigMap");
}

#[tokio::test]
async fn unchanged_inputs_repair_reading_the_history_once() {
    let spec = json!({"greeting": "hi"});
    let d = digest_of(&spec);
    let actions = FakeActions::with_history(vec![meta(
        3,
        Status::Deployed,
        labels(&[(digest::LABEL, &d)]),
    )]);
    let (result, api) = reconcile_once(&actions, cr(spec)).await;
    result.expect("repaired");
    // One label-only history read, one repair (which returns the record it read).
    assert_eq!(actions.calls(), ["history", "repair"]);
    let (_, reason, _) = api.condition(st::DEPLOYED).expect("Deployed");
    assert_eq!(reason, "UpgradeSuccessful", "revision 3 is not the first");
    assert!(
        api.events().is_empty(),
        "nothing drifted: {:?}",
        api.events()
    );
    assert_eq!(actions.lock().history.len(), 1, "no new revision");

    // Drift is reported.
    actions.lock().repaired = vec![ObjectRef {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        namespace: Some(NS.into()),
        name: "app-cfg".into(),
    }];
    let (result, api) = reconcile_once(&actions, cr(json!({"greeting": "hi"}))).await;
    result.expect("repaired");
    let events = api.events();
    assert!(
        events
            .iter()
            .any(|(_, r, n)| r == "Repaired" && n.contains("ConfigMap default/app-cfg")),
        "{events:?}"
    );
}

#[tokio::test]
async fn changed_inputs_upgrade() {
    let actions = FakeActions::with_history(vec![meta(
        1,
        Status::Deployed,
        labels(&[(digest::LABEL, "old"), ("team", "a")]),
    )]);
    let spec = json!({"greeting": "new"});
    let (result, api) = reconcile_once(&actions, cr(spec.clone())).await;
    result.expect("upgraded");
    assert_eq!(actions.calls(), ["history", "upgrade"]);
    let history = actions.lock().history.clone();
    assert_eq!(history[0].status, Status::Superseded);
    assert_eq!(
        history[1].labels.get(digest::LABEL),
        Some(&digest_of(&spec))
    );
    assert_eq!(history[1].labels.get("team").map(String::as_str), Some("a"));
    let (_, reason, _) = api.condition(st::DEPLOYED).expect("Deployed");
    assert_eq!(reason, "UpgradeSuccessful");
}

#[tokio::test]
async fn a_record_helm_made_is_stamped_when_its_render_matches() {
    let spec = json!({"greeting": "hi"});
    let actions = FakeActions::with_history(vec![meta(1, Status::Deployed, BTreeMap::new())]);
    let (result, _) = reconcile_once(&actions, cr(spec.clone())).await;
    result.expect("repaired");
    assert_eq!(actions.calls(), ["history", "diff", "repair"]);
    let history = actions.lock().history.clone();
    assert_eq!(history.len(), 1, "no new revision");
    assert_eq!(
        history[0].labels.get(digest::LABEL),
        Some(&digest_of(&spec))
    );

    // From then on the digest decides, without rendering.
    let (result, _) = reconcile_once(&actions, cr(spec)).await;
    result.expect("repaired");
    assert_eq!(
        actions.calls(),
        ["history", "diff", "repair", "history", "repair"]
    );

    // A different render upgrades.
    let actions = FakeActions::with_history(vec![meta(1, Status::Deployed, BTreeMap::new())]);
    actions.lock().diff_changed = true;
    let (result, _) = reconcile_once(&actions, cr(json!({"greeting": "hi"}))).await;
    result.expect("upgraded");
    assert_eq!(actions.calls(), ["history", "diff", "upgrade"]);
}

/// `helm rollback` of the CR's release copies the labels of the revision it rolls
/// back to: the operator sees a revision it did not write, upgrades to the CR's spec
/// once, and repairs from then on.
#[tokio::test]
async fn a_helm_rollback_of_the_crs_release_is_restored_once() {
    let spec = json!({"greeting": "new"});
    let own = |version: i64, status: Status, spec: &Value| {
        let v = version.to_string();
        meta(
            version,
            status,
            labels(&[(digest::LABEL, &digest_of(spec)), (REVISION_LABEL, &v)]),
        )
    };
    let old = json!({"greeting": "old"});
    let mut rolled_back = own(1, Status::Deployed, &old);
    rolled_back.version = 3;
    let actions = FakeActions::with_history(vec![
        own(1, Status::Superseded, &old),
        own(2, Status::Superseded, &spec),
        rolled_back,
    ]);
    actions.lock().diff_changed = true;
    let (result, _) = reconcile_once(&actions, cr(spec.clone())).await;
    result.expect("restored");
    assert_eq!(actions.calls(), ["history", "diff", "upgrade"]);
    let newest = actions.lock().history.last().cloned().expect("a record");
    assert_eq!(newest.version, 4);
    assert_eq!(
        newest.labels.get(REVISION_LABEL).map(String::as_str),
        Some("4")
    );
    for _ in 0..3 {
        let (result, _) = reconcile_once(&actions, cr(spec.clone())).await;
        result.expect("repaired");
    }
    assert_eq!(actions.lock().history.len(), 4, "no further revision");
    assert_eq!(
        &actions.calls()[3..],
        ["history", "repair", "history", "repair", "history", "repair"]
    );
}

#[tokio::test]
async fn failures_back_off_without_another_attempt() {
    let spec = json!({"greeting": "hi"});
    let now = unix_now().to_string();
    let actions = FakeActions::with_history(vec![meta(
        1,
        Status::Failed,
        labels(&[
            (digest::LABEL, &digest_of(&spec)),
            (ATTEMPT_LABEL, "3"),
            ("modifiedAt", &now),
        ]),
    )]);
    let (result, _) = reconcile_once(&actions, cr(spec)).await;
    let err = result.expect_err("backing off");
    assert!(
        matches!(err, ReconcileError::BackingOff { attempts: 3, .. }),
        "{err}"
    );
    let retry = err.requeue_after().expect("a delay");
    assert!(
        retry <= RELEASE_BACKOFF.delay(3) && retry.as_secs() >= 30,
        "{retry:?}"
    );
    assert_eq!(actions.calls(), ["history"], "no action while backing off");

    // New inputs are tried at once, as attempt 1.
    let (result, _) = reconcile_once(&actions, cr(json!({"greeting": "other"}))).await;
    result.expect("installed");
    let history = actions.lock().history.clone();
    assert_eq!(
        history[1].labels.get(ATTEMPT_LABEL).map(String::as_str),
        Some("1")
    );
}

#[tokio::test]
async fn a_failed_install_is_reported_with_its_backoff() {
    let actions = FakeActions::with_history(Vec::new());
    actions.lock().fail.insert("install", true);
    let (result, api) = reconcile_once(&actions, cr(json!({}))).await;
    let err = result.expect_err("install fails");
    assert!(
        matches!(
            err,
            ReconcileError::Action {
                action: "install",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(err.requeue_after(), Some(RELEASE_BACKOFF.delay(1)));
    let (status, reason, message) = api.condition(st::RELEASE_FAILED).expect("ReleaseFailed");
    assert_eq!((status.as_str(), reason.as_str()), ("True", "InstallError"));
    assert!(
        message.starts_with("failed to install release:"),
        "{message}"
    );
    assert!(api
        .events()
        .iter()
        .any(|(t, r, _)| t == "Warning" && r == "InstallError"));
    // Nothing uninstalls a failed install.
    assert_eq!(actions.calls(), ["history", "install"]);
}

#[tokio::test]
async fn a_failed_upgrade_that_wrote_a_revision_is_rolled_back() {
    let actions = FakeActions::with_history(vec![meta(
        1,
        Status::Deployed,
        labels(&[(digest::LABEL, "old")]),
    )]);
    actions.lock().fail.insert("upgrade", true);
    let spec = json!({"greeting": "broken"});
    let (result, api) = reconcile_once(&actions, cr(spec.clone())).await;
    result.expect_err("upgrade fails");
    assert_eq!(
        actions.calls(),
        ["history", "upgrade", "history", "rollback"]
    );
    let history = actions.lock().history.clone();
    let rollback = history.last().expect("rollback record");
    assert_eq!(
        rollback.labels.get(ROLLBACK_OF_LABEL),
        Some(&digest_of(&spec))
    );
    assert_eq!(
        rollback.labels.get(digest::LABEL).map(String::as_str),
        Some("old")
    );
    assert!(api.events().iter().any(|(_, r, _)| r == "RolledBack"));

    // Refused before writing anything: nothing to roll back.
    let actions = FakeActions::with_history(vec![meta(
        1,
        Status::Deployed,
        labels(&[(digest::LABEL, "old")]),
    )]);
    actions.lock().fail.insert("upgrade", false);
    let (result, _) = reconcile_once(&actions, cr(spec)).await;
    result.expect_err("upgrade fails");
    assert_eq!(actions.calls(), ["history", "upgrade", "history"]);
}

#[tokio::test]
async fn a_pending_leftover_is_recovered_then_decided_again() {
    let actions = FakeActions::with_history(vec![meta(1, Status::PendingInstall, BTreeMap::new())]);
    let (result, _) = reconcile_once(&actions, cr(json!({}))).await;
    result.expect("installed after recovery");
    assert_eq!(
        actions.calls(),
        ["history", "recover", "history", "install"]
    );
    let history = actions.lock().history.clone();
    assert_eq!(
        history.iter().map(|m| m.status.clone()).collect::<Vec<_>>(),
        [Status::Failed, Status::Deployed]
    );

    // While a live action holds it, the reconcile waits.
    let actions = FakeActions::with_history(vec![meta(1, Status::PendingUpgrade, BTreeMap::new())]);
    actions.lock().locked = true;
    let (result, _) = reconcile_once(&actions, cr(json!({}))).await;
    let err = result.expect_err("in progress");
    assert!(
        matches!(err, ReconcileError::InProgress { version: 1, .. }),
        "{err}"
    );
    assert_eq!(err.requeue_after(), Some(IN_PROGRESS_RETRY));
    assert_eq!(actions.calls(), ["history", "recover"]);
}

#[tokio::test]
async fn lost_records_over_live_objects_are_adopted() {
    let actions = FakeActions::with_history(Vec::new());
    actions.lock().adopt = Some(2);
    let (result, api) = reconcile_once(&actions, cr(json!({}))).await;
    result.expect("adopted");
    assert_eq!(actions.calls(), ["history", "install"]);
    let events = api.events();
    assert!(events.iter().any(|(_, r, _)| r == "Adopted"), "{events:?}");
    assert!(
        !events.iter().any(|(_, r, _)| r == "InstallSuccessful"),
        "{events:?}"
    );
    let (_, reason, _) = api.condition(st::DEPLOYED).expect("Deployed");
    assert_eq!(reason, "InstallSuccessful", "revision 1");
}

#[tokio::test]
async fn deleting_the_cr_uninstalls_then_drops_the_finalizer() {
    let mut deleted = cr(json!({}));
    deleted.metadata.deletion_timestamp = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::now()),
    );
    deleted.metadata.finalizers = Some(vec![
        "helm.sdk.operatorframework.io/uninstall-release".into(),
        "other.example/keep".into(),
    ]);
    let actions = FakeActions::with_history(vec![meta(
        2,
        Status::Deployed,
        labels(&[(digest::LABEL, "d")]),
    )]);
    let (result, api) = reconcile_once(&actions, deleted.clone()).await;
    result.expect("uninstalled");
    assert_eq!(actions.calls(), ["history", "uninstall"]);
    assert_eq!(api.finalizer_patches(), [json!(["other.example/keep"])]);
    let (status, reason, _) = api.condition(st::DEPLOYED).expect("Deployed");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "UninstallSuccessful")
    );
    assert!(api
        .events()
        .iter()
        .any(|(_, r, n)| r == "UninstallSuccessful" && n.contains("revision 2")));

    // Without our finalizer there is nothing to do.
    deleted.metadata.finalizers = Some(vec!["other.example/keep".into()]);
    let actions = FakeActions::with_history(Vec::new());
    let (result, api) = reconcile_once(&actions, deleted).await;
    assert_eq!(result.expect("skipped"), Outcome::default());
    assert!(actions.calls().is_empty());
    assert!(api.requests().is_empty());
}

#[tokio::test]
async fn a_spec_nested_past_helms_limit_fails_the_install_says_how_deep_and_touches_no_release() {
    let levels = gocodec::depth::MAX_DEPTH + 1;
    let text = format!(
        r#"{{"metadata":{{"name":"app","namespace":"{NS}","uid":"u-1","resourceVersion":"7","generation":1}},"spec":{}{{}}{}}}"#,
        r#"{"a":"#.repeat(levels - 1),
        "}".repeat(levels - 1)
    );
    let deep: CustomResource = serde_json::from_str(&text).expect("the CR decodes");
    let actions = FakeActions::with_history(Vec::new());
    let (result, api) = Setup::default()
        .reconcile_with(&actions, FakeApi::new(&cr(json!({}))), deep)
        .await;
    let err = result.expect_err("values that cannot be read");
    assert!(matches!(err, ReconcileError::InvalidSpec { .. }), "{err}");
    let (status, reason, message) = api.condition(st::RELEASE_FAILED).expect("ReleaseFailed");
    assert_eq!((status.as_str(), reason.as_str()), ("True", "InstallError"));
    assert!(message.contains("at most 10000 levels"), "{message}");
    let events = api.events();
    assert!(
        events
            .iter()
            .any(|(t, r, m)| t == "Warning" && r == "InstallError" && m == &message),
        "{events:?}"
    );
    assert!(actions.calls().is_empty(), "{:?}", actions.calls());
}

#[tokio::test]
async fn unusable_inputs_are_irreconcilable_and_touch_no_release() {
    let actions = FakeActions::with_history(Vec::new());
    let (result, api) = reconcile_once(&actions, cr(json!("not a map"))).await;
    let err = result.expect_err("bad spec");
    assert!(matches!(err, ReconcileError::InvalidSpec { .. }), "{err}");
    let (status, reason, message) = api.condition(st::IRRECONCILABLE).expect("Irreconcilable");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "ReconcileError")
    );
    assert!(message.starts_with("spec must be an object"), "{message}");

    let mut bad_period = cr(json!({}));
    bad_period.metadata.annotations = Some(
        [(
            "helm.sdk.operatorframework.io/reconcile-period".to_string(),
            "soon".to_string(),
        )]
        .into(),
    );
    let (result, api) = reconcile_once(&actions, bad_period).await;
    let err = result.expect_err("bad annotation");
    assert!(matches!(err, ReconcileError::Annotation { .. }), "{err}");
    assert!(api.condition(st::IRRECONCILABLE).is_some());
    assert!(actions.calls().is_empty(), "{:?}", actions.calls());

    // A cluster-scoped CR cannot hold its release's records.
    let mut cluster_scoped = cr(json!({}));
    cluster_scoped.metadata.namespace = None;
    let (result, _) = reconcile_once(&actions, cluster_scoped).await;
    assert!(matches!(result, Err(ReconcileError::NoNamespace { .. })));
}

#[tokio::test]
async fn override_events_show_values_unless_suppressed() {
    for (suppress, shown) in [(false, "v2"), (true, "****")] {
        let mut setup = Setup {
            suppress,
            ..Setup::default()
        };
        setup
            .watch
            .override_values
            .insert("image.tag".into(), "v2".into());
        let actions = FakeActions::with_history(Vec::new());
        let (result, api) = setup.reconcile(&actions, cr(json!({}))).await;
        result.expect("installed");
        let note = format!(
            "Chart value \"image.tag\" overridden to \"{shown}\" by operator's watches.yaml"
        );
        let events = api.events();
        assert!(
            events
                .iter()
                .any(|(t, r, n)| t == "Warning" && r == "OverrideValuesInUse" && *n == note),
            "{events:?}"
        );
    }
}
