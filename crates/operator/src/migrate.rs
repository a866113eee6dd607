//! Moves release state kept by older setups (a release in the CR status, Helm's ConfigMap
//! driver) into Secrets in the CR's namespace, verified before the old copy is removed.
