//! The reconciler's log vocabulary: the Go helm-operator's messages (logger
//! `helm.controller`, fields `namespace`, `name`, `apiVersion`, `kind`, `release`, and
//! `error` on failures), at the moments its reconciler writes them, so log-based
//! alerts and the operator-sdk e2e checks (`Installed release`, `Upgraded release`,
//! `Uninstall wait`, `Removing finalizer`, ...) keep matching. The reconciler logs
//! only through [`CrLog`]; values and manifests never appear.

use std::fmt::Display;

/// One line about a CR, with the Go reconciler's context fields first.
macro_rules! cr_line {
    ($level:ident, $log:expr, $msg:expr $(, $($rest:tt)+)?) => {{
        let l = $log;
        match l.release {
            Some(release) => tracing::$level!(
                target: "helm.controller",
                {
                    namespace = l.namespace,
                    name = l.name,
                    "apiVersion" = l.api_version,
                    kind = l.kind,
                    release,
                    $($($rest)+)?
                },
                "{}",
                $msg
            ),
            None => tracing::$level!(
                target: "helm.controller",
                {
                    namespace = l.namespace,
                    name = l.name,
                    "apiVersion" = l.api_version,
                    kind = l.kind,
                    $($($rest)+)?
                },
                "{}",
                $msg
            ),
        }
    }};
}

/// After which failure a status update failed (Go's "Failed to update status after
/// ... release failure").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailedStep {
    Install,
    /// Go says "sync" after a failed upgrade too.
    Sync,
    Reconcile,
    Uninstall,
}

/// The log context of one CR's reconcile.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CrLog<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub api_version: &'a str,
    pub kind: &'a str,
    /// The release, once known (Go adds it after creating the release manager).
    pub release: Option<&'a str>,
}

impl<'a> CrLog<'a> {
    pub(crate) fn new(
        namespace: &'a str,
        name: &'a str,
        api_version: &'a str,
        kind: &'a str,
    ) -> Self {
        CrLog {
            namespace,
            name,
            api_version,
            kind,
            release: None,
        }
    }

    /// The same context with the release named.
    pub(crate) fn release(self, release: &'a str) -> Self {
        CrLog {
            release: Some(release),
            ..self
        }
    }

    pub(crate) fn reconciling(&self) {
        cr_line!(debug, self, "Reconciling");
    }

    /// Why an unchanged release is applied again in full (debug: not a Go line).
    pub(crate) fn repairing(&self, reason: &str) {
        cr_line!(debug, self, "Re-applying release", reason = reason);
    }

    pub(crate) fn installed(&self) {
        cr_line!(info, self, "Installed release");
    }

    pub(crate) fn upgraded(&self, force: bool) {
        cr_line!(info, self, "Upgraded release", force = force);
    }

    pub(crate) fn reconciled(&self) {
        cr_line!(info, self, "Reconciled release");
    }

    pub(crate) fn uninstalled(&self) {
        cr_line!(info, self, "Uninstalled release");
    }

    pub(crate) fn release_not_found(&self) {
        cr_line!(info, self, "Release not found");
    }

    pub(crate) fn uninstall_wait(&self) {
        cr_line!(info, self, "Uninstall wait");
    }

    pub(crate) fn waiting_for_deletion(&self) {
        cr_line!(info, self, "Waiting until all resources are deleted");
    }

    pub(crate) fn removing_finalizer(&self) {
        cr_line!(info, self, "Removing finalizer");
    }

    pub(crate) fn terminated(&self) {
        cr_line!(
            info,
            self,
            "Resource is terminated, skipping reconciliation"
        );
    }

    pub(crate) fn adding_finalizer(&self, finalizer: &str) {
        cr_line!(debug, self, "Adding finalizer", finalizer = finalizer);
    }

    /// An install or upgrade failed.
    pub(crate) fn release_failed(&self, error: &dyn Display) {
        cr_line!(error, self, "Release failed", error = %error);
    }

    /// The CR's inputs (values, annotations, old records) cannot be used.
    pub(crate) fn sync_failed(&self, error: &dyn Display) {
        cr_line!(error, self, "Failed to sync release", error = %error);
    }

