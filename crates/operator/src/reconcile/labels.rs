//! The labels rudder writes on release records besides the inputs digest
//! ([`digest::LABEL`](super::digest::LABEL)) and the chart's name
//! ([`CHART_LABEL`](crate::annotations::CHART_LABEL)). [`decide`](super::decide)
//! reads the history through them; they are never in Helm's own records.

/// How many consecutive attempts with the same inputs this record is.
pub(crate) const ATTEMPT_LABEL: &str = "rudder.dev/attempt";
/// On a rollback record: the inputs digest whose upgrade failed and was rolled back.
pub(crate) const ROLLBACK_OF_LABEL: &str = "rudder.dev/rollback-of";
/// On records of charts that call `lookup`: the digest of what the lookups returned.
pub(crate) const LOOKUPS_LABEL: &str = "rudder.dev/lookups-digest";

/// The revision rudder wrote its labels for. `helm upgrade` and `helm rollback` copy
/// a record's custom labels onto the record they write, so on a record of another
/// number they are a copy and say nothing about that revision's inputs.
pub(crate) const REVISION_LABEL: &str = "rudder.dev/revision";
