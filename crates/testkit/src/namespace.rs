//! One namespace per test: a unique name, a client and a kubeconfig that default to it,
//! and deletion (waited for) when the test ends, pass or fail. Only what the test created
//! goes: the namespace and its contents, the cluster-scoped objects the test registered
//! with [`TestNamespace::delete_on_teardown`], and the cluster-scoped objects of the
//! releases installed into the namespace (those whose `meta.helm.sh/release-namespace`
//! names it: an APIService, a webhook, a ClusterRole of a chart), even when the test
//! failed before uninstalling them.
//!
//! No operator of the test is left to run the finalizers of its custom resources, so
//! teardown removes the operator's uninstall finalizers first, and any finalizer still
//! holding an object once the namespace is being deleted. An API that cannot be
//! discovered (an aggregated API whose service is down) is skipped, never waited for.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::config::Kubeconfig;
use serde_json::{json, Value};

use crate::cluster::{Cluster, Readiness};
use crate::deadline;
use crate::Error;

/// The label every test namespace carries, so leftovers of a killed run are easy to find:
/// `kubectl delete ns -l app.kubernetes.io/created-by=rudder-testkit`.
pub const CREATED_BY: (&str, &str) = ("app.kubernetes.io/created-by", "rudder-testkit");

/// How long teardown waits for the namespace to go before it says so and moves on.
const TEARDOWN: Duration = Duration::from_secs(120);
/// After this long, and as often again, finalizers still holding objects in the
/// namespace are removed: no controller of the test is left to run them once it is over.
const FINALIZER_GRACE: Duration = Duration::from_secs(1);
/// The finalizers the operators under test put on their custom resources (the Go
/// helm-operator's and its older one).
pub const OPERATOR_FINALIZERS: [&str; 2] = [
    "helm.sdk.operatorframework.io/uninstall-release",
    "uninstall-helm-release",
];
/// Helm's annotation naming the namespace of the release an object belongs to.
const RELEASE_NAMESPACE_ANNOTATION: &str = "meta.helm.sh/release-namespace";
/// How long one group version's discovery may take during teardown before it is skipped.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(10);

/// The cluster-scoped objects a test registered for deletion.
#[derive(Clone, Default)]
pub(crate) struct ClusterObjects(Arc<Mutex<Vec<(ApiResource, String)>>>);

impl ClusterObjects {
    fn push(&self, resource: ApiResource, name: &str) {
        let mut objects = self.0.lock().unwrap_or_else(|e| e.into_inner());
        objects.push((resource, name.to_string()));
    }

