//! Optional authentication and RBAC authorization (`--authorization rbac`).
//!
//! The admin kubeconfig carries a token that authenticates as a member of
//! `system:masters`; ServiceAccounts authenticate with tokens from the
//! TokenRequest subresource or from `kubernetes.io/service-account-token`
//! Secrets (which the token controller, `controllers::tokens`, fills in). Requests are then
//! authorized by Role, ClusterRole, RoleBinding and ClusterRoleBinding
//! rules, and refused with the real server's 401 and 403 messages. Without
//! RBAC every request is allowed, as before.

use crate::error::ApiError;
use crate::faults::Verb;
use crate::App;
use axum::http::HeaderMap;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Mutex;

/// How requests are authorized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Authorization {
    /// Every request is allowed (the default).
    #[default]
    AlwaysAllow,
    /// Bearer tokens identify users; RBAC objects decide.
    Rbac,
}

impl std::str::FromStr for Authorization {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "alwaysallow" | "always-allow" | "none" => Ok(Authorization::AlwaysAllow),
            "rbac" => Ok(Authorization::Rbac),
            other => Err(format!(
                "unknown authorization mode {other:?}: use \"rbac\" or \"always-allow\""
            )),
        }
    }
}

/// Who is making a request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct User {
    pub(crate) name: String,
    pub(crate) uid: String,
    pub(crate) groups: Vec<String>,
}

impl User {
    fn service_account(ns: &str, name: &str, uid: &str) -> User {
        User {
            name: format!("system:serviceaccount:{ns}:{name}"),
            uid: uid.to_string(),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{ns}"),
                "system:authenticated".into(),
            ],
        }
    }

    fn admin() -> User {
        User {
            name: "rudder-admin".into(),
            uid: String::new(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
        }
    }

    fn anonymous() -> User {
        User {
            name: "system:anonymous".into(),
            uid: String::new(),
            groups: vec!["system:unauthenticated".into()],
        }
    }

    pub(crate) fn to_json(&self) -> Value {
        json!({"username": self.name, "uid": self.uid, "groups": self.groups})
    }
}

/// What a request asks to do, as RBAC sees it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Attributes {
    pub(crate) verb: String,
    pub(crate) group: String,
    pub(crate) resource: String,
    pub(crate) subresource: String,
    pub(crate) namespace: String,
    pub(crate) name: String,
    /// Set for non-resource requests (`/metrics`, `/version`).
    pub(crate) path: Option<String>,
}

impl Attributes {
    pub(crate) fn resource(
        verb: Verb,
        group: &str,
        resource: &str,
        sub: Option<&str>,
        ns: Option<&str>,
        name: Option<&str>,
    ) -> Self {
        Attributes {
            verb: verb_name(verb).into(),
            group: group.into(),
            resource: resource.into(),
            subresource: sub.unwrap_or_default().into(),
            namespace: ns.unwrap_or_default().into(),
            name: name.unwrap_or_default().into(),
            path: None,
        }
    }

    pub(crate) fn non_resource(method: &str, path: &str) -> Self {
        Attributes {
            verb: method.to_ascii_lowercase(),
            path: Some(path.to_string()),
            ..Attributes::default()
        }
    }
}

fn verb_name(v: Verb) -> &'static str {
    match v {
        Verb::Get => "get",
        Verb::List => "list",
        Verb::Watch => "watch",
        Verb::Create => "create",
        Verb::Update => "update",
        Verb::Patch => "patch",
        Verb::Delete => "delete",
        Verb::DeleteCollection => "deletecollection",
    }
}

/// Authentication state: the mode, the admin token and issued tokens.
pub(crate) struct Auth {
    pub(crate) mode: Authorization,
    pub(crate) admin_token: String,
    issued: Mutex<HashMap<String, User>>,
}

fn random_token() -> String {
    format!(
        "{:016x}{:016x}{:016x}",
        crate::object::meta::random_u64(),
        crate::object::meta::random_u64(),
        crate::object::meta::random_u64()
    )
}

/// Paths every authenticated user may read (the bootstrap discovery and
/// public-info roles of a real cluster).
fn discovery_path(path: &str) -> bool {
    path == "/api"
        || path == "/apis"
        || path.starts_with("/api/")
        || path.starts_with("/apis/")
        || path.starts_with("/openapi")
        || matches!(path, "/version" | "/healthz" | "/livez" | "/readyz")
        || path.starts_with("/healthz/")
        || path.starts_with("/livez/")
        || path.starts_with("/readyz/")
}

