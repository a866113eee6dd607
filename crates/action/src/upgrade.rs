//! `helm upgrade`: render the next revision, check and transform every object, record
//! `pending-upgrade`, run pre-upgrade hooks, apply the new manifest, delete what it
//! dropped (unless kept), wait (with `wait`), run post-upgrade hooks, record `deployed`
//! and supersede the previous revision. With `rollback_on_failure` a failure rolls
//! back to the previously deployed revision.
//!
//! Which values an upgrade renders with follows Helm's `--reset-values`,
//! `--reuse-values` and `--reset-then-reuse-values` ([`ReuseValues`]).

use std::sync::Arc;

use chart::loader::Chart;
use chart::values::Values;
use chart::values::{coalesce_tables, Warnings};
use release::record::{Release, Status};
use release::Storage;

use crate::config::ActionConfig;
use crate::error::{Error, Result};
use crate::install::{dry_run_record, DryRun};
use crate::kube::KubeClient;
use crate::lock::Held;
use crate::options::ActionOptions;
use crate::plan;
use crate::record::{new_release, processed_chart_record, record_labels, record_lookups, Draft};
use crate::render::{self, Input, Revision};
use crate::rollback;
use crate::store;
use crate::transition::{Change, Steps};
use crate::UpgradeDiff;

/// Which values an upgrade uses besides the given ones (Helm's `reuseValues`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReuseValues {
    /// The given values only, whatever the last release had (`--reset-values`; what
    /// the operator does, since a CR's spec is the whole of its values).
    #[default]
    Reset,
    /// Helm's default without flags: the given values, or the last release's when
    /// none are given.
    IfNoneGiven,
    /// `--reuse-values`: the given values over the last release's, and the *last*
    /// release's chart defaults instead of the new chart's.
    Reuse,
    /// `--reset-then-reuse-values`: the given values over the last release's, with the
    /// new chart's defaults.
    ResetThenReuse,
}

impl ReuseValues {
    /// The choice Helm's flags make: `--reset-values` wins over `--reuse-values`, which
    /// wins over `--reset-then-reuse-values`; no flag is [`ReuseValues::IfNoneGiven`].
    pub fn from_flags(reset: bool, reuse: bool, reset_then_reuse: bool) -> ReuseValues {
        if reset {
            ReuseValues::Reset
        } else if reuse {
            ReuseValues::Reuse
        } else if reset_then_reuse {
            ReuseValues::ResetThenReuse
        } else {
            ReuseValues::IfNoneGiven
        }
    }

    /// The values the upgrade renders with, given the `current` release.
    pub fn values(self, given: Values, current: &Release) -> Values {
        match self {
            ReuseValues::Reset => given,
            ReuseValues::Reuse | ReuseValues::ResetThenReuse => {
                let mut vals = given;
                coalesce_tables(&mut vals, current.config.clone(), &mut Warnings(Vec::new()));
                vals
            }
            ReuseValues::IfNoneGiven if given.is_empty() && !current.config.is_empty() => {
                current.config.clone()
            }
            ReuseValues::IfNoneGiven => given,
        }
    }

    /// With `--reuse-values`, Helm renders the new chart with the *old* release's
    /// coalesced values as the chart's defaults: the last chart's `values.yaml` with
    /// the last user values over it. New defaults of the new chart version are
    /// therefore not seen, which is why Helm added `--reset-then-reuse-values`.
    pub(crate) fn chart_defaults(self, current: &Release) -> Option<Values> {
        if self != ReuseValues::Reuse {
            return None;
        }
        let old_defaults = current.chart.as_ref()?.values.clone().unwrap_or_default();
        let mut vals = current.config.clone();
        coalesce_tables(&mut vals, old_defaults, &mut Warnings(Vec::new()));
        Some(vals)
    }

    /// What to render `chart` with, given the `current` release (none: as given): the
    /// values, and the chart's defaults when they are not its own. Helm sets the
    /// defaults on (its copy of) the chart; the chart here is shared, so they go beside.
    pub(crate) fn apply(
        self,
        chart: &Arc<Chart>,
        given: Values,
        current: Option<&Release>,
    ) -> Input {
        let Some(current) = current else {
            return Input::new(chart, None, given);
        };
        let defaults = self.chart_defaults(current);
        Input::new(chart, defaults, self.values(given, current))
    }
}

