//! The machinery the verbs share: a [`Plan`] (every object and hook of a release
//! parsed, resolved and transformed before anything is written), applying it with the
//! ownership check first, CRDs from `crds/`, hooks, and deleting what a new revision
//! dropped.

use std::collections::HashSet;
use std::time::Duration;

use chart::manifest::UNINSTALL_ORDER;
use chart::render::Rendered;
use kube::api::DynamicObject;
use release::record::Release;

use crate::error::{Error, Result};
use crate::kube::hooks;
use crate::kube::{check_live_ownership, condition, is_kept, KubeClient, Object, Owner};
use crate::options::ActionOptions;
use crate::record::{hook_record, manifest_documents, sort_by_kind};

/// Runs the caller's transform on a prepared object and re-reads where it now lives.
pub(crate) fn transform(opts: &ActionOptions, o: &mut Object) -> Result<()> {
    let Some(t) = &opts.transform else {
        return Ok(());
    };
    t.apply(&mut o.object, &o.reference)
        .map_err(|message| Error::Transform {
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
pub(crate) async fn prepare_all(
    kube: &KubeClient,
    owner: &Owner,
    docs: &[(String, String)],
) -> Result<Vec<Object>> {
    let mut out = Vec::with_capacity(docs.len());
    for (source, doc) in docs {
        if let Some(o) = kube.prepare(owner, source, doc).await? {
            out.push(o);
        }
    }
    Ok(out)
}

/// Everything an action applies, parsed, resolved and transformed up front.
pub(crate) struct Plan {
    /// The chart's `crds/` objects (not transformed).
    pub(crate) crds: Vec<Object>,
    /// The manifest's objects, in apply order.
    pub(crate) objects: Vec<Object>,
    /// `hooks[i]`'s object; `None` for an empty hook document.
    pub(crate) hooks: Vec<Option<Object>>,
}

/// Builds the [`Plan`]; objects of kinds the chart's CRDs define resolve through those
/// CRDs, so nothing has to be installed to check the whole release.
pub(crate) async fn plan(
    kube: &KubeClient,
    opts: &ActionOptions,
    crds: &[(String, chart::loader::File)],
    docs: &[(String, String)],
    hooks: &[release::Hook],
) -> Result<Plan> {
    let owner = opts.owner();
    let mut crd_docs = Vec::new();
    for (source, file) in crds {
        for doc in chart::manifest::split_documents(&file.text()) {
            if let Some(obj) = KubeClient::parse_document(&owner.name, source, &doc)? {
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

/// The plan of a render, and its hooks in the record's shape.
pub(crate) async fn plan_render(
    kube: &KubeClient,
    opts: &ActionOptions,
    rendered: &Rendered,
) -> Result<(Plan, Vec<release::Hook>)> {
    let hooks: Vec<_> = rendered.hooks.iter().map(hook_record).collect();
    let plan = plan(kube, opts, &rendered.crds, &rendered_docs(rendered), &hooks).await?;
    Ok((plan, hooks))
}

/// Prepares each hook's object, transformed when `opts` is given.
pub(crate) async fn prepare_hooks(
    kube: &KubeClient,
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
pub(crate) fn rendered_docs(rendered: &Rendered) -> Vec<(String, String)> {
    rendered
        .manifests
        .iter()
        .map(|m| (m.source.clone(), m.content.clone()))
        .collect()
}

/// Runs the hooks of `event` unless hooks are disabled.
pub(crate) async fn run_hooks(
    kube: &KubeClient,
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

/// What an action knows of the live objects before it applies them.
pub(crate) enum Known<'a> {
    /// Nothing: every object is read first (the ownership check needs it).
    Nothing,
    /// Each object as just read (in the plan's order), e.g. by the adoption check.
    Read(Vec<Option<DynamicObject>>),
    /// The objects of the release's previous revisions: the release owns them, so
    /// they are applied without reading them first (Helm's upgrade checks only the
    /// objects it creates); the others are read.
    Release(&'a [Object]),
}

/// Checks ownership of all objects first, so a conflict leaves the cluster untouched,
/// then applies them in order (replacing unchangeable ones with `force`). Pushes the
/// objects that did not exist before onto `created` (of those it read). An object
/// applied unread whose answer shows ownership of other writers to take over (see
/// `kube::managers`) is taken over and applied once more, so the result is the same
/// as reading it first, at two more requests only in that case.
pub(crate) async fn apply_all(
    kube: &KubeClient,
    opts: &ActionOptions,
    objects: &[Object],
    created: &mut Vec<Object>,
    known: Known<'_>,
) -> Result<()> {
    let owner = opts.owner();
    let (mut read, ours): (Vec<Option<DynamicObject>>, HashSet<_>) = match known {
        Known::Read(read) if read.len() == objects.len() => (read, HashSet::new()),
        Known::Release(old) => (
            Vec::new(),
            old.iter().map(|o| o.reference.identity()).collect(),
        ),
        _ => (Vec::new(), HashSet::new()),
    };
    let prefetched = !read.is_empty() || objects.is_empty();
    // `None`: applied unread.
    let mut live: Vec<Option<Option<DynamicObject>>> = Vec::with_capacity(objects.len());
    for (i, o) in objects.iter().enumerate() {
        let found = if prefetched {
            read.get_mut(i).and_then(Option::take)
        } else if ours.contains(&o.reference.identity()) {
            live.push(None);
            continue;
        } else {
            kube.get(&owner, o).await?
        };
        if let Some(found) = &found {
            check_live_ownership(&owner, o, found, &opts.apply())?;
        }
        live.push(Some(found));
    }
    for (o, live) in objects.iter().zip(live) {
        match live {
            Some(live) => {
                kube.apply_or_replace(&owner, o, live.as_ref(), opts.force, opts.timeout)
                    .await?;
                if live.is_none() {
                    created.push(o.clone());
                }
            }
            None => {
                let applied = kube
                    .apply_or_replace(&owner, o, None, opts.force, opts.timeout)
                    .await?;
                if kube.take_over_fields(&owner, o, &applied).await?.is_some() {
                    kube.apply(&owner, o, true).await?;
                }
            }
        }
    }
    Ok(())
}

/// Installs CRDs that do not exist yet (Helm never updates CRDs) and waits until
/// each is Established.
pub(crate) async fn install_crds(
    kube: &KubeClient,
    owner: &Owner,
    objects: &[Object],
    timeout: Duration,
) -> Result<()> {
    let mut created = Vec::new();
    for o in objects {
        let absent = kube.get(owner, o).await?.is_none();
        if absent {
            kube.apply(owner, o, false).await?;
        }
        created.push(absent);
    }
    for (o, created) in objects.iter().zip(created) {
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
            if created {
                kube.crd_installed(&o.object).await;
            }
        }
    }
    Ok(())
}

/// Deletes the objects of `old` that `new` no longer has, unless they are kept.
pub(crate) async fn delete_stale(
    kube: &KubeClient,
    owner: &Owner,
    old: &[Object],
    new: &[Object],
) -> Result<()> {
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
pub(crate) async fn delete_unless_kept(
    kube: &KubeClient,
    owner: &Owner,
    o: &Object,
) -> Result<bool> {
    if is_kept(&o.object) {
        return Ok(false);
    }
    match kube.get(owner, o).await? {
        Some(live) if !is_kept(&live) => kube.delete(owner, o).await,
        _ => Ok(false),
    }
}

/// The objects of a stored manifest whose kinds the cluster still serves.
pub(crate) async fn stored_objects(
    kube: &KubeClient,
    owner: &Owner,
    manifest: &str,
) -> Result<Vec<Object>> {
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
