//! The release actions: install, upgrade, uninstall and rollback, each writing Helm's
//! release records (Secret driver in the release namespace) around the cluster changes
//! in Helm's order: record pending, CRDs, pre-hooks, objects, wait, post-hooks, record
//! final. Plus `repair`, `diff_upgrade`, `test` and crash recovery (`recover_pending`).
//!
//! Safety rules every action follows:
//! - it holds the release's Lease lock (see [`crate::lock`]) from start to end;
//! - it first turns a `pending-*`/`uninstalling` leftover of a crashed action into
//!   `failed` ("interrupted: ..."), never deleting anything for it;
//! - everything that can be checked (parsing, kinds, the caller's transform) is checked
//!   before the pending record is written, so a refused release leaves no trace;
//! - once the pending record exists, every error marks it `failed`;
//! - no failure path deletes objects, except `rollback_on_failure` on install, which
//!   uninstalls like Helm's `--atomic` but only deletes objects that install created.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use chart::loader::{Chart as LoadedChart, Values};
use chart::manifest::{INSTALL_ORDER, UNINSTALL_ORDER};
use chart::render::{render_chart, ReleaseInfo, RenderOptions, Rendered};
use kube::api::DynamicObject;
use kube::Client;
use release::record::{Release, Status};
use release::storage::DEFAULT_MAX_HISTORY;
use release::{SecretDriver, Storage, Time};

use crate::capabilities;
use crate::cluster::{
    check_live_ownership, condition, is_kept, ApplyOptions, Kube, Object, ObjectRef, Owner,
};
use crate::error::{Error, Result};
use crate::hooks;
use crate::lock::{self, ReleaseLock};
use crate::record::{chart_record, hook_record, manifest_documents, new_release, sort_by_kind};
use crate::wait;

/// Options of install, upgrade and rollback.
#[derive(Debug, Clone)]
pub struct ActionOptions {
    pub name: String,
    pub namespace: String,
    /// Adopt existing objects that belong to another release or to none.
    pub take_ownership: bool,
    /// How long to wait for each hook, CRD or deletion.
    pub timeout: Duration,
    /// Revisions kept in history (Helm's `--history-max`, default 10; 0 keeps all).
    pub max_history: usize,
    /// `.Capabilities.KubeVersion` (`--kube-version`). When this and `api_versions` are
    /// both `None`, install, upgrade and diff_upgrade discover the cluster's version and
    /// served APIs as Helm does; [`render`] alone uses Helm's defaults.
    pub kube_version: Option<String>,
    /// API versions added to Helm's defaults in `.Capabilities.APIVersions`
    /// (`--api-versions`); setting it (or `kube_version`) skips cluster discovery.
    pub api_versions: Option<Vec<String>>,
    /// Skip the release's hooks (`--no-hooks`).
    pub disable_hooks: bool,
    /// Replace objects that cannot be patched (`--force`).
    pub force: bool,
    /// The record's description instead of the default one (`--description`).
    pub description: Option<String>,
    /// Wait until the release's objects are ready, up to `timeout` (`--wait`).
    pub wait: bool,
    /// With `wait`, also wait for Jobs to complete (`--wait-for-jobs`).
    pub wait_for_jobs: bool,
    /// Undo a failed action (`--atomic` / `--rollback-on-failure`): a failed upgrade is
    /// rolled back to the previously deployed revision; a failed install is uninstalled
    /// (records purged, like Helm), deleting only the objects this install created.
    /// Implies `wait`, as in Helm.
    pub rollback_on_failure: bool,
    /// Custom labels written on the release record (`--labels`).
    pub labels: BTreeMap<String, String>,
    /// Called on every object before anything is written; an error refuses the action.
    pub transform: Option<Transform>,
    /// Reuse discovery results across actions (a controller's many releases);
    /// `None` discovers afresh for every action, as `helm` does.
    pub discovery: Option<Arc<capabilities::DiscoveryCache>>,
}

/// Changes (or refuses) each object of a release before it is applied: the operator
/// adds owner references here and enforces which namespaces a release may reach.
///
/// Called once per action for every manifest object and every hook (not for the
/// chart's `crds/`, which Helm never post-renders), after parsing and scope resolution
/// (`ObjectRef.namespace` is `None` for cluster-scoped kinds) and before anything is
/// written. The record keeps the chart's rendered manifest; rollback and repair run the
/// transform again on it. It may change the object's namespace or name.
#[derive(Clone)]
pub struct Transform(pub Arc<TransformFn>);

/// The function inside a [`Transform`]: `Err(message)` refuses the object.
pub type TransformFn =
    dyn Fn(&mut DynamicObject, &ObjectRef) -> std::result::Result<(), String> + Send + Sync;

impl std::fmt::Debug for Transform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Transform(..)")
    }
}

/// What [`repair`] re-applied.
#[derive(Debug, Clone, Default)]
pub struct RepairReport {
    /// Objects that were missing or differed from the deployed manifest.
    pub repaired: Vec<ObjectRef>,
}

/// What an upgrade would change ([`diff_upgrade`], `--dry-run`).
#[derive(Debug, Clone, Default)]
pub struct UpgradeDiff {
    pub changed: bool,
    pub current_manifest: String,
    pub new_manifest: String,
}

impl ActionOptions {
    pub fn new(name: impl Into<String>, namespace: impl Into<String>) -> ActionOptions {
        ActionOptions {
            name: name.into(),
            namespace: namespace.into(),
            take_ownership: false,
            timeout: Duration::from_secs(300),
            max_history: DEFAULT_MAX_HISTORY,
            kube_version: None,
            api_versions: None,
            disable_hooks: false,
            force: false,
            description: None,
            wait: false,
            wait_for_jobs: false,
            rollback_on_failure: false,
            labels: BTreeMap::new(),
            transform: None,
            discovery: None,
        }
    }