impl Auth {
    pub(crate) fn new(mode: Authorization) -> Self {
        Auth {
            mode,
            admin_token: random_token(),
            issued: Mutex::new(HashMap::new()),
        }
    }

    fn issued(&self) -> std::sync::MutexGuard<'_, HashMap<String, User>> {
        match self.issued.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Issues a token for a ServiceAccount (TokenRequest, or the token
    /// controller filling a legacy Secret).
    pub(crate) fn issue(&self, ns: &str, name: &str, uid: &str) -> String {
        let token = random_token();
        self.issued()
            .insert(token.clone(), User::service_account(ns, name, uid));
        token
    }

    /// The user a bearer token stands for; `Ok(None)` without a token.
    pub(crate) fn authenticate_token(&self, app: &App, token: &str) -> Option<User> {
        if token == self.admin_token {
            return Some(User::admin());
        }
        if let Some(u) = self.issued().get(token) {
            return Some(u.clone());
        }
        legacy_secret_user(app, token)
    }

    /// The requester, or 401 for a token nobody issued.
    pub(crate) fn authenticate(&self, app: &App, headers: &HeaderMap) -> Result<User, ApiError> {
        let token = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .map(str::trim);
        match token {
            None | Some("") => Ok(User::anonymous()),
            Some(t) => self
                .authenticate_token(app, t)
                .ok_or_else(|| ApiError::new(401, "Unauthorized", "Unauthorized")),
        }
    }

    /// Authorizes a request; without RBAC everything is allowed.
    pub(crate) fn authorize(
        &self,
        app: &App,
        headers: &HeaderMap,
        attrs: &Attributes,
    ) -> Result<(), ApiError> {
        if self.mode == Authorization::AlwaysAllow {
            return Ok(());
        }
        let user = self.authenticate(app, headers)?;
        if allowed(app, &user, attrs) {
            return Ok(());
        }
        Err(forbidden(&user, attrs))
    }

    /// The requester's identity for SelfSubject reviews.
    pub(crate) fn whoami(&self, app: &App, headers: &HeaderMap) -> User {
        if self.mode == Authorization::AlwaysAllow {
            return User::admin();
        }
        self.authenticate(app, headers)
            .unwrap_or_else(|_| User::anonymous())
    }
}

/// A `kubernetes.io/service-account-token` Secret holding this token.
fn legacy_secret_user(app: &App, token: &str) -> Option<User> {
    use base64::Engine as _;
    let want = base64::engine::general_purpose::STANDARD.encode(token);
    app.store
        .entries("/secrets/")
        .into_iter()
        .find_map(|(_, s)| {
            // A token Secret's JSON names its type; the others (release
            // records among them) are not worth parsing.
            if !s.json().contains(SA_TOKEN_TYPE) {
                return None;
            }
            let s = s.value();
            if s.get("type").and_then(Value::as_str) != Some(SA_TOKEN_TYPE) {
                return None;
            }
            if s.pointer("/data/token").and_then(Value::as_str) != Some(want.as_str()) {
                return None;
            }
            let ns = s.pointer("/metadata/namespace")?.as_str()?;
            let ann = s.pointer("/metadata/annotations")?;
            let sa = ann.get(SA_NAME)?.as_str()?;
            let uid = ann.get(SA_UID).and_then(Value::as_str).unwrap_or_default();
            Some(User::service_account(ns, sa, uid))
        })
}

pub(crate) const SA_TOKEN_TYPE: &str = "kubernetes.io/service-account-token";
pub(crate) const SA_NAME: &str = "kubernetes.io/service-account.name";
pub(crate) const SA_UID: &str = "kubernetes.io/service-account.uid";

/// Whether RBAC objects grant `attrs` to `user`.
pub(crate) fn allowed(app: &App, user: &User, attrs: &Attributes) -> bool {
    if user.groups.iter().any(|g| g == "system:masters") {
        return true;
    }
    if let Some(p) = &attrs.path {
        if attrs.verb == "get" && discovery_path(p) {
            return true;
        }
    }
    let authenticated = user.groups.iter().any(|g| g == "system:authenticated");
    if authenticated
        && attrs.group == "authorization.k8s.io"
        && matches!(
            attrs.resource.as_str(),
            "selfsubjectaccessreviews" | "selfsubjectrulesreviews"
        )
        && attrs.verb == "create"
    {
        return true;
    }
    let matches_subject = |b: &Value| {
        b.get("subjects")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|s| subject_matches(s, user, b))
    };
    let role_rules = |role_ref: &Value, ns: &str| -> Vec<Value> {
        let kind = role_ref
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let name = role_ref
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let key = match kind {
            "ClusterRole" => format!("rbac.authorization.k8s.io/clusterroles//{name}"),
            "Role" => format!("rbac.authorization.k8s.io/roles/{ns}/{name}"),
            _ => return Vec::new(),
        };
        app.store
            .get(&key)
            .and_then(|r| r.get("rules").and_then(Value::as_array).cloned())
            .unwrap_or_default()
    };
    for (_, b) in app
        .store
        .entries("rbac.authorization.k8s.io/clusterrolebindings/")
    {
        let b = b.value();
        if matches_subject(&b) {
            let rr = b.get("roleRef").cloned().unwrap_or_default();
            if role_rules(&rr, "").iter().any(|r| rule_allows(r, attrs)) {
                return true;
            }
        }
    }
    if attrs.path.is_none() && !attrs.namespace.is_empty() {
        let prefix = format!(
            "rbac.authorization.k8s.io/rolebindings/{}/",
            attrs.namespace
        );
        for (_, b) in app.store.entries(&prefix) {
            let b = b.value();
            if matches_subject(&b) {
                let rr = b.get("roleRef").cloned().unwrap_or_default();
                if role_rules(&rr, &attrs.namespace)
                    .iter()
                    .any(|r| rule_allows(r, attrs))
                {
                    return true;
                }
            }
        }
    }
    false
}