/// The `upgrade` verb.
pub struct Upgrade<'a> {
    pub(crate) cfg: &'a ActionConfig,
    pub(crate) opts: ActionOptions,
    pub(crate) reuse: ReuseValues,
}

impl<'a> Upgrade<'a> {
    pub fn new(cfg: &'a ActionConfig, opts: ActionOptions) -> Upgrade<'a> {
        Upgrade {
            cfg,
            opts,
            reuse: ReuseValues::default(),
        }
    }

    /// Which of the last release's values to reuse (default: none).
    pub fn reuse_values(mut self, reuse: ReuseValues) -> Upgrade<'a> {
        self.reuse = reuse;
        self
    }

    /// Upgrades the release to `chart` with `values`.
    pub async fn run(&self, chart: &Arc<Chart>, values: Values) -> Result<Release> {
        let opts = &self.opts;
        crate::validate_release_name(&opts.name)?;
        self.cfg
            .with_lock(&opts.namespace, &opts.name, |held| {
                self.upgrade_locked(chart, values, held)
            })
            .await
    }

    /// The record the upgrade would write (`pending-upgrade`, "Dry run complete") and
    /// how it compares with the deployed release (rendered against the cluster, as the
    /// real upgrade would), writing nothing.
    pub async fn dry_run(
        &self,
        chart: &Arc<Chart>,
        values: Values,
        mode: DryRun,
    ) -> Result<(Release, UpgradeDiff)> {
        let opts = &self.opts;
        crate::validate_release_name(&opts.name)?;
        let store = self.cfg.storage(&opts.namespace);
        let name = &opts.name;
        let current = match store.deployed(name).await {
            Ok(Some(r)) => Some(r),
            _ => store.last(name).await.ok().flatten(),
        };
        let input = self.reuse.apply(chart, values, current.as_ref());
        let values = input.values.clone();
        let version = store
            .next_version(name)
            .await
            .map_err(|e| Error::storage(name, e))?;
        let revision = Revision::upgrade(version);
        let (shown, diff) = match mode {
            DryRun::Server => {
                let (rendered, _) = self.cfg.render_in_cluster(input, opts, revision).await?;
                let diff = self.diff_rendered(&store, &values, &rendered).await?;
                (rendered, diff)
            }
            DryRun::Client => {
                let shown = render::render_offline(input.clone(), opts, revision).await?;
                let (rendered, _) = self.cfg.render_in_cluster(input, opts, revision).await?;
                (shown, self.diff_rendered(&store, &values, &rendered).await?)
            }
        };
        let record = dry_run_record(opts, chart, values, &shown, version, Status::PendingUpgrade);
        Ok((record, diff))
    }