    /// The registered objects, leaving none.
    pub(crate) fn take(&self) -> Vec<(ApiResource, String)> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// A namespace that exists for one test; see the module docs.
pub struct TestNamespace {
    name: String,
    cluster: Cluster,
    kubeconfig: PathBuf,
    scratch: tempfile::TempDir,
    readiness: Option<tokio::task::JoinHandle<()>>,
    cluster_objects: ClusterObjects,
}

impl TestNamespace {
    pub(crate) fn create(cluster: &Cluster, prefix: &str) -> Result<TestNamespace, Error> {
        let name = unique_name(prefix);
        let scratch = tempfile::Builder::new()
            .prefix(&format!("{name}-"))
            .tempdir_in(cluster.dir())
            .map_err(|source| Error::Io {
                what: "create the namespace's scratch directory".into(),
                source,
            })?;
        let kubeconfig = scratch.path().join("kubeconfig");
        write_kubeconfig(cluster.kubeconfig(), &kubeconfig, &name)?;
        let client = cluster.inner.client.clone();
        let test = std::thread::current().name().unwrap_or("").to_string();
        let ns_name = name.clone();
        cluster.inner.worker.run(async move {
            let namespaces: Api<Namespace> = Api::all(client);
            let ns: Namespace = serde_json::from_value(json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": ns_name,
                    "labels": {CREATED_BY.0: CREATED_BY.1},
                    "annotations": {"rudder.dev/test": test},
                },
            }))
            .map_err(|e| Error::Invalid(e.to_string()))?;
            namespaces
                .create(&Default::default(), &ns)
                .await
                .map_err(|e| Error::kube(&format!("create namespace {ns_name}"), e))?;
            Ok::<_, Error>(())
        })?;
        let readiness = (cluster.inner.readiness == Readiness::Helper).then(|| {
            cluster.inner.worker.spawn(crate::readiness::simulate(
                cluster.inner.client.clone(),
                name.clone(),
            ))
        });
        let cluster_objects = ClusterObjects::default();
        deadline::namespace_created(
            &name,
            Arc::downgrade(&cluster.inner),
            cluster_objects.clone(),
        );
        Ok(TestNamespace {
            name,
            cluster: cluster.clone(),
            kubeconfig,
            scratch,
            readiness,
            cluster_objects,
        })
    }

    /// The namespace's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The cluster it is in.
    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// A client (on the caller's runtime) whose default namespace is this one, so
    /// `Api::default_namespaced` and `client.default_namespace()` name it.
    pub fn client(&self) -> kube::Client {
        let mut config = self.cluster.config().clone();
        config.default_namespace = self.name.clone();
        match kube::Client::try_from(config) {
            Ok(c) => c,
            Err(e) => panic!("cannot build a client for the test cluster: {e}"),
        }
    }

    /// A kubeconfig whose context defaults to this namespace, for kubectl, helm and the
    /// rudder binary.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// A scratch directory removed with the namespace (charts, logs, values files).
    pub fn dir(&self) -> &Path {
        self.scratch.path()
    }

    /// `kubectl` bound to this namespace's kubeconfig, or `None` (with a skip message)
    /// when kubectl is not installed.
    pub fn kubectl(&self) -> Option<crate::Kubectl> {
        crate::tools::kubectl().map(|k| crate::Kubectl::new(k, &self.kubeconfig, &self.name))
    }

    /// Registers a cluster-scoped object the test created (a ClusterRole, a CRD of its
    /// own) to be deleted at teardown. Objects of releases installed into this
    /// namespace need not be registered: teardown finds them by their annotations.
    pub fn delete_on_teardown(&self, resource: ApiResource, name: &str) {
        self.cluster_objects.push(resource, name);
    }

    /// Deletes the namespace now and waits until it is gone (what dropping it does).
    pub fn teardown(self) {}
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        if let Some(task) = self.readiness.take() {
            task.abort();
        }
        let objects = self.cluster_objects.take();
        let client = self.cluster.inner.client.clone();
        let quick = self.cluster.inner.quick.clone();
        let name = self.name.clone();
        let _waiting = deadline::waiting_for(&deadline::current_test(), || {
            format!("the teardown of namespace {}", self.name)
        });
        let outcome = self
            .cluster
            .inner
            .worker
            .run(async move { delete_all(client, quick, name, objects).await });
        deadline::namespace_gone(&self.name);
        if let Err(e) = outcome {
            // Not a panic: the test's own outcome is what matters, and a panic while
            // unwinding would abort the whole run.
            eprintln!("testkit: {}", apierror::Chain(&e));
        }
    }
}