    fn owner(&self) -> Owner {
        Owner {
            name: self.name.clone(),
            namespace: self.namespace.clone(),
        }
    }

    fn apply(&self) -> ApplyOptions {
        ApplyOptions {
            take_ownership: self.take_ownership,
        }
    }

    /// `rollback_on_failure` implies waiting, as Helm's `--atomic` does.
    fn waits(&self) -> bool {
        self.wait || self.rollback_on_failure
    }
}

/// Options of uninstall.
#[derive(Debug, Clone)]
pub struct UninstallOptions {
    pub name: String,
    pub namespace: String,
    /// Keep the records, marked `uninstalled` (Helm's `--keep-history`).
    pub keep_history: bool,
    pub timeout: Duration,
    /// Skip the release's hooks (`--no-hooks`).
    pub disable_hooks: bool,
    /// Wait until the deleted objects are gone (`--wait`).
    pub wait: bool,
    /// The record's description instead of the default one (`--description`).
    pub description: Option<String>,
}

impl UninstallOptions {
    pub fn new(name: impl Into<String>, namespace: impl Into<String>) -> UninstallOptions {
        UninstallOptions {
            name: name.into(),
            namespace: namespace.into(),
            keep_history: false,
            timeout: Duration::from_secs(300),
            disable_hooks: false,
            wait: false,
            description: None,
        }
    }
}

fn storage(client: &Client, namespace: &str, max_history: usize) -> Storage {
    Storage::new(Arc::new(SecretDriver::for_namespace(
        client.clone(),
        namespace,
    )))
    .with_max_history(max_history)
}

/// Renders a chart as the release `opts.name` at `revision`, off the async runtime,
/// with `opts.kube_version`/`opts.api_versions` or Helm's default capabilities (no
/// cluster is asked; see [`render_in_cluster`]).
pub async fn render(
    chart: LoadedChart,
    values: Values,
    opts: &ActionOptions,
    revision: i64,
    is_upgrade: bool,
) -> Result<Rendered> {
    let caps = (
        opts.kube_version.clone(),
        opts.api_versions.clone().unwrap_or_default(),
        false,
    );
    render_with(chart, values, opts, caps, None, revision, is_upgrade).await
}

/// Renders like Helm's install and upgrade: with the cluster's capabilities
/// (discovered through `client`) unless `opts` sets `kube_version` or `api_versions`.
pub async fn render_in_cluster(
    client: &Client,
    chart: LoadedChart,
    values: Values,
    opts: &ActionOptions,
    revision: i64,
    is_upgrade: bool,
) -> Result<Rendered> {
    // Like Helm's install and upgrade, `lookup` sees the live cluster.
    let lookup = Some(client.clone());
    if opts.kube_version.is_some() || opts.api_versions.is_some() {
        let caps = (
            opts.kube_version.clone(),
            opts.api_versions.clone().unwrap_or_default(),
            false,
        );
        return render_with(chart, values, opts, caps, lookup, revision, is_upgrade).await;
    }
    let found = match &opts.discovery {
        Some(cache) => cache.get(client).await,
        None => capabilities::discover(client).await,
    }
    .map_err(|source| Error::Discovery {
        release: opts.name.clone(),
        source,
    })?;
    // Like Helm: the discovered set alone (the defaults only when discovery found none).
    let exact = !found.api_versions.is_empty();
    let caps = (Some(found.kube_version), found.api_versions, exact);
    render_with(chart, values, opts, caps, lookup, revision, is_upgrade).await
}

async fn render_with(
    chart: LoadedChart,
    values: Values,
    opts: &ActionOptions,
    (kube_version, api_versions, api_versions_exact): (Option<String>, Vec<String>, bool),
    lookup_client: Option<Client>,
    revision: i64,
    is_upgrade: bool,
) -> Result<Rendered> {
    let info = ReleaseInfo {
        name: opts.name.clone(),
        namespace: opts.namespace.clone(),
        revision,
        is_upgrade,
    };
    // The template engine's values are not `Send`; render on a blocking thread.
    let handle = tokio::runtime::Handle::current();
    let job = tokio::task::spawn_blocking(move || {
        let lookup = lookup_client.map(|c| crate::lookup::cluster_lookup(c, handle));
        let ropts = RenderOptions {
            release: info,
            kube_version,
            api_versions,
            api_versions_exact,
            check_kube_version: true,
            lookup,
            ..RenderOptions::default()
        };
        render_chart(chart, values, &ropts).map_err(|e| e.to_string())
    });
    let render_err = |message: String| Error::Render {
        release: opts.name.clone(),
        message,
    };
    job.await
        .map_err(|e| render_err(format!("render task failed: {e}")))?
        .map_err(render_err)
}

/// Runs the caller's transform on a prepared object and re-reads where it now lives.
fn transform(opts: &ActionOptions, o: &mut Object) -> Result<()> {
    let Some(t) = &opts.transform else {
        return Ok(());
    };
    (t.0)(&mut o.object, &o.reference).map_err(|message| Error::Transform {
        release: opts.name.clone(),
        object: Box::new(o.reference.clone()),
        source_path: o.source.clone(),
        message,
    })?;
    if o.reference.namespace.is_some() {
        let ns = o
            .object
            .metadata
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| opts.namespace.clone());
        o.object.metadata.namespace = Some(ns.clone());
        o.reference.namespace = Some(ns);
    } else {
        o.object.metadata.namespace = None;
    }
    if let Some(name) = o.object.metadata.name.clone().filter(|n| !n.is_empty()) {
        o.reference.name = name;
    }
    Ok(())
}

/// Prepares (parses and resolves) every document, failing before any write.
async fn prepare_all(kube: &Kube, owner: &Owner, docs: &[(String, String)]) -> Result<Vec<Object>> {
    let mut out = Vec::with_capacity(docs.len());
    for (source, doc) in docs {
        if let Some(o) = kube.prepare(owner, source, doc).await? {
            out.push(o);
        }
    }
    Ok(out)
}

