//! Raw HTTP against a started server, for assertions on status codes,
//! `Status` bodies and headers exactly as a client receives them.
#![allow(dead_code)]

use apiserver::{Config, Server};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One response: status code, headers (lower-cased names), JSON body
/// (`Value::Null` when the body is not JSON) and the body as text.
pub struct Reply {
    pub code: u16,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    pub text: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    pub fn message(&self) -> &str {
        self.body["message"].as_str().unwrap_or_default()
    }

    pub fn reason(&self) -> &str {
        self.body["reason"].as_str().unwrap_or_default()
    }
}

pub async fn start() -> Server {
    Server::start(Config::default())
        .await
        .expect("server starts")
}

/// Sends one request; `content_type` defaults to JSON.
pub async fn send(
    server: &Server,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: &[u8],
) -> Reply {
    send_with(server, None, method, path, content_type, body).await
}

/// Sends one request with a bearer token (or the admin's when `None` and
/// the server has one).
pub async fn send_with(
    server: &Server,
    token: Option<&str>,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: &[u8],
) -> Reply {
    let mut s = tokio::net::TcpStream::connect(server.addr())
        .await
        .expect("connect");
    let ct = content_type.unwrap_or("application/json");
    let auth = match token.or(server.admin_token()) {
        Some(t) => format!("authorization: Bearer {t}\r\n"),
        None => String::new(),
    };
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: localhost\r\n{auth}content-type: {ct}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.expect("write head");
    // A server refusing an oversized body may answer and close early.
    let _ = s.write_all(body).await;
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw).await;
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let code = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_lowercase(), v.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body_text = if chunked {
        dechunk(rest)
    } else {
        rest.to_string()
    };
    Reply {
        code,
        headers,
        body: serde_json::from_str(&body_text).unwrap_or(Value::Null),
        text: body_text,
    }
}

fn dechunk(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || tail.len() < n {
            break;
        }
        out.push_str(&tail[..n]);
        rest = tail[n..].trim_start_matches("\r\n");
    }
    out
}

/// JSON request helper.
pub async fn json(server: &Server, method: &str, path: &str, body: &Value) -> Reply {
    send(server, method, path, None, body.to_string().as_bytes()).await
}

/// Server-side apply of `body` by `manager` (optionally forced).
pub async fn apply(server: &Server, path: &str, manager: &str, force: bool, body: &Value) -> Reply {
    let q = format!(
        "{path}?fieldManager={manager}{}",
        if force { "&force=true" } else { "" }
    );
    send(
        server,
        "PATCH",
        &q,
        Some("application/apply-patch+yaml"),
        body.to_string().as_bytes(),
    )
    .await
}

/// Asserts a refusal: status code, `Status` reason and message.
#[track_caller]
pub fn refused(r: &Reply, code: u16, reason: &str, message: &str) {
    assert_eq!(
        (r.code, r.reason(), r.message()),
        (code, reason, message),
        "full body: {}",
        r.body
    );
}

/// Polls `f` until it holds (5 s at most).
pub async fn eventually<F, Fut>(what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..200 {
        if f().await {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("timed out waiting for {what}");
}

/// The `name` fields of a list of objects (containers, env vars…).
pub fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["name"].as_str().map(str::to_string))
        .collect()
}

/// Creates `crd` and waits until it is `Established`, as a client must before
/// creating its custom resources (kube-apiserver serves them only from then on).
pub async fn create_crd(server: &Server, crd: &Value) -> Reply {
    const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let created = json(server, "POST", CRDS, crd).await;
    assert_eq!(created.code, 201, "{}", created.message());
    let url = format!("{CRDS}/{}", crd["metadata"]["name"].as_str().unwrap_or(""));
    eventually("the CRD to be established", || async {
        let r = json(server, "GET", &url, &Value::Null).await;
        r.body["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
    })
    .await;
    created
}
