//! `--metrics-require-rbac`: controller-runtime's `filters.WithAuthenticationAndAuthorization`.
//! The bearer token is authenticated with a TokenReview and the user authorized for
//! the request's verb (`get`) on the `/metrics` non-resource URL with a
//! SubjectAccessReview, with the same answers (401 `Unauthorized`, 403
//! `Authorization denied for user <name>`, 500 when the API server cannot be asked)
//! and the same caches (authentication 1 minute; allowed 5 minutes, denied 30
//! seconds), so a Prometheus scraping every 15 seconds costs the API server a review
//! every few minutes.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use sha2::{Digest, Sha256};

const AUTHN_TTL: Duration = Duration::from_secs(60);
const ALLOW_TTL: Duration = Duration::from_secs(300);
const DENY_TTL: Duration = Duration::from_secs(30);
/// Cached answers kept at most (oldest dropped first), so tokens sprayed at the
/// endpoint cannot grow memory without bound.
const MAX_CACHED: usize = 4096;

/// Who a token belongs to, as the TokenReview answered.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct User {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

/// Asks the API server about tokens and access (a fake in tests).
#[async_trait]
pub trait Authenticator: Send + Sync {
    /// The user of `token`, `None` when the token is not valid.
    async fn authenticate(&self, token: &str) -> Result<Option<User>, kube::Error>;
    /// Whether `user` may `verb` the non-resource URL `path`, and why not.
    async fn authorize(
        &self,
        user: &User,
        verb: &str,
        path: &str,
    ) -> Result<(bool, String), kube::Error>;
}

/// The real reviews, made with the operator's client (which needs `create` on
/// `tokenreviews` and `subjectaccessreviews`: the scaffold's `metrics-auth-role`).
pub(super) struct KubeReviews {
    client: kube::Client,
}

impl KubeReviews {
    pub(super) fn new(client: kube::Client) -> KubeReviews {
        KubeReviews { client }
    }
}

#[async_trait]
impl Authenticator for KubeReviews {
    async fn authenticate(&self, token: &str) -> Result<Option<User>, kube::Error> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_string(),
                audiences: None,
            },
            ..TokenReview::default()
        };
        let api: Api<TokenReview> = Api::all(self.client.clone());
        let answer = api.create(&PostParams::default(), &review).await?;
        let Some(status) = answer.status.filter(|s| s.authenticated == Some(true)) else {
            return Ok(None);
        };
        let info: UserInfo = status.user.unwrap_or_default();
        Ok(Some(User {
            name: info.username.unwrap_or_default(),
            uid: info.uid.unwrap_or_default(),
            groups: info.groups.unwrap_or_default(),
            extra: info.extra.unwrap_or_default(),
        }))
    }

    async fn authorize(
        &self,
        user: &User,
        verb: &str,
        path: &str,
    ) -> Result<(bool, String), kube::Error> {
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(user.name.clone()),
                uid: (!user.uid.is_empty()).then(|| user.uid.clone()),
                groups: Some(user.groups.clone()),
                extra: (!user.extra.is_empty()).then(|| user.extra.clone()),
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(path.to_string()),
                    verb: Some(verb.to_string()),
                }),
                resource_attributes: None,
            },
            ..SubjectAccessReview::default()
        };
        let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
        let answer = api.create(&PostParams::default(), &review).await?;
        let status = answer.status.unwrap_or_default();
        Ok((status.allowed, status.reason.unwrap_or_default()))
    }
}

/// The filter's decision for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// The HTTP status and body to answer with.
    Refuse(u16, String),
}

struct Cached<T> {
    value: T,
    until: Instant,
}

/// An expiring cache, bounded in size.
struct Cache<K, V> {
    entries: HashMap<K, Cached<V>>,
}

impl<K: std::hash::Hash + Eq + Clone, V: Clone> Cache<K, V> {
    fn new() -> Self {
        Cache {
            entries: HashMap::new(),
        }
    }