/// Deletes namespace `name` and what its test created (see the module docs), and waits
/// until the namespace is gone.
/// `quick` is the same cluster without kube's retries (which wait minutes on a 503),
/// for discovery and reads that must not wait on an unavailable API.
pub(crate) async fn delete_all(
    client: kube::Client,
    quick: kube::Client,
    name: String,
    objects: Vec<(ApiResource, String)>,
) -> Result<(), Error> {
    let served = served_resources(&quick).await;
    for (resource, object) in objects.iter().rev() {
        delete_cluster_object(&client, resource, object).await?;
    }
    // Before the namespace: an unavailable APIService of a release would keep the
    // namespace from ever finishing (its controller cannot discover everything).
    for (resource, object) in release_objects(&quick, &served, &name).await {
        delete_cluster_object(&client, &resource, &object).await?;
    }
    release_operator_finalizers(&quick, &served, &name).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    match namespaces.delete(&name, &DeleteParams::background()).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
        Err(e) => return Err(Error::kube(&format!("delete namespace {name}"), e)),
    }
    let start = Instant::now();
    let mut release_at = FINALIZER_GRACE;
    loop {
        let ns = match namespaces.get_opt(&name).await {
            Ok(None) => return Ok(()),
            Ok(Some(ns)) => ns,
            Err(e) => return Err(Error::kube(&format!("read namespace {name}"), e)),
        };
        if start.elapsed() > release_at {
            release_finalizers(&quick, &served, &name).await;
            release_at = start.elapsed() + FINALIZER_GRACE * 5;
        }
        if start.elapsed() > TEARDOWN {
            return Err(Error::Timeout(format!(
                "namespace {name} was still terminating after {TEARDOWN:?}{}; \
                 `kubectl get ns {name} -o yaml` says what holds it",
                holding(&ns)
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// What a terminating namespace's conditions say holds it.
fn holding(ns: &Namespace) -> String {
    let conditions: Vec<String> = ns
        .status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .filter(|c| c.status == "True")
        .map(|c| format!("{}: {}", c.type_, c.message.as_deref().unwrap_or("")))
        .collect();
    if conditions.is_empty() {
        String::new()
    } else {
        format!(" ({})", conditions.join("; "))
    }
}

async fn delete_cluster_object(
    client: &kube::Client,
    resource: &ApiResource,
    object: &str,
) -> Result<(), Error> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), resource);
    match api.delete(object, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(Error::kube(
            &format!("delete {} {object}", resource.kind),
            e,
        )),
    }
}

/// A served resource: where it lives and what it allows.
pub(crate) struct Served {
    resource: ApiResource,
    namespaced: bool,
    verbs: Vec<String>,
}

impl Served {
    fn allows(&self, verbs: &[&str]) -> bool {
        verbs.iter().all(|v| self.verbs.iter().any(|s| s == v))
    }
}

/// Every resource of the preferred version of each served group; group versions whose
/// discovery fails or takes too long are skipped.
pub(crate) async fn served_resources(client: &kube::Client) -> Vec<Served> {
    let mut gvs = Vec::new();
    if let Ok(core) = client.list_core_api_versions().await {
        gvs.extend(core.versions);
    }
    if let Ok(groups) = client.list_api_groups().await {
        for g in groups.groups {
            let preferred = g.preferred_version.or_else(|| g.versions.first().cloned());
            if let Some(v) = preferred {
                gvs.push(v.group_version);
            }
        }
    }
    let mut lists = tokio::task::JoinSet::new();
    for gv in gvs {
        let client = client.clone();
        lists.spawn(async move {
            let listed = async {
                if gv.contains('/') {
                    client.list_api_group_resources(&gv).await
                } else {
                    client.list_core_api_resources(&gv).await
                }
            };
            tokio::time::timeout(DISCOVERY_TIMEOUT, listed)
                .await
                .ok()
                .and_then(Result::ok)
        });
    }
    let mut out = Vec::new();
    while let Some(joined) = lists.join_next().await {
        let Ok(Some(list)) = joined else { continue };
        let (group, version) = match list.group_version.split_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (String::new(), list.group_version.clone()),
        };
        for r in list.resources {
            if r.name.contains('/') {
                continue;
            }
            let gvk = kube::api::GroupVersionKind::gvk(&group, &version, &r.kind);
            out.push(Served {
                resource: ApiResource::from_gvk_with_plural(&gvk, &r.name),
                namespaced: r.namespaced,
                verbs: r.verbs,
            });
        }
    }
    out
}

/// The cluster-scoped objects of releases installed into `namespace` (Helm marks every
/// object it applies with the release's namespace).
async fn release_objects(
    client: &kube::Client,
    served: &[Served],
    namespace: &str,
) -> Vec<(ApiResource, String)> {
    let mut out = Vec::new();
    for s in served {
        if s.namespaced || s.resource.kind == "Namespace" || !s.allows(&["list", "delete"]) {
            continue;
        }
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &s.resource);
        let selector = ListParams::default().labels("app.kubernetes.io/managed-by=Helm");
        let Ok(list) = api.list(&selector).await else {
            continue;
        };
        for obj in list.items {
            let ours = obj
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(RELEASE_NAMESPACE_ANNOTATION))
                .is_some_and(|ns| ns == namespace);
            if let (true, Some(name)) = (ours, obj.metadata.name) {
                out.push((s.resource.clone(), name));
            }
        }
    }
    out
}