    async fn upgrade_locked(
        &self,
        chart: &Arc<Chart>,
        values: Values,
        held: Held,
    ) -> Result<Release> {
        let opts = &self.opts;
        let store = self.cfg.release_storage(opts, &held);
        let name = &opts.name;
        store::recover_leftover(&store, name, &held).await?;
        let last = store::current(&store, name).await?;
        let previous = store::deployed_known(&store, name, &[&last])
            .await?
            .ok_or_else(|| Error::NotDeployed {
                release: name.clone(),
            })?;
        let version = last.version + 1;
        let input = self.reuse.apply(chart, values, Some(&previous));
        let values = input.values.clone();
        let (rendered, lookups) = self
            .cfg
            .render_in_cluster(input, opts, Revision::upgrade(version))
            .await?;
        let chart_rec = processed_chart_record(chart, &rendered.chart);
        let kube = self.cfg.kube();
        let owner = opts.owner();
        let (plan, hook_recs) = plan::plan_render(&kube, opts, &rendered).await?;
        let old = plan::stored_objects(&kube, &owner, &previous.manifest).await?;

        let draft = Draft {
            opts,
            version,
            chart: chart_rec,
            config: values,
            rendered: &rendered,
            hooks: hook_recs,
        };
        let mut rel = new_release(draft, Status::PendingUpgrade, "Preparing upgrade");
        if let Some(info) = rel.info.as_mut() {
            info.first_deployed = previous.info.as_ref().and_then(|i| i.first_deployed);
        }
        rel.labels = record_labels(&last.labels, opts, version);
        record_lookups(&mut rel.labels, opts, lookups);
        store
            .create(&rel)
            .await
            .map_err(|e| Error::storage(name, e))?;

        let change = Change {
            kube: &kube,
            opts,
            plan: &plan,
            old: &old,
            steps: Steps::UPGRADE,
        };
        let result = match change.run(&mut rel, &held).await {
            Ok(()) => {
                let description = opts.description.as_deref().unwrap_or("Upgrade complete");
                store::finish_deployed(&store, &mut rel, description, &held, &[&previous]).await
            }
            Err(e) => Err(e),
        };
        let Err(err) = result else {
            return Ok(rel);
        };
        let description = format!(
            "Upgrade {name:?} failed: {}",
            release::api_error::Chain(&err)
        );
        let err = store::fail(&store, &mut rel, description, err).await;
        if !opts.rollback_on_failure {
            return Err(err);
        }
        self.undo(&store, &kube, previous.version, err, &held).await
    }

