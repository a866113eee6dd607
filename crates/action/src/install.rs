//! `helm install`: render revision 1 (or the next one after an uninstalled or failed
//! history), check and transform every object, record `pending-install`, install CRDs,
//! run pre-install hooks, apply the manifest in install order, wait (with `wait`), run
//! post-install hooks, record `deployed`.
//!
//! [`Install::run_or_adopt`] also takes over a release whose records were lost while
//! its objects still run (see [`crate::adopt`]), from the same render.

use std::collections::BTreeMap;
use std::sync::Arc;

use chart::loader::Chart;
use chart::manifest::UNINSTALL_ORDER;
use chart::render::Rendered;
use chart::values::Values;
use release::record::{Release, Status};
use release::Storage;

use crate::config::ActionConfig;
use crate::error::{Error, Result};
use crate::kube::{wait, KubeClient, Object};
use crate::lock::Held;
use crate::options::ActionOptions;
use crate::ownership::{self, Adoption, LiveObjects};
use crate::plan::{self, Known, Plan};
use crate::record::{
    hook_record, new_release, processed_chart_record, record_labels, record_lookups, sort_by_kind,
    Draft,
};
use crate::render::{self, Input, Revision};
use crate::store;

/// How a dry run renders (`--dry-run`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DryRun {
    /// Offline: Helm's default capabilities, `lookup` finds nothing.
    Client,
    /// `lookup` and capability discovery reach the cluster; nothing is written.
    Server,
}

impl DryRun {
    /// Helm's `--dry-run[=MODE]`: `none` or `false` is a real run, `server` asks the
    /// cluster, anything else (`client`, `true`, the bare flag) renders offline.
    pub fn from_flag(mode: &str) -> Option<DryRun> {
        match mode {
            "none" | "false" => None,
            "server" => Some(DryRun::Server),
            _ => Some(DryRun::Client),
        }
    }
}

/// What [`Install::run_or_adopt`] did.
#[derive(Debug, Clone)]
pub struct Installed {
    /// The deployed record.
    pub release: Release,
    /// `Some(n)`: the release had no records, and the record was written over `n`
    /// live objects of it, without hooks.
    pub adopted: Option<usize>,
}

/// The `install` verb.
pub struct Install<'a> {
    cfg: &'a ActionConfig,
    opts: ActionOptions,
}

