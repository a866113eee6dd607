//! API errors rendered as Kubernetes `Status` objects, so clients see the
//! same reason/code/details they would get from a real API server.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// An error answered to an API client as a `kind: Status` body.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    fn with_details(mut self, group: &str, kind: &str, name: &str) -> Self {
        let mut d = json!({ "kind": kind });
        if !name.is_empty() {
            d["name"] = json!(name);
        }
        if !group.is_empty() {
            d["group"] = json!(group);
        }
        self.details = Some(d);
        self
    }

    /// `resource` is the plural, `qualified` is `plural.group` (or plural for core).
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        ApiError::new(
            404,
            "NotFound",
            format!("{} \"{}\" not found", qualified(resource, group), name),
        )
        .with_details(group, resource, name)
    }

    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{} \"{}\" already exists", qualified(resource, group), name),
        )
        .with_details(group, resource, name)
    }

    pub fn conflict(group: &str, resource: &str, name: &str) -> Self {
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{}\": the object has been modified; please apply your changes to the latest version and try again",
                qualified(resource, group),
                name
            ),
        )
        .with_details(group, resource, name)
    }

    /// 422 with a single field cause.
    pub fn invalid(group: &str, kind: &str, name: &str, field: &str, msg: &str) -> Self {
        let mut e = ApiError::new(
            422,
            "Invalid",
            format!(
                "{} \"{name}\" is invalid: {field}: {msg}",
                qualified(kind, group)
            ),
        )
        .with_details(group, kind, name);
        if let Some(d) = e.details.as_mut() {
            d["causes"] =
                json!([{ "reason": "FieldValueInvalid", "message": msg, "field": field }]);
        }
        e
    }

    pub fn bad_request(msg: impl Into<String>) -> Self {
        ApiError::new(400, "BadRequest", msg)
    }

    pub fn internal(msg: impl Into<String>) -> Self {
        ApiError::new(500, "InternalError", msg)
    }

    pub fn method_not_allowed(msg: impl Into<String>) -> Self {
        ApiError::new(405, "MethodNotAllowed", msg)
    }

    pub fn gone(msg: impl Into<String>) -> Self {
        ApiError::new(410, "Expired", msg)
    }

    pub fn to_status(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        s
    }
}

fn qualified(resource: &str, group: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = self.to_status().to_string();
        (code, [("content-type", "application/json")], body).into_response()
    }
}

/// Errors from starting or running the server itself (not per-request).
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot bind {addr}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    #[error("cannot write kubeconfig to {path}")]
    Kubeconfig {
        path: String,
        source: std::io::Error,
    },
    #[error("storage error in {path}: {message}")]
    Storage { path: String, message: String },
    #[error("cannot build a client for the server: {0}")]
    Client(String),
    #[error(transparent)]
    Tls(#[from] crate::http::tls::TlsError),
}