    fn get(&mut self, key: &K, now: Instant) -> Option<V> {
        match self.entries.get(key) {
            Some(c) if c.until > now => Some(c.value.clone()),
            Some(_) => {
                self.entries.remove(key);
                None
            }
            None => None,
        }
    }

    fn put(&mut self, key: K, value: V, ttl: Duration, now: Instant) {
        if self.entries.len() >= MAX_CACHED {
            self.entries.retain(|_, c| c.until > now);
            if self.entries.len() >= MAX_CACHED {
                if let Some(oldest) = self
                    .entries
                    .iter()
                    .min_by_key(|(_, c)| c.until)
                    .map(|(k, _)| k.clone())
                {
                    self.entries.remove(&oldest);
                }
            }
        }
        self.entries.insert(
            key,
            Cached {
                value,
                until: now + ttl,
            },
        );
    }
}

/// Authentication and authorization of metrics requests, with their caches.
pub struct MetricsAuth {
    reviews: Arc<dyn Authenticator>,
    /// Keyed by the token's SHA-256: tokens themselves are not kept.
    users: Mutex<Cache<[u8; 32], Option<User>>>,
    access: Mutex<Cache<(User, String, String), bool>>,
}

impl MetricsAuth {
    pub fn new(reviews: Arc<dyn Authenticator>) -> MetricsAuth {
        MetricsAuth {
            reviews,
            users: Mutex::new(Cache::new()),
            access: Mutex::new(Cache::new()),
        }
    }

    /// With the operator's client.
    pub fn kube(client: kube::Client) -> MetricsAuth {
        MetricsAuth::new(Arc::new(KubeReviews::new(client)))
    }

