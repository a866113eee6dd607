//! Moves release state kept by older setups into Helm-format Secrets in the CR's
//! namespace: records of Helm's ConfigMap driver, and a whole release kept in the CR's
//! `status` by early operator-sdk helm-operators (see [`legacy`]).
//!
//! Every move follows one protocol: write the Secret, read it back and decode it,
//! compare it with the source, and only then remove the old copy. A Secret that already
//! holds the same revision with different content is never overwritten; the migration
//! stops with an error naming both objects. Each step is idempotent, so a migration
//! interrupted anywhere resumes on the next call with nothing lost. With nothing to
//! migrate a call costs one label-selected list of ConfigMaps.

mod legacy;

use std::fmt;

use kube::api::{Api, ApiResource, Patch, PatchParams};
use kube::Client;
use release::cache::RecordCaches;
use release::driver::{selector, Driver, OWNER_HELM};
use release::record::{Release, Status};
use release::{make_key, Storage, StorageDriver};
use serde_json::{json, Map, Value};

use legacy::Location;

use crate::cr::CustomResource;

/// What one call of [`migrate`] moved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MigrationReport {
    /// Revisions written as Secrets from ConfigMap records.
    pub copied: Vec<i64>,
    /// ConfigMaps deleted after their Secret copy was verified.
    pub removed_configmaps: Vec<String>,
    /// ConfigMap records that cannot be decoded; left in place, never deleted.
    pub undecodable_configmaps: Vec<String>,
    /// Revisions written from a legacy release in the CR's status.
    pub from_status: Vec<i64>,
    /// Whether the legacy release was removed from the CR's status.
    pub status_cleared: bool,
}

impl MigrationReport {
    /// Whether nothing was found to migrate.
    pub fn is_empty(&self) -> bool {
        self == &MigrationReport::default()
    }
}

impl fmt::Display for MigrationReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if !self.copied.is_empty() {
            parts.push(format!(
                "copied revisions {:?} from ConfigMaps to Secrets",
                self.copied
            ));
        }
        if !self.removed_configmaps.is_empty() {
            parts.push(format!(
                "removed {} verified ConfigMap record(s)",
                self.removed_configmaps.len()
            ));
        }
        if !self.undecodable_configmaps.is_empty() {
            parts.push(format!(
                "left undecodable ConfigMap record(s) {:?} in place",
                self.undecodable_configmaps
            ));
        }
        if !self.from_status.is_empty() {
            parts.push(format!(
                "wrote revision(s) {:?} from the custom resource's status",
                self.from_status
            ));
        }
        if self.status_cleared {
            parts.push("removed the release from the custom resource's status".into());
        }
        if parts.is_empty() {
            f.write_str("nothing to migrate")
        } else {
            f.write_str(&parts.join("; "))
        }
    }
}

/// Why release state could not be migrated. Nothing has been deleted when one of these
/// is returned for the object it names.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// The revision exists as a Secret with different content.
    #[error(
        "release {namespace}/{release} revision {revision}: Secret {namespace}/{secret} already holds a different record than {source_desc}; nothing was overwritten or deleted. Compare the two, delete the wrong one, and the next reconcile finishes the migration"
    )]
    Conflict {
        release: String,
        namespace: String,
        revision: i64,
        secret: String,
        source_desc: String,
    },
    /// The revision exists as a Secret that cannot be decoded.
    #[error(
        "release {namespace}/{release} revision {revision}: Secret {namespace}/{secret} exists but cannot be read ({reason}), so {source_desc} was not migrated and was left in place. Delete or repair that Secret"
    )]
    UnreadableSecret {
        release: String,
        namespace: String,
        revision: i64,
        secret: String,
        source_desc: String,
        reason: String,
    },
    /// The written Secret did not read back as the source record.
    #[error(
        "release {namespace}/{release} revision {revision}: Secret {namespace}/{secret} was written from {source_desc} but reads back differently; the source was left in place"
    )]
    VerifyFailed {
        release: String,
        namespace: String,
        revision: i64,
        secret: String,
        source_desc: String,
    },
    /// The CR's status holds a release that cannot be converted.
    #[error(
        "{cr}: {location} holds a release rudder cannot read ({reason}); fix or remove that field (kubectl edit --subresource=status) and the next reconcile continues"
    )]
    Legacy {
        cr: String,
        location: String,
        reason: String,
    },
    /// Reading or writing records failed.
    #[error("release {namespace}/{release}: {action}")]
    Storage {
        release: String,
        namespace: String,
        action: String,
        #[source]
        source: release::Error,
    },
    /// Patching the CR's status failed.
    #[error("{cr}: cannot remove the migrated release from its status")]
    Status {
        cr: String,
        #[source]
        source: Box<kube::Error>,
    },
    /// The API server accepted the status patch but the release is still there.
    #[error("{cr}: the migrated release is still in {location} after patching the status")]
    StatusNotCleared { cr: String, location: String },
}

