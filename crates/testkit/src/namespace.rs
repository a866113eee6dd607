//! One namespace per test: a unique name, a client and a kubeconfig that default to it,
//! and deletion (waited for) when the test ends, pass or fail. Only what the test created
//! goes: the namespace and its contents, and the cluster-scoped objects the test
//! registered with [`TestNamespace::delete_on_teardown`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::config::Kubeconfig;
use kube::discovery::{verbs, Discovery, Scope};
use serde_json::json;

use crate::cluster::{Cluster, Readiness};
use crate::Error;

/// The label every test namespace carries, so leftovers of a killed run are easy to find:
/// `kubectl delete ns -l app.kubernetes.io/created-by=rudder-testkit`.
pub const CREATED_BY: (&str, &str) = ("app.kubernetes.io/created-by", "rudder-testkit");

/// How long teardown waits for the namespace to go before it says so and moves on.
const TEARDOWN: Duration = Duration::from_secs(120);
/// After this long, and as often again, finalizers still holding objects in the
/// namespace are removed: no controller of the test is left to run them once it is over.
const FINALIZER_GRACE: Duration = Duration::from_secs(1);

/// A namespace that exists for one test; see the module docs.
pub struct TestNamespace {
    name: String,
    cluster: Cluster,
    kubeconfig: PathBuf,
    scratch: tempfile::TempDir,
    readiness: Option<tokio::task::JoinHandle<()>>,
    cluster_objects: Mutex<Vec<(ApiResource, String)>>,
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
        Ok(TestNamespace {
            name,
            cluster: cluster.clone(),
            kubeconfig,
            scratch,
            readiness,
            cluster_objects: Mutex::new(Vec::new()),
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
    /// own) to be deleted at teardown.
    pub fn delete_on_teardown(&self, resource: ApiResource, name: &str) {
        let mut objects = match self.cluster_objects.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        objects.push((resource, name.to_string()));
    }

    /// Deletes the namespace now and waits until it is gone (what dropping it does).
    pub fn teardown(self) {}
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        if let Some(task) = self.readiness.take() {
            task.abort();
        }
        let objects = match self.cluster_objects.lock() {
            Ok(mut g) => std::mem::take(&mut *g),
            Err(p) => std::mem::take(&mut *p.into_inner()),
        };
        let client = self.cluster.inner.client.clone();
        let name = self.name.clone();
        let outcome = self
            .cluster
            .inner
            .worker
            .run(async move { delete_all(client, name, objects).await });
        if let Err(e) = outcome {
            // Not a panic: the test's own outcome is what matters, and a panic while
            // unwinding would abort the whole run.
            eprintln!("testkit: {e}");
        }
    }
}

async fn delete_all(
    client: kube::Client,
    name: String,
    objects: Vec<(ApiResource, String)>,
) -> Result<(), Error> {
    for (resource, object) in objects.iter().rev() {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), resource);
        match api.delete(object, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => {
                return Err(Error::kube(
                    &format!("delete {} {object}", resource.kind),
                    e,
                ))
            }
        }
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    match namespaces.delete(&name, &DeleteParams::background()).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
        Err(e) => return Err(Error::kube(&format!("delete namespace {name}"), e)),
    }
    let start = Instant::now();
    let mut release_at = FINALIZER_GRACE;
    loop {
        match namespaces.get_opt(&name).await {
            Ok(None) => return Ok(()),
            Ok(Some(_)) => {}
            Err(e) => return Err(Error::kube(&format!("read namespace {name}"), e)),
        }
        if start.elapsed() > release_at {
            release_finalizers(&client, &name).await;
            release_at = start.elapsed() + FINALIZER_GRACE * 5;
        }
        if start.elapsed() > TEARDOWN {
            return Err(Error::Timeout(format!(
                "namespace {name} was still terminating after {TEARDOWN:?}; \
                 `kubectl get ns {name} -o yaml` says what holds it"
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Removes the finalizers of objects being deleted in `namespace` (custom resources
/// whose operator is gone, mostly), so the namespace can finish terminating.
async fn release_finalizers(client: &kube::Client, namespace: &str) {
    let Ok(discovery) = Discovery::new(client.clone()).run().await else {
        return;
    };
    for group in discovery.groups() {
        for (resource, caps) in group.recommended_resources() {
            if caps.scope != Scope::Namespaced
                || !caps.supports_operation(verbs::LIST)
                || !caps.supports_operation(verbs::PATCH)
            {
                continue;
            }
            let api: Api<DynamicObject> =
                Api::namespaced_with(client.clone(), namespace, &resource);
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
                let patch = Patch::Merge(json!({"metadata": {"finalizers": null}}));
                let _ = api.patch(object, &PatchParams::default(), &patch).await;
            }
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
