//! The operator's options: the Go helm-operator's flags.

/// What `rudder run` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct Options {}