/// Everything an action applies, parsed, resolved and transformed up front.
struct Plan {
    /// The chart's `crds/` objects (not transformed).
    crds: Vec<Object>,
    /// The manifest's objects, in apply order.
    objects: Vec<Object>,
    /// `hooks[i]`'s object; `None` for an empty hook document.
    hooks: Vec<Option<Object>>,
}

/// Builds the [`Plan`]; objects of kinds the chart's CRDs define resolve through those
/// CRDs, so nothing has to be installed to check the whole release.
async fn plan(
    kube: &Kube,
    opts: &ActionOptions,
    crds: &[(String, String)],
    docs: &[(String, String)],
    hooks: &[release::Hook],
) -> Result<Plan> {
    let owner = opts.owner();
    let mut crd_docs = Vec::new();
    for (source, text) in crds {
        for doc in chart::manifest::split_documents(text) {
            if let Some(obj) = Kube::parse_document(&owner.name, source, &doc)? {
                if obj.types.as_ref().map(|t| t.kind.as_str()) == Some("CustomResourceDefinition") {
                    kube.plan_crd(&obj);
                }
            }
            crd_docs.push((source.clone(), doc));
        }
    }
    let crds = prepare_all(kube, &owner, &crd_docs).await?;
    let mut objects = prepare_all(kube, &owner, docs).await?;
    for o in &mut objects {
        transform(opts, o)?;
    }
    let hooks = prepare_hooks(kube, &owner, hooks, Some(opts)).await?;
    Ok(Plan {
        crds,
        objects,
        hooks,
    })
}

/// Prepares each hook's object, transformed when `opts` is given.
async fn prepare_hooks(
    kube: &Kube,
    owner: &Owner,
    hooks: &[release::Hook],
    opts: Option<&ActionOptions>,
) -> Result<Vec<Option<Object>>> {
    let mut out = Vec::with_capacity(hooks.len());
    for h in hooks {
        let mut o = kube.prepare(owner, &h.path, &h.manifest).await?;
        if let (Some(o), Some(opts)) = (o.as_mut(), opts) {
            transform(opts, o)?;
        }
        out.push(o);
    }
    Ok(out)
}

/// The documents of a render's manifest.
fn rendered_docs(rendered: &Rendered) -> Vec<(String, String)> {
    rendered
        .manifests
        .iter()
        .map(|m| (m.source.clone(), m.content.clone()))
        .collect()
}

/// Runs the hooks of `event` unless hooks are disabled.
async fn run_hooks(
    kube: &Kube,
    owner: &Owner,
    rel: &mut Release,
    objects: &[Option<Object>],
    event: &str,
    disabled: bool,
    timeout: Duration,
) -> Result<()> {
    if disabled {
        return Ok(());
    }
    hooks::run(kube, owner, &mut rel.hooks, objects, event, timeout).await
}

/// Checks ownership of all objects first, so a conflict leaves the cluster untouched,
/// then applies them in order (replacing unchangeable ones with `force`). Pushes the
/// objects that did not exist before onto `created`.
async fn apply_all(
    kube: &Kube,
    opts: &ActionOptions,
    objects: &[Object],
    created: &mut Vec<Object>,
) -> Result<()> {
    let owner = opts.owner();
    let mut missing = HashSet::new();
    for o in objects {
        match kube.get(&owner, o).await? {
            Some(live) => check_live_ownership(&owner, o, &live, &opts.apply())?,
            None => {
                missing.insert(o.reference.clone());
            }
        }
    }
    for o in objects {
        kube.apply_or_replace(&owner, o, opts.force, opts.timeout)
            .await?;
        if missing.contains(&o.reference) {
            created.push(o.clone());
        }
    }
    Ok(())
}

/// Installs CRDs that do not exist yet (Helm never updates CRDs) and waits until
/// each is Established.
async fn install_crds(
    kube: &Kube,
    owner: &Owner,
    objects: &[Object],
    timeout: Duration,
) -> Result<()> {
    for o in objects {
        if kube.get(owner, o).await?.is_none() {
            kube.apply(owner, o, false).await?;
        }
    }
    for o in objects {
        if o.reference.kind == "CustomResourceDefinition" {
            let established = |crd: &kube::api::DynamicObject| {
                Ok(matches!(condition(crd, "Established"), Some(("True", _))))
            };
            kube.wait_for(owner, o, "become Established", timeout, established)
                .await?
                .map_err(|reason| Error::HookFailed {
                    release: owner.name.clone(),
                    event: "crd".into(),
                    object: Box::new(o.reference.clone()),
                    reason,
                })?;
        }
    }
    Ok(())
}

/// Deletes the objects of `old` that `new` no longer has, unless they are kept.
async fn delete_stale(kube: &Kube, owner: &Owner, old: &[Object], new: &[Object]) -> Result<()> {
    let keep: HashSet<_> = new.iter().map(|o| o.reference.identity()).collect();
    let mut stale: Vec<&Object> = old
        .iter()
        .filter(|o| !keep.contains(&o.reference.identity()))
        .collect();
    sort_by_kind(&mut stale, UNINSTALL_ORDER, |o| o.reference.kind.as_str());
    for o in stale {
        delete_unless_kept(kube, owner, o).await?;
    }
    Ok(())
}

/// Deletes `o` unless it (as rendered or as live) is kept; whether it was deleted.
async fn delete_unless_kept(kube: &Kube, owner: &Owner, o: &Object) -> Result<bool> {
    if is_kept(&o.object) {
        return Ok(false);
    }
    match kube.get(owner, o).await? {
        Some(live) if !is_kept(&live) => kube.delete(owner, o).await,
        _ => Ok(false),
    }
}