impl<'a> Install<'a> {
    pub fn new(cfg: &'a ActionConfig, opts: ActionOptions) -> Install<'a> {
        Install { cfg, opts }
    }

    /// Installs the chart as a new release (or a new revision after an uninstalled or
    /// failed history).
    pub async fn run(&self, chart: &Arc<Chart>, values: Values) -> Result<Release> {
        Ok(self.installing(chart, values, Adoption::Off).await?.release)
    }

    /// [`Install::run`], but a release without any record whose objects are live gets a
    /// record over them instead: no hooks run, nothing is deleted (also not on
    /// failure, whatever `rollback_on_failure` says). Renders once either way.
    pub async fn run_or_adopt(&self, chart: &Arc<Chart>, values: Values) -> Result<Installed> {
        self.installing(chart, values, Adoption::IfLive).await
    }

    /// The record the install would write (`pending-install`, "Dry run complete"),
    /// writing nothing.
    pub async fn dry_run(
        &self,
        chart: &Arc<Chart>,
        values: Values,
        mode: DryRun,
    ) -> Result<Release> {
        crate::validate_release_name(&self.opts.name)?;
        let revision = Revision::install(1);
        let input = Input::new(chart, None, values.clone());
        let rendered = match mode {
            DryRun::Client => render::render_offline(input, &self.opts, revision).await?,
            DryRun::Server => {
                self.cfg
                    .render_in_cluster(input, &self.opts, revision)
                    .await?
                    .0
            }
        };
        Ok(dry_run_record(
            &self.opts,
            chart,
            values,
            &rendered,
            revision.number,
            Status::PendingInstall,
        ))
    }

    /// An install that always writes a record (only `Adoption::Only` may stop without).
    async fn installing(
        &self,
        chart: &Arc<Chart>,
        values: Values,
        adoption: Adoption,
    ) -> Result<Installed> {
        crate::validate_release_name(&self.opts.name)?;
        let installed = self.locked(chart, values, adoption).await?;
        installed.ok_or_else(|| Error::NotDeployed {
            release: self.opts.name.clone(),
        })
    }

    pub(crate) async fn locked(
        &self,
        chart: &Arc<Chart>,
        values: Values,
        adoption: Adoption,
    ) -> Result<Option<Installed>> {
        let opts = &self.opts;
        self.cfg
            .with_lock(&opts.namespace, &opts.name, |held| {
                self.install_locked(chart, values, adoption, held)
            })
            .await
    }

    async fn install_locked(
        &self,
        chart: &Arc<Chart>,
        values: Values,
        adoption: Adoption,
        held: Held,
    ) -> Result<Option<Installed>> {
        let opts = &self.opts;
        let store = self.cfg.release_storage(opts, &held);
        let name = &opts.name;
        store::recover_leftover(&store, name, &held).await?;
        let last = store
            .last(name)
            .await
            .map_err(|e| Error::storage(name, e))?;
        if let Some(last) = &last {
            let st = last.status();
            if !matches!(st, Status::Uninstalled | Status::Failed) {
                return Err(Error::InUse {
                    release: name.clone(),
                    version: last.version,
                    status: st.to_string(),
                });
            }
        }
        // Only a release without any record can have lost them.
        let adoption = if last.is_some() {
            Adoption::Off
        } else {
            adoption
        };
        // From the read that found the release new or ended: a release without
        // records is locked only by creating revision 1, so an installer that read
        // again here would number its record after another's and both would install.
        let version = last.as_ref().map_or(1, |l| l.version + 1);
        let (rendered, lookups) = self
            .cfg
            .render_in_cluster(
                Input::new(chart, None, values.clone()),
                opts,
                Revision::install(version),
            )
            .await?;
        let chart_rec = processed_chart_record(chart, &rendered.chart);
        let kube = self.cfg.kube();
        let (plan, hook_recs) = plan::plan_render(&kube, opts, &rendered).await?;

        let (live, read) = match adoption {
            Adoption::Off => (LiveObjects::default(), None),
            Adoption::IfLive | Adoption::Only => {
                let (live, read) =
                    ownership::live_objects(&kube, &opts.owner(), &plan.objects).await?;
                (live, Some(read))
            }
        };
        if live.owned.is_empty() && adoption == Adoption::Only {
            return Ok(None);
        }
        let adopting = !live.owned.is_empty();
        let adopt_opts;
        let run_opts = if adopting {
            adopt_opts = ownership::adoption_options(opts, &live);
            &adopt_opts
        } else {
            opts
        };

        let draft = Draft {
            opts,
            version,
            chart: chart_rec,
            config: values,
            rendered: &rendered,
            hooks: hook_recs,
        };
        let mut rel = new_release(draft, Status::PendingInstall, "Initial install underway");
        rel.labels = record_labels(&BTreeMap::new(), opts, version);
        record_lookups(&mut rel.labels, opts, lookups);
        store.create(&rel).await.map_err(|e| match e {
            release::Error::AlreadyExists(_) => crate::lock::raced(name),
            e => Error::storage(name, e),
        })?;

        let steps = Steps {
            kube: &kube,
            opts: run_opts,
            plan: &plan,
            store: &store,
        };
        let known = read.map_or(Known::Nothing, Known::Read);
        let result = steps.install(&mut rel, &held, known).await;
        let result = match result {
            Ok(created) => Ok(created),
            Err((err, created)) => Err(steps.failed(&mut rel, err, &created).await),
        };
        match (result, adopting) {
            (Ok(_), _) => Ok(Some(Installed {
                release: rel,
                adopted: adopting.then_some(live.owned.len()),
            })),
            (Err(err), false) => Err(err),
            (Err(err), true) => Err(ownership::failed(opts, &live, err)),
        }
    }
}

/// The cluster changes of one install, and how a failure is recorded and undone.
struct Steps<'s> {
    kube: &'s KubeClient,
    opts: &'s ActionOptions,
    plan: &'s Plan,
    store: &'s Storage,
}

