//! The release actions: install, upgrade, uninstall and rollback, each writing Helm's
//! release records (Secret driver in the release namespace) around the cluster changes
//! in Helm's order: record pending, CRDs, pre-hooks, objects, post-hooks, record final.

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

use crate::cluster::{condition, is_kept, ApplyOptions, Kube, Object, ObjectRef, Owner};
use crate::error::{Error, Result};
use crate::hooks;
use crate::record::{chart_record, hook_record, manifest_documents, new_release, sort_by_kind};

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
    /// `.Capabilities.KubeVersion`; Helm's default when `None`.
    pub kube_version: Option<String>,
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
    /// Undo a failed action (`--atomic` / `--rollback-on-failure`).
    pub rollback_on_failure: bool,
    /// Custom labels written on the release record (`--labels`).
    pub labels: BTreeMap<String, String>,
    /// Called on every object before anything is written; an error refuses the action.
    pub transform: Option<Transform>,
}

/// Changes (or refuses) each object of a release before it is applied: the operator
/// adds owner references here and enforces which namespaces a release may reach.
#[derive(Clone)]
pub struct Transform(
    pub Arc<dyn Fn(&mut DynamicObject, &ObjectRef) -> std::result::Result<(), String> + Send + Sync>,
);

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
            disable_hooks: false,
            force: false,
            description: None,
            wait: false,
            wait_for_jobs: false,
            rollback_on_failure: false,
            labels: BTreeMap::new(),
            transform: None,
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

