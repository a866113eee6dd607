//! Kubernetes Events recorded on the custom resource.