    /// Making the cluster match the deployed release failed.
    pub(crate) fn reconcile_failed(&self, error: &dyn Display) {
        cr_line!(error, self, "Failed to reconcile release", error = %error);
    }

    pub(crate) fn uninstall_failed(&self, error: &dyn Display) {
        cr_line!(error, self, "Failed to uninstall release", error = %error);
    }

    pub(crate) fn rollback_failed(&self, error: &(dyn std::error::Error + 'static)) {
        cr_line!(error, self, "Error rolling back release", error = %release::api_error::Chain(error));
    }

    pub(crate) fn status_update_failed(
        &self,
        after: FailedStep,
        error: &(dyn std::error::Error + 'static),
    ) {
        let msg = match after {
            FailedStep::Install => "Failed to update status after install release failure",
            FailedStep::Sync => "Failed to update status after sync release failure",
            FailedStep::Reconcile => "Failed to update status after reconcile release failure",
            FailedStep::Uninstall => "Failed to update status after uninstall release failure",
        };
        cr_line!(error, self, msg, error = %release::api_error::Chain(error));
    }

    pub(crate) fn cr_status_update_failed(&self) {
        cr_line!(info, self, "Failed to update CR status");
    }

    pub(crate) fn add_finalizer_failed(&self) {
        cr_line!(info, self, "Failed to add CR uninstall finalizer");
    }

    pub(crate) fn remove_finalizer_failed(&self) {
        cr_line!(info, self, "Failed to remove CR uninstall finalizer");
    }

    // What rudder does and Go does not: each says what changed.

    /// Drifted objects of an unchanged release were applied again.
    pub(crate) fn repaired(&self, objects: &[String]) {
        cr_line!(info, self, "Repaired release objects", objects = %objects.join(", "));
    }

    /// A release without records was recorded over its live objects.
    pub(crate) fn adopted(&self, version: i64, found: usize) {
        cr_line!(
            info,
            self,
            "Adopted the release's existing objects",
            version = version,
            found = found
        );
    }

    /// Old ConfigMap records of the release were moved to Secrets.
    pub(crate) fn migrated(&self, report: &dyn Display) {
        cr_line!(info, self, "Migrated release records", report = %report);
    }

    /// An interrupted install or upgrade was marked failed.
    pub(crate) fn recovered(&self, version: i64) {
        cr_line!(
            warn,
            self,
            "Marked an interrupted operation failed",
            version = version
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use tracing_subscriber::fmt::MakeWriter;

    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Capture {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Capture {
        type Writer = Capture;
        fn make_writer(&'a self) -> Capture {
            self.clone()
        }
    }

    #[test]
    fn lines_carry_the_go_fields_in_go_order() {
        let out = Capture::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(out.clone())
            .with_max_level(tracing::Level::DEBUG)
            .event_format(runtime::logging::ZapFormat::default())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let log = CrLog::new(
                "default",
                "memcached-sample",
                "cache.example.com/v1alpha1",
                "Memcached",
            );
            log.reconciling();
            let log = log.release("memcached-sample");
            log.installed();
            log.upgraded(false);
            log.release_failed(&"boom");
        });
        let text = String::from_utf8(out.0.lock().expect("lock").clone()).expect("utf-8");
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON line"))
            .collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert_eq!(lines[0]["level"], "debug");
        assert_eq!(lines[0]["msg"], "Reconciling");
        assert!(lines[0].get("release").is_none());
        assert_eq!(lines[1]["msg"], "Installed release");
        assert_eq!(lines[1]["logger"], "helm.controller");
        assert_eq!(lines[2]["force"], false);
        assert_eq!(lines[3]["level"], "error");
        assert_eq!(lines[3]["error"], "boom");
        // Field order as zap writes it.
        let first = text.lines().nth(1).expect("line");
        let order: Vec<usize> = [
            "\"level\"",
            "\"ts\"",
            "\"logger\"",
            "\"msg\"",
            "\"namespace\"",
            "\"name\"",
            "\"apiVersion\"",
            "\"kind\"",
            "\"release\"",
        ]
        .iter()
        .map(|k| first.find(k).expect(k))
        .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{first}");
    }
}