impl Steps<'_> {
    /// Applies the plan and records `deployed`; on failure, the error and the objects
    /// this install created.
    /// `known`: the plan's objects as the adoption check read them, so they are not
    /// read again for the ownership check.
    async fn install(
        &self,
        rel: &mut Release,
        held: &Held,
        known: Known<'_>,
    ) -> std::result::Result<Vec<Object>, (Error, Vec<Object>)> {
        let mut created = Vec::new();
        match self.cluster_changes(rel, &mut created, held, known).await {
            Ok(()) => {}
            Err(e) => return Err((e, created)),
        }
        let description = self
            .opts
            .description
            .as_deref()
            .unwrap_or("Install complete");
        rel.set_status(Status::Deployed, description);
        // The last write of the action: it gives the lock back.
        held.release_with_next_write();
        match store::save(self.store, rel).await {
            Ok(()) => Ok(created),
            Err(e) => Err((e, created)),
        }
    }

    async fn cluster_changes(
        &self,
        rel: &mut Release,
        created: &mut Vec<Object>,
        held: &Held,
        known: Known<'_>,
    ) -> Result<()> {
        let (kube, opts, plan) = (self.kube, self.opts, self.plan);
        let owner = opts.owner();
        let (t, no_hooks) = (opts.timeout, opts.disable_hooks);
        plan::install_crds(kube, &owner, &plan.crds, t).await?;
        plan::run_hooks(kube, &owner, rel, &plan.hooks, "pre-install", no_hooks, t).await?;
        plan::apply_all(kube, opts, &plan.objects, created, known).await?;
        if opts.waits() {
            wait::wait_ready(kube, &owner, &plan.objects, opts.wait_for_jobs, t).await?;
        }
        plan::run_hooks(kube, &owner, rel, &plan.hooks, "post-install", no_hooks, t).await?;
        held.check()
    }

    /// Marks the record failed and, with `rollback_on_failure`, uninstalls.
    async fn failed(&self, rel: &mut Release, err: Error, created: &[Object]) -> Error {
        let name = &self.opts.name;
        let description = format!(
            "Release {name:?} failed: {}",
            release::api_error::Chain(&err)
        );
        let err = store::fail(self.store, rel, description, err).await;
        if !self.opts.rollback_on_failure {
            return err;
        }
        match self.undo(rel, created).await {
            Ok(()) => Error::RolledBack {
                release: name.clone(),
                action: "install",
                outcome: "was uninstalled".into(),
                cause: Box::new(err),
            },
            Err(undo) => Error::RollbackFailed {
                release: name.clone(),
                action: "install",
                cause: Box::new(err),
                undo: Box::new(undo),
            },
        }
    }

    /// `rollback_on_failure` after a failed install: Helm uninstalls the release. Only
    /// the objects this install created are deleted (adopted ones were live before),
    /// then the release's records are purged.
    async fn undo(&self, rel: &mut Release, created: &[Object]) -> Result<()> {
        let (kube, opts, plan) = (self.kube, self.opts, self.plan);
        let owner = opts.owner();
        let (t, no_hooks) = (opts.timeout, opts.disable_hooks);
        plan::run_hooks(kube, &owner, rel, &plan.hooks, "pre-delete", no_hooks, t).await?;
        let mut doomed: Vec<&Object> = created.iter().collect();
        sort_by_kind(&mut doomed, UNINSTALL_ORDER, |o| o.reference.kind.as_str());
        let mut deleted = Vec::new();
        for o in doomed {
            if plan::delete_unless_kept(kube, &owner, o).await? {
                deleted.push(o);
            }
        }
        wait::wait_deleted(kube, &owner, &deleted, t).await?;
        plan::run_hooks(kube, &owner, rel, &plan.hooks, "post-delete", no_hooks, t).await?;
        store::purge(self.store, &opts.name).await
    }
}

/// The record a dry run shows: what the action would write, `description` "Dry run
/// complete".
pub(crate) fn dry_run_record(
    opts: &ActionOptions,
    chart: &Chart,
    values: Values,
    rendered: &Rendered,
    version: i64,
    status: Status,
) -> Release {
    let draft = Draft {
        opts,
        version,
        chart: processed_chart_record(chart, &rendered.chart),
        config: values,
        rendered,
        hooks: rendered.hooks.iter().map(hook_record).collect(),
    };
    new_release(draft, status, "Dry run complete")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dry_run_modes_follow_helm() {
        assert_eq!(DryRun::from_flag("none"), None);
        assert_eq!(DryRun::from_flag("false"), None);
        assert_eq!(DryRun::from_flag("client"), Some(DryRun::Client));
        assert_eq!(DryRun::from_flag("true"), Some(DryRun::Client));
        assert_eq!(DryRun::from_flag("server"), Some(DryRun::Server));
    }
}

#[cfg(test)]
mod verb_tests {
    use super::*;
    use crate::testing::{chart, configmap_path, demo_chart, memory_config, opts, CONFIGMAP, NS};
    use serde_json::{json, Map};