/// Migrates the release state of `release` (the CR `cr`) into Secrets in `namespace`.
/// Idempotent; with nothing to migrate it costs one list of ConfigMaps.
pub async fn migrate(
    client: &Client,
    cr: &CustomResource,
    cr_resource: &ApiResource,
    release: &str,
    namespace: &str,
) -> Result<MigrationReport, MigrateError> {
    let records = Records::direct(client);
    migrate_with(&records, cr, cr_resource, release, namespace, None).await
}

/// Where a migration reads and writes records: through the operator's record
/// caches (so its writes are ones later reads wait for, and finding nothing to move
/// costs no request), or straight from the API server.
pub(crate) struct Records<'a> {
    pub(crate) client: &'a Client,
    pub(crate) caches: RecordCaches,
}

impl<'a> Records<'a> {
    pub(crate) fn direct(client: &'a Client) -> Records<'a> {
        Records {
            client,
            caches: RecordCaches::default(),
        }
    }

    fn storage(&self, driver: StorageDriver, namespace: &str) -> Storage {
        driver.cached_storage(self.client, namespace, &self.caches)
    }
}

/// [`migrate`] through `records`, with the watch's chart to describe a legacy status
/// release whose own record lacks chart metadata.
pub(crate) async fn migrate_with(
    records: &Records<'_>,
    cr: &CustomResource,
    cr_resource: &ApiResource,
    release: &str,
    namespace: &str,
    chart: Option<&chart::loader::Chart>,
) -> Result<MigrationReport, MigrateError> {
    let mut report = MigrationReport::default();
    let copied = copy_records(records, release, namespace).await?;
    report.copied = copied.copied;
    report.undecodable_configmaps = copied.undecodable;
    report.removed_configmaps =
        remove_configmap_records(records, release, namespace, &copied.verified).await?;

    let client = records.client;
    let written = status_records(records, cr, cr_resource, release, namespace, chart).await?;
    if !written.is_empty() {
        report.from_status = written.iter().map(|(_, v)| *v).collect();
        let locations: Vec<Location> = written.into_iter().map(|(l, _)| l).collect();
        report.status_cleared = clear_status_records(client, cr, cr_resource, &locations).await?;
    }
    Ok(report)
}

/// The outcome of [`copy_configmap_records`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyOutcome {
    /// Keys of ConfigMap records whose Secret copy was read back and found identical
    /// (now or by an earlier call): safe to delete.
    pub verified: Vec<String>,
    /// Revisions this call wrote.
    pub copied: Vec<i64>,
    /// ConfigMap records that cannot be decoded (left alone).
    pub undecodable: Vec<String>,
}

fn storage_err(
    release: &str,
    namespace: &str,
    action: String,
    source: release::Error,
) -> MigrateError {
    MigrateError::Storage {
        release: release.to_string(),
        namespace: namespace.to_string(),
        action,
        source,
    }
}

/// Step 1 for ConfigMap records: writes every revision found in Helm's ConfigMap
/// driver as a Secret with identical record content and verifies it; deletes nothing.
pub async fn copy_configmap_records(
    client: &Client,
    release: &str,
    namespace: &str,
) -> Result<CopyOutcome, MigrateError> {
    copy_records(&Records::direct(client), release, namespace).await
}

