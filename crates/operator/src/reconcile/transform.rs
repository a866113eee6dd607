//! The per-object transform of a CR's release: objects in the CR's namespace get an
//! ownerReference to the CR; objects elsewhere get the Go helm-operator's
//! `operator-sdk/primary-resource*` annotations, and are refused unless the watch lets
//! the release reach that far (`allowClusterScoped`, `allowedNamespaces`). Every
//! object gets the label `helm.sdk.operatorframework.io/chart=<chart name>`, as the
//! Go operator's label-injecting client sets it.

use std::sync::Arc;

use action::{ObjectRef, Transform};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::DynamicObject;

use crate::annotations::{CHART_LABEL, PRIMARY_RESOURCE, PRIMARY_RESOURCE_TYPE};

/// What the transform needs to know about the CR and its watch.
#[derive(Debug, Clone)]
pub(crate) struct Policy {
    /// The CR as an owner (apiVersion, kind, name, uid).
    pub owner: OwnerReference,
    pub namespace: String,
    /// `<Kind>.<group>` of the CR (just `<Kind>` for the core group).
    pub primary_type: String,
    pub allow_cluster_scoped: bool,
    pub allowed_namespaces: Vec<String>,
    /// `group/version Kind` of the watch, for messages.
    pub watch: String,
    /// The value of the `helm.sdk.operatorframework.io/chart` label (the chart's name,
    /// when it is a valid label value).
    pub chart_label: Option<String>,
}

impl Policy {
    /// Adds the owner reference or the primary-resource annotations, or refuses the
    /// object with a message naming it and the `watches.yaml` field to set.
    pub(crate) fn apply(&self, obj: &mut DynamicObject, oref: &ObjectRef) -> Result<(), String> {
        if let Some(chart) = &self.chart_label {
            obj.metadata
                .labels
                .get_or_insert_with(Default::default)
                .insert(CHART_LABEL.to_string(), chart.clone());
        }
        match &oref.namespace {
            Some(ns) if *ns == self.namespace => {
                self.add_owner(obj);
                Ok(())
            }
            Some(ns) => {
                let allowed = self.allowed_namespaces.iter().any(|a| a == "*" || a == ns);
                if !allowed {
                    return Err(format!(
                        "{oref} is in namespace {ns:?}, outside the custom resource's namespace {:?}; \
                         to allow it, add {ns:?} (or \"*\") to allowedNamespaces of the {} entry in watches.yaml",
                        self.namespace, self.watch
                    ));
                }
                self.annotate(obj);
                Ok(())
            }
            None => {
                if !self.allow_cluster_scoped {
                    return Err(format!(
                        "{oref} is cluster-scoped; to allow the release to manage cluster-scoped objects, \
                         set allowClusterScoped: true on the {} entry in watches.yaml",
                        self.watch
                    ));
                }
                self.annotate(obj);
                Ok(())
            }
        }
    }

    fn add_owner(&self, obj: &mut DynamicObject) {
        let refs = obj.metadata.owner_references.get_or_insert_with(Vec::new);
        refs.retain(|r| r.uid != self.owner.uid);
        let mut owner = self.owner.clone();
        // The API accepts one controller reference only; keep a chart's own.
        if refs.iter().any(|r| r.controller == Some(true)) {
            owner.controller = Some(false);
        }
        refs.push(owner);
    }

    fn annotate(&self, obj: &mut DynamicObject) {
        let ann = obj
            .metadata
            .annotations
            .get_or_insert_with(Default::default);
        ann.insert(
            PRIMARY_RESOURCE.to_string(),
            format!("{}/{}", self.namespace, self.owner.name),
        );
        ann.insert(PRIMARY_RESOURCE_TYPE.to_string(), self.primary_type.clone());
    }
}

/// The transform handed to the release actions.
pub(crate) fn transform(policy: Arc<Policy>) -> Transform {
    Transform::new(move |obj, oref| policy.apply(obj, oref))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::ObjectMeta;

    fn policy() -> Policy {
        Policy {
            owner: OwnerReference {
                api_version: "demo.rudder.dev/v1alpha1".into(),
                kind: "Hello".into(),
                name: "h".into(),
                uid: "u-1".into(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            },
            namespace: "apps".into(),
            primary_type: "Hello.demo.rudder.dev".into(),
            allow_cluster_scoped: false,
            allowed_namespaces: vec!["shared".into()],
            watch: "demo.rudder.dev/v1alpha1 Hello".into(),
            chart_label: Some("hello".into()),
        }
    }

    fn obj() -> DynamicObject {
        DynamicObject {
            types: None,
            metadata: ObjectMeta::default(),
            data: serde_json::json!({}),
        }
    }

    fn oref(kind: &str, ns: Option<&str>) -> ObjectRef {
        ObjectRef {
            api_version: "v1".into(),
            kind: kind.into(),
            namespace: ns.map(str::to_string),
            name: "x".into(),
        }
    }

    #[test]
    fn owns_objects_in_its_namespace() {
        let p = policy();
        let mut o = obj();
        p.apply(&mut o, &oref("ConfigMap", Some("apps"))).unwrap();
        p.apply(&mut o, &oref("ConfigMap", Some("apps"))).unwrap();
        assert_eq!(o.metadata.labels.as_ref().unwrap()[CHART_LABEL], "hello");
        let refs = o.metadata.owner_references.unwrap();
        assert_eq!(refs.len(), 1);
        assert_eq!(refs[0].uid, "u-1");
        assert_eq!(refs[0].controller, Some(true));
        assert_eq!(refs[0].block_owner_deletion, Some(true));
    }

    #[test]
    fn refuses_or_annotates_objects_elsewhere() {
        let mut p = policy();
        let err = p.apply(&mut obj(), &oref("ClusterRole", None)).unwrap_err();
        assert!(err.contains("ClusterRole x is cluster-scoped"), "{err}");
        assert!(err.contains("allowClusterScoped: true"), "{err}");
        let err = p
            .apply(&mut obj(), &oref("ConfigMap", Some("other")))
            .unwrap_err();
        assert!(err.contains("allowedNamespaces"), "{err}");
        let mut o = obj();
        p.apply(&mut o, &oref("ConfigMap", Some("shared"))).unwrap();
        let ann = o.metadata.annotations.unwrap();
        assert_eq!(ann[PRIMARY_RESOURCE], "apps/h");
        assert_eq!(ann[PRIMARY_RESOURCE_TYPE], "Hello.demo.rudder.dev");
        assert!(o.metadata.owner_references.is_none());
        p.allow_cluster_scoped = true;
        p.apply(&mut obj(), &oref("ClusterRole", None)).unwrap();
    }
}
