//! Reconciles one custom resource into its Helm release.