async fn copy_records(
    records: &Records<'_>,
    release: &str,
    namespace: &str,
) -> Result<CopyOutcome, MigrateError> {
    let cms = records.storage(StorageDriver::ConfigMap, namespace);
    let cms = cms.driver();
    let mut out = CopyOutcome::default();
    let mut metas = match cms
        .query_meta(&selector([("owner", OWNER_HELM), ("name", release)]))
        .await
    {
        Ok(m) => m,
        // Operators whose RBAC predates this migration may not read ConfigMaps. Records
        // there cannot be seen then; failing every reconcile for it would be worse (a
        // release with live objects and no Secrets is still adopted, never reinstalled).
        Err(release::Error::Api { source, .. }) if matches!(&*source, kube::Error::Api(s) if s.code == 403) =>
        {
            tracing::warn!(release, namespace, error = %source,
                "cannot list ConfigMaps to look for Helm ConfigMap-driver records; grant list/get/delete on configmaps to migrate them");
            return Ok(out);
        }
        Err(e) => {
            return Err(storage_err(
                release,
                namespace,
                "list ConfigMap records".into(),
                e,
            ))
        }
    };
    if metas.is_empty() {
        return Ok(out);
    }
    metas.sort_by_key(|m| m.version);
    let secrets = records.storage(StorageDriver::Secret, namespace);
    for meta in metas {
        let source = match cms.get(&meta.key).await {
            Ok(r) => r,
            // Deleted meanwhile (another migrating process): nothing to copy.
            Err(release::Error::NotFound(_)) => continue,
            Err(e @ (release::Error::Decode { .. } | release::Error::Chunk { .. })) => {
                tracing::warn!(release, namespace, configmap = %meta.key, error = %release::api_error::Chain(&e),
                    "ConfigMap release record cannot be decoded; leaving it in place");
                out.undecodable.push(meta.key.clone());
                continue;
            }
            Err(e) => {
                return Err(storage_err(
                    release,
                    namespace,
                    format!("read ConfigMap {namespace}/{}", meta.key),
                    e,
                ))
            }
        };
        let source_desc = format!("ConfigMap {namespace}/{}", meta.key);
        let wrote = put_verified(
            secrets.driver().as_ref(),
            &meta.key,
            &source,
            release,
            namespace,
            &source_desc,
        )
        .await?;
        if wrote {
            out.copied.push(source.version);
        }
        out.verified.push(meta.key);
    }
    Ok(out)
}

/// Writes `record` as the Secret `key` unless an identical one exists, then reads it
/// back and compares. Returns whether this call wrote it.
async fn put_verified(
    secrets: &dyn Driver,
    key: &str,
    record: &Release,
    release: &str,
    namespace: &str,
    source_desc: &str,
) -> Result<bool, MigrateError> {
    let conflict = || MigrateError::Conflict {
        release: release.to_string(),
        namespace: namespace.to_string(),
        revision: record.version,
        secret: key.to_string(),
        source_desc: source_desc.to_string(),
    };
    let unreadable = |e: &release::Error| MigrateError::UnreadableSecret {
        release: release.to_string(),
        namespace: namespace.to_string(),
        revision: record.version,
        secret: key.to_string(),
        source_desc: source_desc.to_string(),
        reason: release::api_error::chain(e),
    };
    let read = |what: &'static str, e: release::Error| {
        storage_err(
            release,
            namespace,
            format!("{what} Secret {namespace}/{key}"),
            e,
        )
    };
    let mut wrote = false;
    match secrets.get(key).await {
        Ok(existing) if existing == *record => return Ok(false),
        Ok(_) => return Err(conflict()),
        Err(e @ (release::Error::Decode { .. } | release::Error::Chunk { .. })) => {
            return Err(unreadable(&e))
        }
        Err(release::Error::NotFound(_)) => match secrets.create(key, record).await {
            Ok(()) => wrote = true,
            // Someone wrote it between our read and our create: compare below.
            Err(release::Error::AlreadyExists(_)) => {}
            Err(e) => return Err(read("create", e)),
        },
        Err(e) => return Err(read("read", e)),
    }
    match secrets.get(key).await {
        Ok(back) if back == *record => Ok(wrote),
        Ok(_) if wrote => Err(MigrateError::VerifyFailed {
            release: release.to_string(),
            namespace: namespace.to_string(),
            revision: record.version,
            secret: key.to_string(),
            source_desc: source_desc.to_string(),
        }),
        Ok(_) => Err(conflict()),
        Err(e @ (release::Error::Decode { .. } | release::Error::Chunk { .. })) => {
            Err(unreadable(&e))
        }
        Err(e) => Err(read("read back", e)),
    }
}