    /// `rollback_on_failure`: rolls back to revision `to`, waiting for it.
    async fn undo(
        &self,
        store: &Storage,
        kube: &KubeClient,
        to: i64,
        err: Error,
        held: &Held,
    ) -> Result<Release> {
        let name = &self.opts.name;
        let mut undo_opts = self.opts.clone();
        undo_opts.rollback_on_failure = false;
        undo_opts.wait = true;
        undo_opts.description = None;
        match rollback::rollback_steps(store, kube, to, &undo_opts, held).await {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn obj(v: Value) -> Values {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn flags_pick_helms_rule() {
        assert_eq!(
            ReuseValues::from_flags(false, false, false),
            ReuseValues::IfNoneGiven
        );
        assert_eq!(
            ReuseValues::from_flags(true, true, true),
            ReuseValues::Reset
        );
        assert_eq!(
            ReuseValues::from_flags(false, true, true),
            ReuseValues::Reuse
        );
        assert_eq!(
            ReuseValues::from_flags(false, false, true),
            ReuseValues::ResetThenReuse
        );
    }

    #[test]
    fn upgrade_values_follow_helm() {
        let cur = Release {
            config: obj(json!({"a": 1, "b": {"c": 2}})),
            ..Release::default()
        };
        let given = obj(json!({"b": {"d": 3}}));
        // No values given: the last release's are reused.
        assert_eq!(
            ReuseValues::IfNoneGiven.values(Values::new(), &cur),
            cur.config
        );
        // Values given: only those.
        assert_eq!(ReuseValues::IfNoneGiven.values(given.clone(), &cur), given);
        // --reuse-values merges the given ones over the last ones.
        let merged = ReuseValues::Reuse.values(given.clone(), &cur);
        assert_eq!(
            Value::Object(merged),
            json!({"a": 1, "b": {"c": 2, "d": 3}})
        );
        let merged = ReuseValues::ResetThenReuse.values(given, &cur);
        assert_eq!(
            Value::Object(merged),
            json!({"a": 1, "b": {"c": 2, "d": 3}})
        );
        // --reset-values (and the operator) drop the last ones even when nothing is given.
        assert!(ReuseValues::Reset.values(Values::new(), &cur).is_empty());
    }

    #[test]
    fn reuse_values_renders_with_the_last_releases_defaults() {
        let cur = Release {
            config: obj(json!({"replicas": 3})),
            chart: Some(release::record::Chart {
                values: Some(obj(json!({"replicas": 1, "image": "web:1"}))),
                ..Default::default()
            }),
            ..Release::default()
        };
        let defaults = ReuseValues::Reuse.chart_defaults(&cur);
        assert_eq!(
            defaults.map(Value::Object),
            Some(json!({"replicas": 3, "image": "web:1"}))
        );
        // The new chart's own defaults are used otherwise.
        for reuse in [
            ReuseValues::IfNoneGiven,
            ReuseValues::ResetThenReuse,
            ReuseValues::Reset,
        ] {
            assert_eq!(reuse.chart_defaults(&cur), None, "{reuse:?}");
        }
        let chart = Arc::new(Chart {
            values: obj(json!({"replicas": 5})),
            ..Chart::default()
        });
        let input = ReuseValues::Reuse.apply(&chart, Values::new(), Some(&cur));
        assert_eq!(
            input.chart_values.map(Value::Object),
            Some(json!({"replicas": 3, "image": "web:1"}))
        );
        assert_eq!(Value::Object(input.values), json!({"replicas": 3}));
        // Without a release, the chart's own defaults.
        let kept = ReuseValues::Reuse.apply(&chart, Values::new(), None);
        assert!(kept.chart_values.is_none());
        assert!(
            Arc::ptr_eq(&kept.chart, &chart),
            "the chart is shared, not copied"
        );
    }

    mod verbs {
        use super::*;
        use crate::testing::{configmap_path, demo_chart, memory_config, opts, NS};
        use crate::Install;

        #[tokio::test]
        async fn upgrades_reuse_values_as_asked() {
            let (cfg, cluster) = memory_config();
            let mut o = opts("web");
            o.labels.insert("team".into(), "a".into());
            Install::new(&cfg, o)
                .run(&demo_chart(), obj(json!({"greeting": "hi"})))
                .await
                .expect("install");
            // The operator's way: the given values only.
            let rel = Upgrade::new(&cfg, opts("web"))
                .run(&demo_chart(), Values::new())
                .await
                .expect("upgrade");
            assert_eq!(rel.version, 2);
            assert!(rel.config.is_empty());
            assert_eq!(rel.labels.get("team").map(String::as_str), Some("a"));
            let cm = cluster.object(&configmap_path("web-cfg")).unwrap();
            assert_eq!(cm["data"]["greeting"], "hello");
            // Helm's CLI default: no values given reuses the last ones.
            Upgrade::new(&cfg, opts("web"))
                .run(&demo_chart(), obj(json!({"greeting": "again"})))
                .await
                .expect("upgrade");
            let rel = Upgrade::new(&cfg, opts("web"))
                .reuse_values(ReuseValues::IfNoneGiven)
                .run(&demo_chart(), Values::new())
                .await
                .expect("upgrade");
            assert_eq!(Value::Object(rel.config), json!({"greeting": "again"}));
            let old = cfg.storage(NS).get("web", 3).await.unwrap();
            assert_eq!(old.status(), Status::Superseded);
        }

        #[tokio::test]
        async fn dry_runs_compare_without_writing() {
            let (cfg, cluster) = memory_config();
            Install::new(&cfg, opts("web"))
                .run(&demo_chart(), Values::new())
                .await
                .expect("install");
            let applied = cluster.requests("PATCH ").len();
            let up = Upgrade::new(&cfg, opts("web"));
            let (rel, diff) = up
                .dry_run(&demo_chart(), Values::new(), DryRun::Client)
                .await
                .expect("dry run");
            assert_eq!((rel.version, rel.status()), (2, Status::PendingUpgrade));
            assert!(!diff.changed, "same chart, same values");
            let (_, diff) = up
                .dry_run(&demo_chart(), obj(json!({"greeting": "x"})), DryRun::Server)
                .await
                .expect("dry run");
            assert!(diff.changed);
            assert!(
                !up.diff(&demo_chart(), Values::new())
                    .await
                    .expect("diff")
                    .changed
            );
            assert_eq!(cluster.requests("PATCH ").len(), applied, "nothing applied");
            assert_eq!(cfg.storage(NS).history_meta("web").await.unwrap().len(), 1);
        }

        #[tokio::test]
        async fn an_upgrade_needs_a_deployed_release() {
            let (cfg, _) = memory_config();
            let err = Upgrade::new(&cfg, opts("none"))
                .run(&demo_chart(), Values::new())
                .await
                .expect_err("nothing deployed");
            assert!(matches!(err, Error::NotDeployed { .. }), "{err}");
        }
    }
}