    /// Decides a request given its `Authorization` header, method and path.
    pub async fn check(&self, authorization: Option<&str>, method: &str, path: &str) -> Decision {
        let unauthorized = || Decision::Refuse(401, "Unauthorized".into());
        let Some(token) = authorization.and_then(bearer_token) else {
            return unauthorized();
        };
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let now = Instant::now();
        let cached = lock(&self.users).get(&key, now);
        let user = match cached {
            Some(user) => user,
            None => match self.reviews.authenticate(token).await {
                Ok(user) => {
                    lock(&self.users).put(key, user.clone(), AUTHN_TTL, now);
                    user
                }
                Err(e) => {
                    tracing::error!(target: "controller-runtime.metrics", path, error = %e, "Authentication failed");
                    return Decision::Refuse(500, "Authentication failed".into());
                }
            },
        };
        let Some(user) = user else {
            tracing::debug!(target: "controller-runtime.metrics", path, "Authentication failed");
            return unauthorized();
        };
        let verb = method.to_ascii_lowercase();
        let access_key = (user.clone(), verb.clone(), path.to_string());
        let cached = lock(&self.access).get(&access_key, now);
        let allowed = match cached {
            Some(allowed) => allowed,
            None => match self.reviews.authorize(&user, &verb, path).await {
                Ok((allowed, reason)) => {
                    let ttl = if allowed { ALLOW_TTL } else { DENY_TTL };
                    lock(&self.access).put(access_key, allowed, ttl, now);
                    if !allowed {
                        tracing::debug!(target: "controller-runtime.metrics", path, reason = %reason,
                            "Authorization denied for user {}", user.name);
                    }
                    allowed
                }
                Err(e) => {
                    let msg = format!("Authorization for user {} failed", user.name);
                    tracing::error!(target: "controller-runtime.metrics", path, error = %e, "{msg}");
                    return Decision::Refuse(500, msg);
                }
            },
        };
        if allowed {
            Decision::Allow
        } else {
            Decision::Refuse(403, format!("Authorization denied for user {}", user.name))
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // The caches stay consistent even if a holder panicked.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The token of an `Authorization: Bearer <token>` header (the scheme matched
/// case-insensitively, as the apiserver's bearer authenticator does).
fn bearer_token(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// A stand-in for the API server's reviews, for this module's and the server's tests.
#[cfg(test)]
pub(crate) mod fake {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Tokens `good` (allowed) and `other` (denied); anything else is invalid.
    #[derive(Default)]
    pub(crate) struct Fake {
        pub(crate) authn: AtomicUsize,
        pub(crate) authz: AtomicUsize,
        pub(crate) down: bool,
    }

    #[async_trait]
    impl Authenticator for Fake {
        async fn authenticate(&self, token: &str) -> Result<Option<User>, kube::Error> {
            self.authn.fetch_add(1, Ordering::SeqCst);
            if self.down {
                return Err(kube::Error::Service("connection refused".into()));
            }
            let name = match token {
                "good" => "system:serviceaccount:ns:prometheus",
                "other" => "system:serviceaccount:ns:nobody",
                _ => return Ok(None),
            };
            Ok(Some(User {
                name: name.into(),
                uid: "u".into(),
                groups: vec!["system:authenticated".into()],
                extra: BTreeMap::new(),
            }))
        }

        async fn authorize(
            &self,
            user: &User,
            verb: &str,
            path: &str,
        ) -> Result<(bool, String), kube::Error> {
            self.authz.fetch_add(1, Ordering::SeqCst);
            let allowed = user.name.ends_with(":prometheus") && verb == "get" && path == "/metrics";
            Ok((allowed, String::new()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fake::Fake;
    use super::*;
    use std::sync::atomic::Ordering;

    #[tokio::test]
    async fn answers_and_texts_are_controller_runtimes() {
        let fake = Arc::new(Fake::default());
        let auth = MetricsAuth::new(fake.clone());
        assert_eq!(
            auth.check(None, "GET", "/metrics").await,
            Decision::Refuse(401, "Unauthorized".into())
        );
        assert_eq!(
            auth.check(Some("Basic abc"), "GET", "/metrics").await,
            Decision::Refuse(401, "Unauthorized".into())
        );
        assert_eq!(
            auth.check(Some("Bearer bogus"), "GET", "/metrics").await,
            Decision::Refuse(401, "Unauthorized".into())
        );
        assert_eq!(
            auth.check(Some("Bearer other"), "GET", "/metrics").await,
            Decision::Refuse(
                403,
                "Authorization denied for user system:serviceaccount:ns:nobody".into()
            )
        );
        assert_eq!(
            auth.check(Some("bearer good"), "GET", "/metrics").await,
            Decision::Allow
        );
        // Cached: the second scrape asks nothing.
        let (authn, authz) = (
            fake.authn.load(Ordering::SeqCst),
            fake.authz.load(Ordering::SeqCst),
        );
        assert_eq!(
            auth.check(Some("Bearer good"), "GET", "/metrics").await,
            Decision::Allow
        );
        assert_eq!(fake.authn.load(Ordering::SeqCst), authn);
        assert_eq!(fake.authz.load(Ordering::SeqCst), authz);
    }

    #[tokio::test]
    async fn an_unreachable_api_server_is_a_500() {
        let auth = MetricsAuth::new(Arc::new(Fake {
            down: true,
            ..Fake::default()
        }));
        assert_eq!(
            auth.check(Some("Bearer good"), "GET", "/metrics").await,
            Decision::Refuse(500, "Authentication failed".into())
        );
    }

    #[test]
    fn caches_expire_and_stay_bounded() {
        let mut c: Cache<u32, bool> = Cache::new();
        let now = Instant::now();
        c.put(1, true, Duration::from_secs(1), now);
        assert_eq!(c.get(&1, now), Some(true));
        assert_eq!(c.get(&1, now + Duration::from_secs(2)), None);
        for i in 0..(MAX_CACHED as u32 + 10) {
            c.put(i, true, Duration::from_secs(60), now);
        }
        assert!(c.entries.len() <= MAX_CACHED);
    }
}