/// Step 2 for ConfigMap records: deletes the ConfigMaps whose Secret copies were
/// verified by [`copy_configmap_records`]. Returns the deleted keys.
pub(crate) async fn remove_configmap_records(
    records: &Records<'_>,
    release: &str,
    namespace: &str,
    verified: &[String],
) -> Result<Vec<String>, MigrateError> {
    if verified.is_empty() {
        return Ok(Vec::new());
    }
    let cms = records.storage(StorageDriver::ConfigMap, namespace);
    let cms = cms.driver();
    let mut removed = Vec::new();
    for key in verified {
        match cms.remove(key).await {
            Ok(()) => removed.push(key.clone()),
            Err(release::Error::NotFound(_)) => {}
            Err(e) => {
                return Err(storage_err(
                    release,
                    namespace,
                    format!("delete ConfigMap {namespace}/{key} after copying it to a Secret"),
                    e,
                ))
            }
        }
    }
    Ok(removed)
}

/// `Kind ns/name` of the CR, for messages.
fn cr_id(cr: &CustomResource, resource: &ApiResource) -> String {
    let kind = &resource.kind;
    let name = cr.metadata.name.as_deref().unwrap_or("<unnamed>");
    match cr.metadata.namespace.as_deref() {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// The CR's status as JSON when it may hold a legacy release (a `release` field, in
/// the status or a condition); most CRs' do not, and are not parsed.
fn legacy_status(cr: &CustomResource) -> Option<Value> {
    let raw = cr.status_raw()?;
    raw.get()
        .contains("\"release\"")
        .then(|| cr.status_json())?
}

/// Step 1 for a release in the CR's status: converts every legacy release found there
/// and writes it as a verified Secret; changes nothing in the CR. Returns where each was
/// found and the revision written (or found already written).
pub async fn write_status_records(
    client: &Client,
    cr: &CustomResource,
    cr_resource: &ApiResource,
    release: &str,
    namespace: &str,
    chart: Option<&chart::loader::Chart>,
) -> Result<Vec<(Location, i64)>, MigrateError> {
    let records = Records::direct(client);
    status_records(&records, cr, cr_resource, release, namespace, chart).await
}

async fn status_records(
    records: &Records<'_>,
    cr: &CustomResource,
    cr_resource: &ApiResource,
    release: &str,
    namespace: &str,
    chart: Option<&chart::loader::Chart>,
) -> Result<Vec<(Location, i64)>, MigrateError> {
    let Some(status) = legacy_status(cr) else {
        return Ok(Vec::new());
    };
    let found = legacy::find(Some(&status));
    if found.is_empty() {
        return Ok(Vec::new());
    }
    let id = cr_id(cr, cr_resource);
    // An unreadable spec is reported by the reconcile; the legacy record keeps its own.
    let spec = crate::reconcile::values::spec_values(cr).unwrap_or_default();
    let spec = &spec;
    let secrets: Storage = records.storage(StorageDriver::Secret, namespace);
    let history = secrets
        .history_meta(release)
        .await
        .map_err(|e| storage_err(release, namespace, "list Secret records".into(), e))?;
    let mut out = Vec::new();
    for (location, raw) in found {
        let ctx = legacy::Context {
            release,
            namespace,
            spec,
            chart,
            origin: format!("{location} of {id}"),
        };
        let converted = legacy::convert(raw, &ctx).map_err(|reason| MigrateError::Legacy {
            cr: id.clone(),
            location: location.to_string(),
            reason,
        })?;
        let mut record = converted.record;
        // Newer revisions exist (written after this status was last updated): the
        // legacy one is history, not the deployed release.
        if history.iter().any(|m| m.version > record.version) {
            let description = record
                .info
                .as_ref()
                .map(|i| i.description.clone())
                .unwrap_or_default();
            record.set_status(Status::Superseded, description);
        }
        let key = make_key(release, record.version);
        let source_desc = ctx.origin.clone();
        put_verified(
            secrets.driver().as_ref(),
            &key,
            &record,
            release,
            namespace,
            &source_desc,
        )
        .await?;
        out.push((location, record.version));
    }
    Ok(out)
}

/// Step 2 for a release in the CR's status: removes it with a merge patch of the status
/// (`status.release: null`; for releases inside conditions, the conditions without
/// their `release` field, guarded by the CR's resourceVersion). Conditions and
/// `deployedRelease` are otherwise left alone. Returns false if the CR is gone.
pub(crate) async fn clear_status_records(
    client: &Client,
    cr: &CustomResource,
    cr_resource: &ApiResource,
    locations: &[Location],
) -> Result<bool, MigrateError> {
    if locations.is_empty() {
        return Ok(false);
    }
    let id = cr_id(cr, cr_resource);
    let Some(name) = cr.metadata.name.as_deref() else {
        return Ok(false);
    };
    let mut status = Map::new();
    let mut patch = Map::new();
    if locations.contains(&Location::StatusRelease) {
        status.insert("release".into(), Value::Null);
    }
    if locations
        .iter()
        .any(|l| matches!(l, Location::Condition(_)))
    {
        let conds = cr
            .status_json()
            .as_ref()
            .and_then(|s| s.pointer("/conditions"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let conds: Vec<Value> = conds
            .into_iter()
            .enumerate()
            .map(|(i, mut c)| {
                if locations.contains(&Location::Condition(i)) {
                    if let Some(o) = c.as_object_mut() {
                        o.remove("release");
                    }
                }
                c
            })
            .collect();
        status.insert("conditions".into(), Value::Array(conds));
        // Merge patch replaces the whole list: only if nobody changed it since we read it.
        if let Some(rv) = &cr.metadata.resource_version {
            patch.insert("metadata".into(), json!({ "resourceVersion": rv }));
        }
    }
    patch.insert("status".into(), Value::Object(status));
    let patch = Value::Object(patch);
    let api: Api<CustomResource> = match cr.metadata.namespace.as_deref() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, cr_resource),
        None => Api::all_with(client.clone(), cr_resource),
    };
    let pp = PatchParams::default();
    let patched = match api.patch_status(name, &pp, &Patch::Merge(&patch)).await {
        Ok(o) => o,
        // No status subresource (common for old operator-sdk CRDs): status is part
        // of the main object.
        Err(kube::Error::Api(s)) if s.code == 404 => {
            match api.patch(name, &pp, &Patch::Merge(&patch)).await {
                Ok(o) => o,
                Err(kube::Error::Api(s)) if s.code == 404 => return Ok(false),
                Err(e) => {
                    return Err(MigrateError::Status {
                        cr: id,
                        source: Box::new(e),
                    })
                }
            }
        }
        Err(e) => {
            return Err(MigrateError::Status {
                cr: id,
                source: Box::new(e),
            })
        }
    };
    let patched_status = legacy_status(&patched);
    let left: Vec<Location> = legacy::find(patched_status.as_ref())
        .into_iter()
        .map(|(l, _)| l)
        .filter(|l| locations.contains(l))
        .collect();
    if let Some(l) = left.first() {
        return Err(MigrateError::StatusNotCleared {
            cr: id,
            location: l.to_string(),
        });
    }
    Ok(true)
}