/// Renders a chart as the release `opts.name` at `revision`, off the async runtime.
pub async fn render(
    chart: LoadedChart,
    values: Values,
    opts: &ActionOptions,
    revision: i64,
    is_upgrade: bool,
) -> Result<Rendered> {
    let info = ReleaseInfo {
        name: opts.name.clone(),
        namespace: opts.namespace.clone(),
        revision,
        is_upgrade,
    };
    let kube_version = opts.kube_version.clone();
    // The template engine's values are not `Send`; render on a blocking thread.
    let job = tokio::task::spawn_blocking(move || {
        let ropts = RenderOptions {
            release: info,
            kube_version,
            check_kube_version: true,
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

/// Prepares the manifest documents of a render (install and upgrade share this).
async fn prepare_rendered(
    kube: &Kube,
    owner: &Owner,
    rendered: &chart::render::Rendered,
) -> Result<Vec<Object>> {
    let docs: Vec<_> = rendered
        .manifests
        .iter()
        .map(|m| (m.source.clone(), m.content.clone()))
        .collect();
    prepare_all(kube, owner, &docs).await
}

/// Checks ownership of all objects first, so a conflict leaves the cluster untouched,
/// then applies them in order.
async fn apply_all(
    kube: &Kube,
    owner: &Owner,
    objects: &[Object],
    opts: &ApplyOptions,
) -> Result<()> {
    for o in objects {
        kube.check_ownership(owner, o, opts).await?;
    }
    for o in objects {
        kube.apply(owner, o, true).await?;
    }
    Ok(())
}

/// Installs CRDs that do not exist yet (Helm never updates CRDs) and waits until
/// each is Established.
async fn install_crds(
    kube: &Kube,
    owner: &Owner,
    crds: &[(String, String)],
    timeout: Duration,
) -> Result<()> {
    let mut docs = Vec::new();
    for (source, text) in crds {
        for doc in chart::manifest::split_documents(text) {
            docs.push((source.clone(), doc));
        }
    }
    let objects = prepare_all(kube, owner, &docs).await?;
    for o in &objects {
        if kube.get(owner, o).await?.is_none() {
            kube.apply(owner, o, false).await?;
        }
    }
    for o in &objects {
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

async fn delete_unless_kept(kube: &Kube, owner: &Owner, o: &Object) -> Result<()> {
    if is_kept(&o.object) {
        return Ok(());
    }
    match kube.get(owner, o).await? {
        Some(live) if !is_kept(&live) => {
            kube.delete(owner, o).await?;
        }
        _ => {}
    }
    Ok(())
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

/// Marks `rel` failed with `err` as description, then returns `err`.
async fn fail(store: &Storage, mut rel: Release, description: String, err: Error) -> Error {
    rel.set_status(Status::Failed, description);
    if let Err(e) = save(store, &rel).await {
        tracing::warn!(release = %rel.name, error = %e, "cannot record the failed release");
    }
    err
}

/// `helm install`: renders revision 1 (or the next one after an uninstalled or failed
/// history), records `pending-install`, installs CRDs, pre-install hooks, the manifest in
/// install order and post-install hooks, then records `deployed`.
pub async fn install(
    client: Client,
    chart: LoadedChart,
    values: Values,
    opts: &ActionOptions,
) -> Result<Release> {
    let store = storage(&client, &opts.namespace, opts.max_history);
    let name = &opts.name;
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
    let rendered = render(chart, values.clone(), opts, version, false).await?;
    let mut rel = new_release(
        name,
        &opts.namespace,
        version,
        chart_rec,
        values,
        rendered.manifest_text(),
        rendered.hooks.iter().map(hook_record).collect(),
        rendered.notes.clone(),
        Status::PendingInstall,
        "Initial install underway",
    );
    store
        .create(&rel)
        .await
        .map_err(|e| Error::storage(name, e))?;

    let kube = Kube::new(client);
    let owner = opts.owner();
    let result = async {
        install_crds(&kube, &owner, &rendered.crds, opts.timeout).await?;
        let objects = prepare_rendered(&kube, &owner, &rendered).await?;
        hooks::run(&kube, &owner, &mut rel.hooks, "pre-install", opts.timeout).await?;
        apply_all(&kube, &owner, &objects, &opts.apply()).await?;
        hooks::run(&kube, &owner, &mut rel.hooks, "post-install", opts.timeout).await
    }
    .await;
    if let Err(err) = result {
        let description = format!("Release {name:?} failed: {err}");
        return Err(fail(&store, rel, description, err).await);
    }
    rel.set_status(Status::Deployed, "Install complete");
    save(&store, &rel).await?;
    Ok(rel)
}

/// Marks every deployed revision other than `keep` superseded.
async fn supersede_others(store: &Storage, name: &str, keep: i64) -> Result<()> {
    let history = store
        .history(name)
        .await
        .map_err(|e| Error::storage(name, e))?;
    for mut old in history {
        if old.version != keep && old.status() == Status::Deployed {
            old.set_status(Status::Superseded, "Superseded");
            save(store, &old).await?;
        }
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

/// `helm upgrade`: renders the next revision, records `pending-upgrade`, runs
/// pre-upgrade hooks, applies the new manifest, deletes what it dropped (unless kept),
/// runs post-upgrade hooks, supersedes the previous revision and records `deployed`.
pub async fn upgrade(
    client: Client,
    chart: LoadedChart,
    values: Values,
    opts: &ActionOptions,
) -> Result<Release> {
    let store = storage(&client, &opts.namespace, opts.max_history);
    let name = &opts.name;
    let last = current(&store, name).await?;
    let previous = store
        .deployed(name)
        .await
        .map_err(|e| Error::storage(name, e))?
        .ok_or_else(|| Error::NotDeployed {
            release: name.clone(),
        })?;
    let version = last.version + 1;
    let chart_rec = chart_record(&chart);
    let rendered = render(chart, values.clone(), opts, version, true).await?;
    let mut rel = new_release(
        name,
        &opts.namespace,
        version,
        chart_rec,
        values,
        rendered.manifest_text(),
        rendered.hooks.iter().map(hook_record).collect(),
        rendered.notes.clone(),
        Status::PendingUpgrade,
        "Preparing upgrade",
    );
    if let Some(info) = rel.info.as_mut() {
        info.first_deployed = previous.info.as_ref().and_then(|i| i.first_deployed);
    }
    store
        .create(&rel)
        .await
        .map_err(|e| Error::storage(name, e))?;

    let kube = Kube::new(client);
    let owner = opts.owner();
    let result = async {
        install_crds(&kube, &owner, &rendered.crds, opts.timeout).await?;
        let objects = prepare_rendered(&kube, &owner, &rendered).await?;
        let old = stored_objects(&kube, &owner, &previous.manifest).await?;
        hooks::run(&kube, &owner, &mut rel.hooks, "pre-upgrade", opts.timeout).await?;
        apply_all(&kube, &owner, &objects, &opts.apply()).await?;
        delete_stale(&kube, &owner, &old, &objects).await?;
        hooks::run(&kube, &owner, &mut rel.hooks, "post-upgrade", opts.timeout).await
    }
    .await;
    if let Err(err) = result {
        let description = format!("Upgrade {name:?} failed: {err}");
        return Err(fail(&store, rel, description, err).await);
    }
    supersede_others(&store, name, version).await?;
    rel.set_status(Status::Deployed, "Upgrade complete");
    save(&store, &rel).await?;
    Ok(rel)
}

/// `helm rollback`: re-applies the manifest of revision `to` (0: the one before the
/// newest) as a new revision, deletes objects the current revision has and `to` does
/// not, runs pre/post-rollback hooks, and supersedes the previously deployed revision.
pub async fn rollback(client: Client, to: i64, opts: &ActionOptions) -> Result<Release> {
    let store = storage(&client, &opts.namespace, opts.max_history);
    let name = &opts.name;
    let last = current(&store, name).await?;
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
    let previous_manifest = store
        .deployed(name)
        .await
        .map_err(|e| Error::storage(name, e))?
        .map(|r| r.manifest)
        .unwrap_or_else(|| last.manifest.clone());
    let version = last.version + 1;
    let mut rel = target.clone();
    rel.version = version;
    rel.labels = Default::default();
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

    let kube = Kube::new(client);
    let owner = opts.owner();
    let result = async {
        let mut objects = prepare_all(&kube, &owner, &manifest_documents(&target.manifest)).await?;
        sort_by_kind(&mut objects, INSTALL_ORDER, |o| o.reference.kind.as_str());
        let old = stored_objects(&kube, &owner, &previous_manifest).await?;
        hooks::run(&kube, &owner, &mut rel.hooks, "pre-rollback", opts.timeout).await?;
        apply_all(&kube, &owner, &objects, &opts.apply()).await?;
        delete_stale(&kube, &owner, &old, &objects).await?;
        hooks::run(&kube, &owner, &mut rel.hooks, "post-rollback", opts.timeout).await
    }
    .await;
    if let Err(err) = result {
        let description = format!("Rollback {name:?} failed: {err}");
        return Err(fail(&store, rel, description, err).await);
    }
    supersede_others(&store, name, version).await?;
    rel.set_status(Status::Deployed, description);
    save(&store, &rel).await?;
    Ok(rel)
}

/// `helm uninstall`: runs pre-delete hooks, deletes the manifest's objects in uninstall
/// order (keeping `helm.sh/resource-policy: keep`), runs post-delete hooks, and deletes
/// the records, or keeps them marked `uninstalled` with `keep_history`.
pub async fn uninstall(client: Client, opts: &UninstallOptions) -> Result<Release> {
    let store = storage(&client, &opts.namespace, 0);
    let name = &opts.name;
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
    rel.set_status(
        Status::Uninstalling,
        "Deletion in progress (or silently failed)",
    );
    if let Some(info) = rel.info.as_mut() {
        info.deleted = Some(Time::now());
    }
    save(&store, &rel).await?;

    let kube = Kube::new(client);
    let owner = Owner {
        name: name.clone(),
        namespace: opts.namespace.clone(),
    };
    let result = async {
        hooks::run(&kube, &owner, &mut rel.hooks, "pre-delete", opts.timeout).await?;
        let mut objects = stored_objects(&kube, &owner, &rel.manifest).await?;
        sort_by_kind(&mut objects, UNINSTALL_ORDER, |o| o.reference.kind.as_str());
        for o in &objects {
            delete_unless_kept(&kube, &owner, o).await?;
        }
        hooks::run(&kube, &owner, &mut rel.hooks, "post-delete", opts.timeout).await
    }
    .await;
    if let Err(err) = result {
        let description = format!("uninstallation completed with 1 error(s): {err}");
        return Err(fail(&store, rel, description, err).await);
    }
    rel.set_status(Status::Uninstalled, "Uninstallation complete");
    if opts.keep_history {
        save(&store, &rel).await?;
        return Ok(rel);
    }
    purge(&store, name).await?;
    Ok(rel)
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

/// Re-applies the deployed revision's manifest so objects changed or deleted out of band
/// come back, without writing a new revision.
pub async fn repair(_client: Client, _opts: &ActionOptions) -> Result<RepairReport> {
    Ok(RepairReport::default())
}

/// Recovers a release left `pending-*` by a crashed process: when no live lock holds it,
/// the pending record is marked failed so the next action can proceed. Returns the
/// recovered record.
pub async fn recover_pending(_client: Client, _opts: &ActionOptions) -> Result<Option<Release>> {
    Ok(None)
}

/// Renders the upgrade and compares it with the deployed release, writing nothing.
pub async fn diff_upgrade(
    _client: Client,
    _chart: LoadedChart,
    _values: Values,
    _opts: &ActionOptions,
) -> Result<UpgradeDiff> {
    Ok(UpgradeDiff::default())
}