/// The objects of a stored manifest whose kinds the cluster still serves.
async fn stored_objects(kube: &Kube, owner: &Owner, manifest: &str) -> Result<Vec<Object>> {
    let mut out = Vec::new();
    for (source, doc) in manifest_documents(manifest) {
        match kube.prepare(owner, &source, &doc).await {
            Ok(Some(o)) => out.push(o),
            Ok(None) => {}
            // A kind the cluster no longer serves has no objects left to manage.
            Err(Error::UnknownKind { object, .. }) => {
                tracing::warn!(release = %owner.name, %object, "skipping object of a kind the cluster does not serve");
            }
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

async fn save(store: &Storage, rel: &Release) -> Result<()> {
    store
        .update(rel)
        .await
        .map_err(|e| Error::storage(&rel.name, e))
}

/// Marks `rel` failed with `description`, then returns `err`.
async fn fail(store: &Storage, rel: &mut Release, description: String, err: Error) -> Error {
    rel.set_status(Status::Failed, description);
    if let Err(e) = save(store, rel).await {
        tracing::warn!(release = %rel.name, error = %e, "cannot record the failed release; the next action recovers it");
    }
    err
}

/// Helm's label merge: `extra` overrides `base`, and the value `null` removes a label.
fn merge_labels(
    base: &BTreeMap<String, String>,
    extra: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut out = base.clone();
    for (k, v) in extra {
        if v == "null" {
            out.remove(k);
        } else {
            out.insert(k.clone(), v.clone());
        }
    }
    out
}

/// Fails when our lock was taken over, so a stale action never writes a final record
/// over the one of the action that took over.
fn check_lock(lock: &ReleaseLock, name: &str) -> Result<()> {
    if lock.is_lost() {
        return Err(Error::lock(
            name,
            release::lock::LockError::Lost(name.to_string()),
        ));
    }
    Ok(())
}

/// Turns a crashed action's leftover (newest record `pending-*` or `uninstalling`) into
/// `failed`; the caller holds the lock, so no live action owns that record.
async fn recover(store: &Storage, name: &str) -> Result<Option<Release>> {
    let Some(mut last) = store
        .last(name)
        .await
        .map_err(|e| Error::storage(name, e))?
    else {
        return Ok(None);
    };
    let status = last.status();
    if !status.is_pending() && status != Status::Uninstalling {
        return Ok(None);
    }
    let old = last
        .info
        .as_ref()
        .map(|i| i.description.clone())
        .unwrap_or_default();
    tracing::warn!(release = %name, version = last.version, %status, "recovering a release left behind by an interrupted action");
    last.set_status(Status::Failed, format!("interrupted: {old}"));
    save(store, &last).await?;
    Ok(Some(last))
}

/// Recovers a release left `pending-*` (or `uninstalling`) by a crashed process: when
/// no live lock holds it, the record is marked failed ("interrupted: ...") so the next
/// action can proceed; nothing in the cluster is touched. Returns the recovered record;
/// `None` when there was nothing to recover or a live action holds the lock (that
/// action's record is not a leftover). Every action does this itself after locking.
pub async fn recover_pending(client: Client, opts: &ActionOptions) -> Result<Option<Release>> {
    let lock = match lock::acquire(&client, &opts.namespace, &opts.name).await {
        Ok(l) => l,
        Err(Error::Locked { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let store = storage(&client, &opts.namespace, opts.max_history);
    let result = recover(&store, &opts.name).await;
    lock.release().await;
    result
}

/// `helm install`: renders revision 1 (or the next one after an uninstalled or failed
/// history), checks and transforms every object, records `pending-install`, installs
/// CRDs, pre-install hooks, the manifest in install order, waits (with `wait`) and
/// post-install hooks, then records `deployed`.
pub async fn install(
    client: Client,
    chart: LoadedChart,
    values: Values,
    opts: &ActionOptions,
) -> Result<Release> {
    let lock = lock::acquire(&client, &opts.namespace, &opts.name).await?;
    let result = install_locked(&client, chart, values, opts, &lock).await;
    lock.release().await;
    result
}

async fn install_locked(
    client: &Client,
    chart: LoadedChart,
    values: Values,
    opts: &ActionOptions,
    lock: &ReleaseLock,
) -> Result<Release> {
    let store = storage(client, &opts.namespace, opts.max_history);
    let name = &opts.name;
    recover(&store, name).await?;
    if let Some(last) = store
        .last(name)
        .await
        .map_err(|e| Error::storage(name, e))?
    {
        let st = last.status();
        if !matches!(st, Status::Uninstalled | Status::Failed) {
            return Err(Error::InUse {
                release: name.clone(),
                version: last.version,
                status: st.to_string(),
            });
        }
    }
    let version = store
        .next_version(name)
        .await
        .map_err(|e| Error::storage(name, e))?;
    let chart_rec = chart_record(&chart);
    let rendered = render_in_cluster(client, chart, values.clone(), opts, version, false).await?;
    let hook_recs: Vec<_> = rendered.hooks.iter().map(hook_record).collect();
    let kube = Kube::with_discovery(client.clone(), opts.discovery.clone());
    let plan = plan(
        &kube,
        opts,
        &rendered.crds,
        &rendered_docs(&rendered),
        &hook_recs,
    )
    .await?;

    let mut rel = new_release(
        name,
        &opts.namespace,
        version,
        chart_rec,
        values,
        rendered.manifest_text(),
        hook_recs,
        rendered.notes.clone(),
        Status::PendingInstall,
        "Initial install underway",
    );
    rel.labels = merge_labels(&BTreeMap::new(), &opts.labels);
    store
        .create(&rel)
        .await
        .map_err(|e| Error::storage(name, e))?;

    let mut created = Vec::new();
    let result = install_steps(&kube, opts, &plan, &mut rel, &mut created, lock).await;
    let result = match result {
        Ok(()) => {
            let description = opts.description.as_deref().unwrap_or("Install complete");
            rel.set_status(Status::Deployed, description);
            save(&store, &rel).await
        }
        Err(e) => Err(e),
    };
    let Err(err) = result else {
        return Ok(rel);
    };
    let description = format!("Release {name:?} failed: {err}");
    let err = fail(&store, &mut rel, description, err).await;
    if !opts.rollback_on_failure {
        return Err(err);
    }
    match undo_install(&kube, &store, opts, &mut rel, &plan, &created).await {
        Ok(()) => Err(Error::RolledBack {
            release: name.clone(),
            action: "install",
            outcome: "was uninstalled".into(),
            cause: Box::new(err),
        }),
        Err(undo) => Err(Error::RollbackFailed {
            release: name.clone(),
            action: "install",
            cause: Box::new(err),
            undo: Box::new(undo),
        }),
    }
}

async fn install_steps(
    kube: &Kube,
    opts: &ActionOptions,
    plan: &Plan,
    rel: &mut Release,
    created: &mut Vec<Object>,
    lock: &ReleaseLock,
) -> Result<()> {
    let owner = opts.owner();
    let (t, no_hooks) = (opts.timeout, opts.disable_hooks);
    install_crds(kube, &owner, &plan.crds, t).await?;
    run_hooks(kube, &owner, rel, &plan.hooks, "pre-install", no_hooks, t).await?;
    apply_all(kube, opts, &plan.objects, created).await?;
    if opts.waits() {
        wait::wait_ready(kube, &owner, &plan.objects, opts.wait_for_jobs, t).await?;
    }
    run_hooks(kube, &owner, rel, &plan.hooks, "post-install", no_hooks, t).await?;
    check_lock(lock, &opts.name)
}

/// `rollback_on_failure` after a failed install: Helm uninstalls the release. Only the
/// objects this install created are deleted (adopted ones were live before), then the
/// release's records are purged.
async fn undo_install(
    kube: &Kube,
    store: &Storage,
    opts: &ActionOptions,
    rel: &mut Release,
    plan: &Plan,
    created: &[Object],
) -> Result<()> {
    let owner = opts.owner();
    let (t, no_hooks) = (opts.timeout, opts.disable_hooks);
    run_hooks(kube, &owner, rel, &plan.hooks, "pre-delete", no_hooks, t).await?;
    let mut doomed: Vec<&Object> = created.iter().collect();
    sort_by_kind(&mut doomed, UNINSTALL_ORDER, |o| o.reference.kind.as_str());
    let mut deleted = Vec::new();
    for o in doomed {
        if delete_unless_kept(kube, &owner, o).await? {
            deleted.push(o);
        }
    }
    wait::wait_deleted(kube, &owner, &deleted, t).await?;
    run_hooks(kube, &owner, rel, &plan.hooks, "post-delete", no_hooks, t).await?;
    purge(store, &opts.name).await
}

/// Marks every deployed revision other than `keep` superseded.
async fn supersede_others(store: &Storage, name: &str, keep: i64) -> Result<()> {
    let history = store
        .history(name)
        .await
        .map_err(|e| Error::storage(name, e))?;
    for mut old in history {
        if old.version != keep && old.status() == Status::Deployed {
            // Helm changes only the status; the description ("Upgrade complete", ...)
            // stays what it was.
            old.info.get_or_insert_with(Default::default).status = Some(Status::Superseded);
            save(store, &old).await?;
        }
    }
    Ok(())
}

/// Records `rel` deployed, then supersedes the others. In this order a crash in
/// between leaves two deployed records (the newest wins), never none.
async fn finish_deployed(store: &Storage, rel: &mut Release, description: &str) -> Result<()> {
    rel.set_status(Status::Deployed, description);
    save(store, rel).await?;
    if let Err(e) = supersede_others(store, &rel.name, rel.version).await {
        tracing::warn!(release = %rel.name, error = %e, "cannot mark older revisions superseded; the newest deployed revision wins");
    }
    Ok(())
}

/// The newest revision, refusing while another action is pending on it.
async fn current(store: &Storage, name: &str) -> Result<Release> {
    let last = store
        .last(name)
        .await
        .map_err(|e| Error::storage(name, e))?
        .ok_or_else(|| Error::NotDeployed {
            release: name.to_string(),
        })?;
    if last.status().is_pending() {
        return Err(Error::InUse {
            release: name.to_string(),
            version: last.version,
            status: last.status().to_string(),
        });
    }
    Ok(last)
}

/// The deployed revision, or [`Error::NotDeployed`].
async fn deployed(store: &Storage, name: &str) -> Result<Release> {
    store
        .deployed(name)
        .await
        .map_err(|e| Error::storage(name, e))?
        .ok_or_else(|| Error::NotDeployed {
            release: name.to_string(),
        })
}

/// `helm upgrade`: renders the next revision, checks and transforms every object,
/// records `pending-upgrade`, runs pre-upgrade hooks, applies the new manifest, deletes
/// what it dropped (unless kept), waits (with `wait`), runs post-upgrade hooks, records
/// `deployed` and supersedes the previous revision. With `rollback_on_failure` a
/// failure rolls back to the previously deployed revision.
pub async fn upgrade(
    client: Client,
    chart: LoadedChart,
    values: Values,
    opts: &ActionOptions,
) -> Result<Release> {
    let lock = lock::acquire(&client, &opts.namespace, &opts.name).await?;
    let result = upgrade_locked(&client, chart, values, opts, &lock).await;
    lock.release().await;
    result
}

async fn upgrade_locked(
    client: &Client,
    chart: LoadedChart,
    values: Values,
    opts: &ActionOptions,
    lock: &ReleaseLock,
) -> Result<Release> {
    let store = storage(client, &opts.namespace, opts.max_history);
    let name = &opts.name;
    recover(&store, name).await?;
    let last = current(&store, name).await?;
    let previous = deployed(&store, name).await?;
    let version = last.version + 1;
    let chart_rec = chart_record(&chart);
    let rendered = render_in_cluster(client, chart, values.clone(), opts, version, true).await?;
    let hook_recs: Vec<_> = rendered.hooks.iter().map(hook_record).collect();
    let kube = Kube::with_discovery(client.clone(), opts.discovery.clone());
    let owner = opts.owner();
    let plan = plan(
        &kube,
        opts,
        &rendered.crds,
        &rendered_docs(&rendered),
        &hook_recs,
    )
    .await?;
    let old = stored_objects(&kube, &owner, &previous.manifest).await?;

    let mut rel = new_release(
        name,
        &opts.namespace,
        version,
        chart_rec,
        values,
        rendered.manifest_text(),
        hook_recs,
        rendered.notes.clone(),
        Status::PendingUpgrade,
        "Preparing upgrade",
    );
    if let Some(info) = rel.info.as_mut() {
        info.first_deployed = previous.info.as_ref().and_then(|i| i.first_deployed);
    }
    rel.labels = merge_labels(&last.labels, &opts.labels);
    store
        .create(&rel)
        .await
        .map_err(|e| Error::storage(name, e))?;

    let steps = Steps {
        pre: "pre-upgrade",
        post: "post-upgrade",
    };
    let result = match change_steps(&kube, opts, &plan, &old, &mut rel, steps, lock).await {
        Ok(()) => {
            let description = opts.description.as_deref().unwrap_or("Upgrade complete");
            finish_deployed(&store, &mut rel, description).await
        }
        Err(e) => Err(e),
    };
    let Err(err) = result else {
        return Ok(rel);
    };
    let description = format!("Upgrade {name:?} failed: {err}");
    let err = fail(&store, &mut rel, description, err).await;
    if !opts.rollback_on_failure {
        return Err(err);
    }
    let to = previous.version;
    let mut undo_opts = opts.clone();
    undo_opts.rollback_on_failure = false;
    undo_opts.wait = true;
    undo_opts.description = None;
    match rollback_steps(&store, &kube, to, &undo_opts, lock).await {
        Ok(_) => Err(Error::RolledBack {
            release: name.clone(),
            action: "upgrade",
            outcome: format!("was rolled back to revision {to}"),
            cause: Box::new(err),
        }),
        Err(undo) => Err(Error::RollbackFailed {
            release: name.clone(),
            action: "upgrade",
            cause: Box::new(err),
            undo: Box::new(undo),
        }),
    }
}

#[derive(Clone, Copy)]
struct Steps {
    pre: &'static str,
    post: &'static str,
}

/// The cluster changes of upgrade and rollback.
async fn change_steps(
    kube: &Kube,
    opts: &ActionOptions,
    plan: &Plan,
    old: &[Object],
    rel: &mut Release,
    steps: Steps,
    lock: &ReleaseLock,
) -> Result<()> {
    let owner = opts.owner();
    let (t, no_hooks) = (opts.timeout, opts.disable_hooks);
    install_crds(kube, &owner, &plan.crds, t).await?;
    run_hooks(kube, &owner, rel, &plan.hooks, steps.pre, no_hooks, t).await?;
    apply_all(kube, opts, &plan.objects, &mut Vec::new()).await?;
    delete_stale(kube, &owner, old, &plan.objects).await?;
    if opts.waits() {
        wait::wait_ready(kube, &owner, &plan.objects, opts.wait_for_jobs, t).await?;
    }
    run_hooks(kube, &owner, rel, &plan.hooks, steps.post, no_hooks, t).await?;
    check_lock(lock, &opts.name)
}

/// `helm rollback`: re-applies the manifest of revision `to` (0: the one before the
/// newest) as a new revision, deletes objects the current revision has and `to` does
/// not, runs pre/post-rollback hooks, and supersedes the previously deployed revision.
pub async fn rollback(client: Client, to: i64, opts: &ActionOptions) -> Result<Release> {
    let lock = lock::acquire(&client, &opts.namespace, &opts.name).await?;
    let store = storage(&client, &opts.namespace, opts.max_history);
    let kube = Kube::with_discovery(client.clone(), opts.discovery.clone());
    let result = match recover(&store, &opts.name).await {
        Ok(_) => rollback_steps(&store, &kube, to, opts, &lock).await,
        Err(e) => Err(e),
    };
    lock.release().await;
    result
}

async fn rollback_steps(
    store: &Storage,
    kube: &Kube,
    to: i64,
    opts: &ActionOptions,
    lock: &ReleaseLock,
) -> Result<Release> {
    let name = &opts.name;
    let owner = opts.owner();
    let last = current(store, name).await?;
    let to = if to == 0 { last.version - 1 } else { to };
    let target = match store.get(name, to).await {
        Ok(r) => r,
        Err(e) if e.is_not_found() => {
            return Err(Error::RevisionNotFound {
                release: name.clone(),
                version: to,
            })
        }
        Err(e) => return Err(Error::storage(name, e)),
    };
    // What may be live now: the deployed revision's objects and, after a failed
    // action, the objects of the newest revision (which never became deployed).
    let deployed_rel = store
        .deployed(name)
        .await
        .map_err(|e| Error::storage(name, e))?;
    let mut previous_manifests = vec![last.manifest.clone()];
    if let Some(d) = deployed_rel.filter(|d| d.version != last.version) {
        previous_manifests.push(d.manifest);
    }
    let mut docs = manifest_documents(&target.manifest);
    // Sort by the kind each document declares; parsing happens in `plan`.
    sort_by_kind(&mut docs, INSTALL_ORDER, |(_, d)| doc_kind(d));
    let plan = plan(kube, opts, &[], &docs, &target.hooks).await?;
    let mut old = Vec::new();
    for m in &previous_manifests {
        old.extend(stored_objects(kube, &owner, m).await?);
    }

    let version = last.version + 1;
    let mut rel = target.clone();
    rel.version = version;
    rel.labels = merge_labels(&target.labels, &opts.labels);
    let first = last.info.as_ref().and_then(|i| i.first_deployed);
    if let Some(info) = rel.info.as_mut() {
        info.first_deployed = first;
        info.last_deployed = Some(Time::now());
        info.deleted = None;
    }
    for h in &mut rel.hooks {
        h.last_run = Default::default();
    }
    let description = format!("Rollback to {to}");
    rel.set_status(Status::PendingRollback, description.clone());
    store
        .create(&rel)
        .await
        .map_err(|e| Error::storage(name, e))?;

    let steps = Steps {
        pre: "pre-rollback",
        post: "post-rollback",
    };
    let result = match change_steps(kube, opts, &plan, &old, &mut rel, steps, lock).await {
        Ok(()) => {
            let description = opts.description.as_deref().unwrap_or(&description);
            finish_deployed(store, &mut rel, description).await
        }
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => Ok(rel),
        Err(err) => {
            let description = format!("Rollback {name:?} failed: {err}");
            Err(fail(store, &mut rel, description, err).await)
        }
    }
}

/// The `kind:` a YAML document declares at its top level, for ordering.
fn doc_kind(doc: &str) -> &str {
    doc.lines()
        .find_map(|l| l.strip_prefix("kind:"))
        .map(|k| k.trim().trim_matches(|c| c == '"' || c == '\''))
        .unwrap_or("")
}

/// `helm uninstall`: runs pre-delete hooks, deletes the manifest's objects in uninstall
/// order (keeping `helm.sh/resource-policy: keep`), waits until they are gone (with
/// `wait`), runs post-delete hooks, and deletes the records, or keeps them marked
/// `uninstalled` with `keep_history`.
///
/// In a namespace that is being deleted no Lease can be created; uninstall then runs
/// without the lock, so the release's finalizer never blocks the namespace deletion.
pub async fn uninstall(client: Client, opts: &UninstallOptions) -> Result<Release> {
    let lock = match lock::acquire(&client, &opts.namespace, &opts.name).await {
        Ok(l) => Some(l),
        Err(e) if lock::namespace_unusable(&e) => {
            tracing::warn!(release = %opts.name, namespace = %opts.namespace, error = %e, "uninstalling without the release lock: the namespace refuses new objects");
            None
        }
        Err(e) => return Err(e),
    };
    let result = uninstall_locked(&client, opts, lock.as_ref()).await;
    if let Some(lock) = lock {
        lock.release().await;
    }
    result
}

async fn uninstall_locked(
    client: &Client,
    opts: &UninstallOptions,
    lock: Option<&ReleaseLock>,
) -> Result<Release> {
    let store = storage(client, &opts.namespace, 0);
    let name = &opts.name;
    recover(&store, name).await?;
    let mut rel = store
        .last(name)
        .await
        .map_err(|e| Error::storage(name, e))?
        .ok_or_else(|| Error::NotDeployed {
            release: name.clone(),
        })?;
    // As Helm: uninstalling an uninstalled release only purges its kept history.
    if rel.status() == Status::Uninstalled {
        if opts.keep_history {
            return Err(Error::AlreadyUninstalled {
                release: name.clone(),
                version: rel.version,
            });
        }
        purge(&store, name).await?;
        return Ok(rel);
    }
    let kube = Kube::new(client.clone());
    let owner = Owner {
        name: name.clone(),
        namespace: opts.namespace.clone(),
    };
    let hook_objects = if opts.disable_hooks {
        Vec::new()
    } else {
        prepare_hooks(&kube, &owner, &rel.hooks, None).await?
    };
    rel.set_status(
        Status::Uninstalling,
        "Deletion in progress (or silently failed)",
    );
    if let Some(info) = rel.info.as_mut() {
        info.deleted = Some(Time::now());
    }
    save(&store, &rel).await?;

    let result = uninstall_steps(&kube, &owner, opts, &mut rel, &hook_objects, lock).await;
    if let Err(err) = result {
        let description = format!("uninstallation completed with 1 error(s): {err}");
        return Err(fail(&store, &mut rel, description, err).await);
    }
    let description = opts
        .description
        .as_deref()
        .unwrap_or("Uninstallation complete");
    rel.set_status(Status::Uninstalled, description);
    if opts.keep_history {
        save(&store, &rel).await?;
        return Ok(rel);
    }
    purge(&store, name).await?;
    Ok(rel)
}

async fn uninstall_steps(
    kube: &Kube,
    owner: &Owner,
    opts: &UninstallOptions,
    rel: &mut Release,
    hook_objects: &[Option<Object>],
    lock: Option<&ReleaseLock>,
) -> Result<()> {
    let (t, no_hooks) = (opts.timeout, opts.disable_hooks);
    run_hooks(kube, owner, rel, hook_objects, "pre-delete", no_hooks, t).await?;
    let mut objects = stored_objects(kube, owner, &rel.manifest).await?;
    sort_by_kind(&mut objects, UNINSTALL_ORDER, |o| o.reference.kind.as_str());
    let mut deleted = Vec::new();
    for o in &objects {
        if delete_unless_kept(kube, owner, o).await? {
            deleted.push(o);
        }
    }
    if opts.wait {
        wait::wait_deleted(kube, owner, &deleted, t).await?;
    }
    run_hooks(kube, owner, rel, hook_objects, "post-delete", no_hooks, t).await?;
    match lock {
        Some(lock) => check_lock(lock, &opts.name),
        None => Ok(()),
    }
}

/// Deletes every record of the release.
async fn purge(store: &Storage, name: &str) -> Result<()> {
    let history = store
        .history_meta(name)
        .await
        .map_err(|e| Error::storage(name, e))?;
    for meta in history {
        store
            .delete(name, meta.version)
            .await
            .map_err(|e| Error::storage(name, e))?;
    }
    Ok(())
}

/// Re-applies the deployed revision's manifest (transformed) so objects changed or
/// deleted out of band come back, without writing a new revision or running hooks.
/// Reports the objects that were missing or that the apply changed.
pub async fn repair(client: Client, opts: &ActionOptions) -> Result<RepairReport> {
    let lock = lock::acquire(&client, &opts.namespace, &opts.name).await?;
    let result = repair_locked(&client, opts).await;
    lock.release().await;
    result
}

async fn repair_locked(client: &Client, opts: &ActionOptions) -> Result<RepairReport> {
    let store = storage(client, &opts.namespace, opts.max_history);
    let rel = deployed(&store, &opts.name).await?;
    let kube = Kube::with_discovery(client.clone(), opts.discovery.clone());
    let owner = opts.owner();
    let mut docs = manifest_documents(&rel.manifest);
    sort_by_kind(&mut docs, INSTALL_ORDER, |(_, d)| doc_kind(d));
    let plan = plan(&kube, opts, &[], &docs, &[]).await?;
    let mut before = Vec::with_capacity(plan.objects.len());
    for o in &plan.objects {
        let live = kube.get(&owner, o).await?;
        if let Some(live) = &live {
            check_live_ownership(&owner, o, live, &opts.apply())?;
        }
        before.push(live.and_then(|l| l.metadata.resource_version));
    }
    let mut report = RepairReport::default();
    for (o, before) in plan.objects.iter().zip(before) {
        let after = kube
            .apply_or_replace(&owner, o, opts.force, opts.timeout)
            .await?;
        if before.is_none() || before != after.metadata.resource_version {
            tracing::info!(release = %opts.name, object = %o.reference, "repaired");
            report.repaired.push(o.reference.clone());
        }
    }
    Ok(report)
}

/// A manifest's documents as parsed values (unparseable ones as their trimmed text),
/// empty documents dropped: formatting, comments and key order do not matter.
fn normalized_docs<'a>(docs: impl IntoIterator<Item = &'a str>) -> Vec<serde_json::Value> {
    docs.into_iter()
        .filter_map(|d| match chart::yaml::parse_yaml_to_json(d) {
            Ok(serde_json::Value::Null) => None,
            Ok(v) => Some(v),
            Err(_) => Some(serde_json::Value::String(d.trim().to_string())),
        })
        .collect()
}

/// Whether two document lists hold the same documents in any order.
fn same_documents(a: Vec<serde_json::Value>, mut b: Vec<serde_json::Value>) -> bool {
    if a.len() != b.len() {
        return false;
    }
    for doc in a {
        match b.iter().position(|d| *d == doc) {
            Some(i) => {
                b.swap_remove(i);
            }
            None => return false,
        }
    }
    true
}

/// Whether two stored manifests hold the same objects, ignoring formatting and order.
pub fn same_manifest(a: &str, b: &str) -> bool {
    let docs = |m: &str| {
        let d = manifest_documents(m);
        normalized_docs(d.iter().map(|(_, d)| d.as_str()))
    };
    same_documents(docs(a), docs(b))
}

/// Renders the upgrade and compares it with the deployed release, writing nothing:
/// `changed` when the manifest's objects, the hooks or the values differ.
pub async fn diff_upgrade(
    client: Client,
    chart: LoadedChart,
    values: Values,
    opts: &ActionOptions,
) -> Result<UpgradeDiff> {
    let store = storage(&client, &opts.namespace, opts.max_history);
    let name = &opts.name;
    let current = deployed(&store, name).await?;
    let version = store
        .next_version(name)
        .await
        .map_err(|e| Error::storage(name, e))?;
    let rendered = render_in_cluster(&client, chart, values.clone(), opts, version, true).await?;
    let new_manifest = rendered.manifest_text();
    let hooks_now = normalized_docs(current.hooks.iter().map(|h| h.manifest.as_str()));
    let hooks_new = normalized_docs(rendered.hooks.iter().map(|h| h.manifest.as_str()));
    let changed = !same_manifest(&current.manifest, &new_manifest)
        || !same_documents(hooks_now, hooks_new)
        || current.config != values;
    Ok(UpgradeDiff {
        changed,
        current_manifest: current.manifest,
        new_manifest,
    })
}

/// `helm test`: runs the `test` hooks of the newest revision (transformed) and records
/// each one's execution in that revision. A failing test hook fails the call after its
/// execution was recorded.
pub async fn test(client: Client, opts: &ActionOptions) -> Result<Release> {
    let lock = lock::acquire(&client, &opts.namespace, &opts.name).await?;
    let result = test_locked(&client, opts, &lock).await;
    lock.release().await;
    result
}

async fn test_locked(client: &Client, opts: &ActionOptions, lock: &ReleaseLock) -> Result<Release> {
    let store = storage(client, &opts.namespace, opts.max_history);
    let name = &opts.name;
    recover(&store, name).await?;
    let mut rel = current(&store, name).await?;
    let kube = Kube::with_discovery(client.clone(), opts.discovery.clone());
    let owner = opts.owner();
    let objects = prepare_hooks(&kube, &owner, &rel.hooks, Some(opts)).await?;
    let mut result = Ok(());
    for event in ["test", "test-success"] {
        if result.is_ok() {
            result = hooks::run(&kube, &owner, &mut rel.hooks, &objects, event, opts.timeout).await;
        }
    }
    check_lock(lock, name)?;
    save(&store, &rel).await?;
    result.map(|()| rel)
}