    #[tokio::test]
    async fn installs_objects_and_records_deployed() {
        let (cfg, cluster) = memory_config();
        let rel = Install::new(&cfg, opts("web"))
            .run(&demo_chart(), Map::new())
            .await
            .expect("install");
        assert_eq!((rel.version, rel.status()), (1, Status::Deployed));
        let cm = cluster.object(&configmap_path("web-cfg")).expect("applied");
        assert_eq!(cm["data"]["greeting"], "hello");
        assert_eq!(
            cm["metadata"]["annotations"]["meta.helm.sh/release-name"],
            "web"
        );
        let stored = cfg.storage(NS).get("web", 1).await.expect("record");
        assert_eq!(stored.status(), Status::Deployed);
        // The name is taken now.
        let err = Install::new(&cfg, opts("web"))
            .run(&demo_chart(), Map::new())
            .await
            .expect_err("in use");
        assert!(matches!(err, Error::InUse { version: 1, .. }), "{err}");
    }

    #[tokio::test]
    async fn an_interrupted_install_is_recovered_and_installed_again() {
        let (cfg, _) = memory_config();
        let mut crashed = Release {
            name: "web".into(),
            namespace: NS.into(),
            version: 1,
            ..Release::default()
        };
        crashed.set_status(Status::PendingInstall, "Initial install underway");
        crate::testing::leave_crashed(&cfg, &crashed).await;
        let rel = Install::new(&cfg, opts("web"))
            .run(&demo_chart(), Map::new())
            .await
            .expect("install proceeds");
        assert_eq!(rel.version, 2);
        let old = cfg.storage(NS).get("web", 1).await.expect("v1");
        assert_eq!(old.status(), Status::Failed);
    }

    #[tokio::test]
    async fn a_refused_object_leaves_no_record_and_no_object() {
        let (cfg, cluster) = memory_config();
        let mut o = opts("web");
        o.transform = Some(crate::Transform::new(|_, r| {
            Err(format!("{r} is not allowed"))
        }));
        let err = Install::new(&cfg, o)
            .run(&demo_chart(), Map::new())
            .await
            .expect_err("refused");
        assert!(matches!(err, Error::Transform { .. }), "{err}");
        assert!(cfg.storage(NS).last("web").await.unwrap().is_none());
        assert!(cluster.requests("PATCH ").is_empty());
    }