/// Removes the operators' uninstall finalizers from the custom resources in
/// `namespace`: the test's operator is gone, nothing would remove them.
async fn release_operator_finalizers(client: &kube::Client, served: &[Served], namespace: &str) {
    for s in served {
        let custom = !s.resource.group.contains(".k8s.io") && s.resource.group.contains('.');
        if !s.namespaced || !custom || !s.allows(&["list", "patch"]) {
            continue;
        }
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &s.resource);
        let Ok(list) = api.list(&ListParams::default()).await else {
            continue;
        };
        for obj in list.items {
            let finalizers = obj.metadata.finalizers.clone().unwrap_or_default();
            let kept: Vec<&String> = finalizers
                .iter()
                .filter(|f| !OPERATOR_FINALIZERS.contains(&f.as_str()))
                .collect();
            let Some(name) = obj.metadata.name.as_deref() else {
                continue;
            };
            if kept.len() == finalizers.len() {
                continue;
            }
            let patch = Patch::Merge(json!({"metadata": {
                "finalizers": kept,
                "resourceVersion": obj.metadata.resource_version,
            }}));
            // A conflict means someone else wrote it; the pass after deletion catches it.
            let _ = api.patch(name, &PatchParams::default(), &patch).await;
        }
    }
}

/// Removes the finalizers of objects being deleted in `namespace` (custom resources
/// whose operator is gone, mostly), so the namespace can finish terminating.
async fn release_finalizers(client: &kube::Client, served: &[Served], namespace: &str) {
    for s in served {
        if !s.namespaced || !s.allows(&["list", "patch"]) {
            continue;
        }
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &s.resource);
        let Ok(list) = api.list(&ListParams::default()).await else {
            continue;
        };
        for obj in list.items {
            let held = obj.metadata.deletion_timestamp.is_some()
                && obj
                    .metadata
                    .finalizers
                    .as_ref()
                    .is_some_and(|f| !f.is_empty());
            let Some(object) = obj.metadata.name.as_deref().filter(|_| held) else {
                continue;
            };
            let patch = Patch::Merge(json!({"metadata": {"finalizers": Value::Null}}));
            let _ = api.patch(object, &PatchParams::default(), &patch).await;
        }
    }
}

/// `prefix-<6 chars>`: unique within the run and across runs, a valid DNS label.
fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut clean: String = prefix
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    clean.truncate(40);
    let clean = clean.trim_matches('-');
    let clean = if clean.is_empty() { "test" } else { clean };
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or_default();
    let seed = nanos
        ^ (u64::from(std::process::id()) << 32)
        ^ COUNTER
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    // splitmix64's finaliser spreads the seed over every digit.
    let mut z = seed;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    let alphabet = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let suffix: String = (0..6)
        .map(|i| alphabet[((z >> (i * 6)) % 36) as usize] as char)
        .collect();
    format!("{clean}-{suffix}")
}

/// Copies `from` to `to` with the current context's namespace set to `namespace`. Paths
/// in it are absolute already ([`Kubeconfig::read_from`] makes them so). Written as
/// JSON, which every kubeconfig reader accepts.
fn write_kubeconfig(from: &Path, to: &Path, namespace: &str) -> Result<(), Error> {
    let mut config = Kubeconfig::read_from(from).map_err(|e| Error::Kubeconfig {
        path: from.to_path_buf(),
        message: e.to_string(),
    })?;
    let current = config.current_context.clone().unwrap_or_default();
    for named in &mut config.contexts {
        if named.name == current {
            if let Some(context) = named.context.as_mut() {
                context.namespace = Some(namespace.to_string());
            }
        }
    }
    let text = serde_json::to_string_pretty(&config).map_err(|e| Error::Kubeconfig {
        path: from.to_path_buf(),
        message: e.to_string(),
    })?;
    std::fs::write(to, text).map_err(|source| Error::Io {
        what: format!("write {}", to.display()),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::unique_name;

    #[test]
    fn names_are_dns_labels_and_unique() {
        let a = unique_name("Install_Upgrade rollback");
        let b = unique_name("Install_Upgrade rollback");
        assert_ne!(a, b);
        assert!(a.starts_with("install-upgrade-rollback-"), "{a}");
        assert!(a.len() <= 63);
        let long = unique_name(&"x".repeat(100));
        assert!(long.len() <= 63, "{long}");
        assert!(unique_name("--").starts_with("test-"));
    }
}