fn subject_matches(s: &Value, user: &User, binding: &Value) -> bool {
    let kind = s.get("kind").and_then(Value::as_str).unwrap_or_default();
    let name = s.get("name").and_then(Value::as_str).unwrap_or_default();
    match kind {
        "User" => user.name == name,
        "Group" => user.groups.iter().any(|g| g == name),
        "ServiceAccount" => {
            let ns = s
                .get("namespace")
                .and_then(Value::as_str)
                .or_else(|| {
                    binding
                        .pointer("/metadata/namespace")
                        .and_then(Value::as_str)
                })
                .unwrap_or_default();
            user.name == format!("system:serviceaccount:{ns}:{name}")
        }
        _ => false,
    }
}

fn has(list: Option<&Value>, want: &str) -> bool {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .any(|v| v == "*" || v == want)
}

/// One PolicyRule against a request.
pub(crate) fn rule_allows(rule: &Value, a: &Attributes) -> bool {
    if !has(rule.get("verbs"), &a.verb) {
        return false;
    }
    if let Some(path) = &a.path {
        return rule
            .get("nonResourceURLs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .any(|u| {
                u == "*" || u == path || u.strip_suffix('*').is_some_and(|p| path.starts_with(p))
            });
    }
    if !has(rule.get("apiGroups"), &a.group) {
        return false;
    }
    let resource_ok = rule
        .get("resources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .any(|r| {
            if a.subresource.is_empty() {
                r == "*" || r == a.resource
            } else {
                r == "*"
                    || r == format!("{}/{}", a.resource, a.subresource)
                    || r == format!("*/{}", a.subresource)
                    || r == format!("{}/*", a.resource)
            }
        });
    if !resource_ok {
        return false;
    }
    match rule.get("resourceNames").and_then(Value::as_array) {
        Some(names) if !names.is_empty() => {
            !a.name.is_empty() && names.iter().any(|n| n.as_str() == Some(a.name.as_str()))
        }
        _ => true,
    }
}

/// The 403 a real server answers, with RBAC's wording.
pub(crate) fn forbidden(user: &User, a: &Attributes) -> ApiError {
    let what = match &a.path {
        Some(p) => format!("User {:?} cannot {} path {:?}", user.name, a.verb, p),
        None => {
            let mut r = a.resource.clone();
            if !a.subresource.is_empty() {
                r = format!("{r}/{}", a.subresource);
            }
            if a.namespace.is_empty() {
                format!(
                    "User {:?} cannot {} resource {r:?} in API group {:?} at the cluster scope",
                    user.name, a.verb, a.group
                )
            } else {
                format!(
                    "User {:?} cannot {} resource {r:?} in API group {:?} in the namespace {:?}",
                    user.name, a.verb, a.group, a.namespace
                )
            }
        }
    };
    let qualified = if a.group.is_empty() {
        a.resource.clone()
    } else {
        format!("{}.{}", a.resource, a.group)
    };
    let message = match (a.path.is_some(), a.name.is_empty()) {
        (true, _) => format!("forbidden: {what}"),
        (false, true) => format!("{qualified} is forbidden: {what}"),
        (false, false) => format!("{qualified} {:?} is forbidden: {what}", a.name),
    };
    let mut e = ApiError::new(403, "Forbidden", message);
    let mut d = json!({"kind": a.resource});
    if !a.name.is_empty() {
        d["name"] = json!(a.name);
    }
    if !a.group.is_empty() {
        d["group"] = json!(a.group);
    }
    e.details = Some(d);
    e
}