    #[tokio::test]
    async fn dry_runs_write_nothing() {
        let (cfg, cluster) = memory_config();
        let values = json!({"greeting": "hi"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let rel = Install::new(&cfg, opts("web"))
            .dry_run(&demo_chart(), values, DryRun::Client)
            .await
            .expect("dry run");
        assert_eq!(rel.status(), Status::PendingInstall);
        assert_eq!(
            rel.info.as_ref().map(|i| i.description.as_str()),
            Some("Dry run complete")
        );
        assert!(
            rel.manifest.contains("greeting: \"hi\""),
            "{}",
            rel.manifest
        );
        assert!(cfg.storage(NS).last("web").await.unwrap().is_none());
        assert!(cluster.requests("").is_empty(), "client mode asks nothing");
        Install::new(&cfg, opts("web"))
            .dry_run(&demo_chart(), Map::new(), DryRun::Server)
            .await
            .expect("server dry run");
        assert!(cluster.requests("PATCH ").is_empty());
        assert!(cfg.storage(NS).last("web").await.unwrap().is_none());
    }

    #[tokio::test]
    async fn the_record_keeps_the_chart_as_its_render_processed_it() {
        let file = |name: &str, text: &str| chart::loader::BufferedFile {
            name: name.into(),
            data: text.as_bytes().to_vec(),
        };
        let loaded = chart::loader::load_files(vec![
            file(
                "Chart.yaml",
                "apiVersion: v2\nname: app\nversion: 1.0.0\ndependencies:\n\
                 - name: sub\n  version: '*'\n  alias: one\n  import-values: [data]\n\
                 - name: sub\n  version: '*'\n  alias: two\n  condition: two.enabled\n",
            ),
            file("values.yaml", "greeting: hello\ntwo:\n  enabled: false\n"),
            file("templates/cm.yaml", CONFIGMAP),
            file(
                "charts/sub/Chart.yaml",
                "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
            ),
            file(
                "charts/sub/values.yaml",
                "exports:\n  data:\n    imported: here\n",
            ),
        ])
        .expect("chart loads");
        let c = Arc::new(loaded);
        let (cfg, _) = memory_config();
        let rel = Install::new(&cfg, opts("app"))
            .dry_run(&c, Map::new(), DryRun::Client)
            .await
            .expect("dry run");
        let rec = rel.chart.expect("the chart is recorded");
        let deps: Vec<(&str, bool)> = rec
            .metadata
            .as_ref()
            .map(|m| {
                m.dependencies
                    .iter()
                    .map(|d| (d.name.as_str(), d.enabled))
                    .collect()
            })
            .unwrap_or_default();
        // As Helm records it: the disabled alias gone, the other under its alias.
        assert_eq!(deps, [("one", true)]);
        let values = serde_json::Value::Object(rec.values.unwrap_or_default());
        assert_eq!(values["imported"], json!("here"));
        assert_eq!(values["one"]["exports"]["data"]["imported"], json!("here"));
        assert_eq!(rec.templates.len(), 1);
        // The shared chart is as loaded.
        assert_eq!(c.metadata.deps().count(), 2);
        assert!(c.values.get("imported").is_none());
    }

    #[tokio::test]
    async fn lost_records_are_adopted_from_the_same_render() {
        let (cfg, cluster) = memory_config();
        let hook = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-hook\n  annotations:\n    helm.sh/hook: pre-install\n";
        let c = chart(
            "greeting: hello\n",
            &[("cm.yaml", CONFIGMAP), ("hook.yaml", hook)],
        );
        // Nothing live: a normal install, hooks included.
        let fresh = Install::new(&cfg, opts("fresh"))
            .run_or_adopt(&c, Map::new())
            .await
            .expect("install");
        assert_eq!(fresh.adopted, None);
        assert!(cluster.object(&configmap_path("fresh-hook")).is_some());

        cluster.put(
            &configmap_path("web-cfg"),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-cfg",
                "namespace": NS, "annotations": {"meta.helm.sh/release-name": "web",
                "meta.helm.sh/release-namespace": NS}}, "data": {"greeting": "old"}}),
        );
        let uid = cluster.object(&configmap_path("web-cfg")).unwrap()["metadata"]["uid"].clone();
        let out = Install::new(&cfg, opts("web"))
            .run_or_adopt(&c, Map::new())
            .await
            .expect("adopt");
        assert_eq!(out.adopted, Some(1));
        assert_eq!(
            out.release.info.as_ref().map(|i| i.description.as_str()),
            Some("Adopted 1 existing objects after the release records were lost")
        );
        assert!(
            cluster.object(&configmap_path("web-hook")).is_none(),
            "no hook ran"
        );
        let cm = cluster.object(&configmap_path("web-cfg")).unwrap();
        assert_eq!(cm["metadata"]["uid"], uid, "patched in place");
        assert_eq!(cm["data"]["greeting"], "hello");
        let renders = cluster.requests("GET /api/v1/namespaces/default/configmaps/web-cfg");
        assert!(!renders.is_empty());
    }

    #[tokio::test]
    async fn another_releases_object_stops_adoption_and_nothing_is_deleted() {
        let (cfg, cluster) = memory_config();
        let theirs = |name: &str, owner: &str| {
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name,
                "namespace": NS, "annotations": {"meta.helm.sh/release-name": owner,
                "meta.helm.sh/release-namespace": NS}}})
        };
        let svc = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-other\n";
        let c = chart(
            "greeting: hello\n",
            &[("cm.yaml", CONFIGMAP), ("b.yaml", svc)],
        );
        cluster.put(&configmap_path("web-cfg"), theirs("web-cfg", "web"));
        cluster.put(&configmap_path("web-other"), theirs("web-other", "other"));
        let live = crate::Adopt::new(&cfg, opts("web"))
            .live_objects(&c, Map::new())
            .await
            .expect("look");
        assert_eq!((live.owned.len(), live.foreign.len()), (1, 1));
        let err = crate::Adopt::new(&cfg, opts("web"))
            .run(&c, Map::new())
            .await
            .expect_err("conflict");
        assert!(matches!(err, Error::Adopt { found: 1, .. }), "{err}");
        assert!(err.to_string().contains("nothing was deleted"), "{err}");
        assert!(cluster.requests("DELETE ").is_empty());
        // Adopting needs live objects of the release: without, nothing is written.
        let none = crate::Adopt::new(&cfg, opts("new"))
            .run(&c, Map::new())
            .await
            .expect("nothing to adopt");
        assert!(none.is_none());
        assert!(cfg.storage(NS).last("new").await.unwrap().is_none());
    }
}
