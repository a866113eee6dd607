//! The Event reasons the reconciler records besides the status conditions' reasons
//! (`status.rs`). Events are written through the runtime's
//! [`EventSink`](runtime::events::EventSink), one recorder per watch.

pub(crate) const REPAIRED: &str = "Repaired";
pub(crate) const ROLLED_BACK: &str = "RolledBack";
pub(crate) const ROLLBACK_ERROR: &str = "RollbackError";
pub(crate) const OVERRIDE_VALUES_IN_USE: &str = "OverrideValuesInUse";
pub(crate) const ADOPTED: &str = "Adopted";
pub(crate) const MIGRATED: &str = "Migrated";
/// The CR went without its release being uninstalled (another chart's release).
pub(crate) const NOT_UNINSTALLED: &str = "NotUninstalled";