/// The SubjectAccessReview answer for a spec (`user` from the spec, or
/// the requester for self reviews).
pub(crate) fn review(app: &App, user: &User, spec: &Value) -> Value {
    if app.auth.mode == Authorization::AlwaysAllow {
        return json!({"allowed": true, "reason": "rudder-apiserver allows every request"});
    }
    let attrs = if let Some(r) = spec.get("resourceAttributes") {
        let s = |k: &str| {
            r.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        Attributes {
            verb: s("verb"),
            group: s("group"),
            resource: s("resource"),
            subresource: s("subresource"),
            namespace: s("namespace"),
            name: s("name"),
            path: None,
        }
    } else {
        let r = spec
            .get("nonResourceAttributes")
            .cloned()
            .unwrap_or_default();
        Attributes {
            verb: r
                .get("verb")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .into(),
            path: Some(
                r.get("path")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .into(),
            ),
            ..Attributes::default()
        }
    };
    if allowed(app, user, &attrs) {
        json!({"allowed": true, "reason": "RBAC: allowed"})
    } else {
        json!({"allowed": false})
    }
}

/// The user a SubjectAccessReview spec names.
pub(crate) fn spec_user(spec: &Value) -> User {
    User {
        name: spec
            .get("user")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .into(),
        uid: spec
            .get("uid")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .into(),
        groups: crate::object::meta::strings(spec.get("groups")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_match_verbs_resources_subresources_and_names() {
        let a = Attributes {
            verb: "get".into(),
            group: "".into(),
            resource: "secrets".into(),
            namespace: "ns".into(),
            name: "s".into(),
            ..Default::default()
        };
        assert!(rule_allows(
            &json!({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}),
            &a
        ));
        assert!(rule_allows(
            &json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}),
            &a
        ));
        assert!(!rule_allows(
            &json!({"verbs": ["list"], "apiGroups": [""], "resources": ["secrets"]}),
            &a
        ));
        assert!(!rule_allows(
            &json!({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["other"]}),
            &a
        ));
        let st = Attributes {
            verb: "update".into(),
            group: "apps".into(),
            resource: "deployments".into(),
            subresource: "status".into(),
            ..Default::default()
        };
        assert!(!rule_allows(
            &json!({"verbs": ["update"], "apiGroups": ["apps"], "resources": ["deployments"]}),
            &st
        ));
        assert!(rule_allows(
            &json!({"verbs": ["update"], "apiGroups": ["apps"], "resources": ["deployments/status"]}),
            &st
        ));
        let p = Attributes::non_resource("GET", "/metrics");
        assert!(rule_allows(
            &json!({"verbs": ["get"], "nonResourceURLs": ["/metrics"]}),
            &p
        ));
        assert!(rule_allows(
            &json!({"verbs": ["get"], "nonResourceURLs": ["/met*"]}),
            &p
        ));
    }

    #[test]
    fn forbidden_messages() {
        let u = User::service_account("ns", "sa", "");
        let a = Attributes {
            verb: "list".into(),
            resource: "secrets".into(),
            namespace: "ns".into(),
            ..Default::default()
        };
        assert_eq!(
            forbidden(&u, &a).message,
            "secrets is forbidden: User \"system:serviceaccount:ns:sa\" cannot list resource \"secrets\" in API group \"\" in the namespace \"ns\""
        );
        let a = Attributes {
            verb: "get".into(),
            group: "apps".into(),
            resource: "deployments".into(),
            name: "d".into(),
            ..Default::default()
        };
        assert_eq!(
            forbidden(&u, &a).message,
            "deployments.apps \"d\" is forbidden: User \"system:serviceaccount:ns:sa\" cannot get resource \"deployments\" in API group \"apps\" at the cluster scope"
        );
        assert_eq!(
            forbidden(&u, &Attributes::non_resource("GET", "/metrics")).message,
            "forbidden: User \"system:serviceaccount:ns:sa\" cannot get path \"/metrics\""
        );
    }
}
