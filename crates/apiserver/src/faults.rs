//! Fault injection for tests: make chosen API requests fail the way a real API
//! server under stress does (500, 409, 429, 503…), to check that clients recover.
//!
//! Rules are added at run time through [`crate::Server::faults`]; with no rule the
//! check is one relaxed atomic load per request. A rule picks requests by verb,
//! resource, namespace and name, fires on the Nth match, on every match or with a
//! probability (seeded, so a failing run can be replayed), and fails the request
//! either before it takes effect or after (the write happened, the client sees an
//! error: a lost response).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::http::Method;

use crate::error::ApiError;

/// The API verb of a request, as RBAC names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verb {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Delete,
    DeleteCollection,
}

impl Verb {
    /// Every verb that changes state.
    pub const WRITES: [Verb; 5] = [
        Verb::Create,
        Verb::Update,
        Verb::Patch,
        Verb::Delete,
        Verb::DeleteCollection,
    ];

    /// Whether the verb changes state.
    pub fn is_write(self) -> bool {
        Verb::WRITES.contains(&self)
    }

    /// The verb of an HTTP request on a resource endpoint.
    pub fn of(method: &Method, has_name: bool, watch: bool) -> Option<Verb> {
        Some(match (method.as_str(), has_name) {
            ("GET", false) if watch => Verb::Watch,
            ("GET", false) => Verb::List,
            ("GET", true) => Verb::Get,
            ("POST", _) => Verb::Create,
            ("PUT", true) => Verb::Update,
            ("PATCH", true) => Verb::Patch,
            ("DELETE", true) => Verb::Delete,
            ("DELETE", false) => Verb::DeleteCollection,
            _ => return None,
        })
    }
}

/// Which requests a rule applies to; empty lists and `None` match anything.
#[derive(Debug, Clone, Default)]
pub struct Match {
    /// Verbs to match; empty matches every write (never reads).
    pub verbs: Vec<Verb>,
    /// Resources (plural, e.g. `secrets`, `deployments`) to match; empty matches all.
    pub resources: Vec<String>,
    /// Only requests in this namespace.
    pub namespace: Option<String>,
    /// Only objects whose name starts with this.
    pub name_prefix: Option<String>,
}

impl Match {
    /// Every write request.
    pub fn writes() -> Match {
        Match::default()
    }

    /// Restricts to these verbs.
    pub fn verbs(mut self, verbs: impl IntoIterator<Item = Verb>) -> Match {
        self.verbs = verbs.into_iter().collect();
        self
    }

    /// Restricts to this resource (plural); may be called several times.
    pub fn resource(mut self, plural: impl Into<String>) -> Match {
        self.resources.push(plural.into());
        self
    }

    /// Restricts to one namespace.
    pub fn namespace(mut self, ns: impl Into<String>) -> Match {
        self.namespace = Some(ns.into());
        self
    }

    /// Restricts to objects whose name starts with `prefix`.
    pub fn name_prefix(mut self, prefix: impl Into<String>) -> Match {
        self.name_prefix = Some(prefix.into());
        self
    }

    fn matches(&self, req: &Request<'_>) -> bool {
        let verb_ok = if self.verbs.is_empty() {
            req.verb.is_write()
        } else {
            self.verbs.contains(&req.verb)
        };
        verb_ok
            && (self.resources.is_empty() || self.resources.iter().any(|r| r == req.resource))
            && self
                .namespace
                .as_deref()
                .is_none_or(|ns| req.namespace == Some(ns))
            && self
                .name_prefix
                .as_deref()
                .is_none_or(|p| req.name.is_some_and(|n| n.starts_with(p)))
    }
}

/// When a rule fires among the requests it matches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Trigger {
    /// Only the Nth matching request (1-based).
    Nth(u64),
    /// The Nth matching request and every one after it.
    FromNth(u64),
    /// Every matching request.
    Always,
    /// Each matching request with this probability (0.0–1.0), from the seeded RNG.
    Probability(f64),
    /// Never: the rule only counts matching requests (see [`RuleStats::matched`]).
    Never,
}

/// Whether the failed request takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// Refused before anything changes.
    Before,
    /// Carried out, then answered with the error (a lost response).
    After,
}

/// A fault: which requests, when, and the HTTP status they get.
#[derive(Debug, Clone)]
pub struct Rule {
    pub matcher: Match,
    pub trigger: Trigger,
    /// Status code answered: 409, 429, 500, 503 and 504 get Kubernetes' reasons.
    pub code: u16,
    pub when: When,
}

impl Rule {
    /// Fails the `n`th (1-based) request matching `matcher` with `code`, before it
    /// takes effect.
    pub fn nth(matcher: Match, n: u64, code: u16) -> Rule {
        Rule {
            matcher,
            trigger: Trigger::Nth(n),
            code,
            when: When::Before,
        }
    }

    /// Fails matching requests with probability `p`.
    pub fn probability(matcher: Match, p: f64, code: u16) -> Rule {
        Rule {
            matcher,
            trigger: Trigger::Probability(p),
            code,
            when: When::Before,
        }
    }

    /// Only counts the requests `matcher` selects.
    pub fn count(matcher: Match) -> Rule {
        Rule {
            matcher,
            trigger: Trigger::Never,
            code: 500,
            when: When::Before,
        }
    }

    /// Lets the request take effect and fails its response instead.
    pub fn after(mut self) -> Rule {
        self.when = When::After;
        self
    }
}

/// Identifies an added rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RuleId(u64);

/// What a rule has seen so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RuleStats {
    /// Requests the rule matched.
    pub matched: u64,
    /// Requests it failed.
    pub injected: u64,
}

/// One request, as rules see it.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub verb: Verb,
    pub group: &'a str,
    pub resource: &'a str,
    pub namespace: Option<&'a str>,
    pub name: Option<&'a str>,
}

/// A fault to apply to one request.
#[derive(Debug, Clone)]
pub struct Injection {
    pub code: u16,
    pub when: When,
    message: String,
}

impl Injection {
    /// Whether the request must be refused before it takes effect.
    pub fn is_before(&self) -> bool {
        self.when == When::Before
    }

    /// The error answered to the client.
    pub fn error(&self) -> ApiError {
        let reason = match self.code {
            409 => "Conflict",
            429 => "TooManyRequests",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ => "InternalError",
        };
        ApiError::new(self.code, reason, self.message.clone())
    }
}

#[derive(Default)]
struct State {
    rules: Vec<(RuleId, Rule, RuleStats)>,
    next_id: u64,
    rng: u64,
}

#[derive(Default)]
struct Inner {
    /// Set while any rule exists, so requests skip the lock otherwise.
    active: AtomicBool,
    state: Mutex<State>,
}

/// The fault injector of one server; clones share the rules.
#[derive(Clone, Default)]
pub struct Faults {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Faults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Faults")
            .field("active", &self.is_active())
            .finish()
    }
}

impl Faults {
    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the rules half-changed.
        self.inner
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether any rule is installed.
    pub fn is_active(&self) -> bool {
        self.inner.active.load(Ordering::Relaxed)
    }

    /// Seeds the RNG of probability rules (the default seed is 0, which is remapped).
    pub fn seed(&self, seed: u64) {
        self.state().rng = seed;
    }

    /// Installs a rule; its counters start at zero.
    pub fn add(&self, rule: Rule) -> RuleId {
        let mut st = self.state();
        st.next_id += 1;
        let id = RuleId(st.next_id);
        st.rules.push((id, rule, RuleStats::default()));
        self.inner.active.store(true, Ordering::Relaxed);
        id
    }

    /// Removes a rule and returns its counters.
    pub fn remove(&self, id: RuleId) -> Option<RuleStats> {
        let mut st = self.state();
        let pos = st.rules.iter().position(|(i, _, _)| *i == id)?;
        let (_, _, stats) = st.rules.remove(pos);
        self.inner
            .active
            .store(!st.rules.is_empty(), Ordering::Relaxed);
        Some(stats)
    }

    /// Removes every rule.
    pub fn clear(&self) {
        let mut st = self.state();
        st.rules.clear();
        self.inner.active.store(false, Ordering::Relaxed);
    }

    /// The counters of a rule (zero when it was removed).
    pub fn stats(&self, id: RuleId) -> RuleStats {
        self.state()
            .rules
            .iter()
            .find(|(i, _, _)| *i == id)
            .map(|(_, _, s)| *s)
            .unwrap_or_default()
    }

    /// Decides whether `req` fails. Every rule that matches counts the request; the
    /// first one that fires decides.
    pub fn check(&self, req: &Request<'_>) -> Option<Injection> {
        if !self.is_active() {
            return None;
        }
        let mut st = self.state();
        let mut rng = st.rng;
        let mut out = None;
        for (_, rule, stats) in st.rules.iter_mut() {
            if !rule.matcher.matches(req) {
                continue;
            }
            stats.matched += 1;
            let n = stats.matched;
            let fire = match rule.trigger {
                Trigger::Nth(k) => n == k,
                Trigger::FromNth(k) => n >= k,
                Trigger::Always => true,
                Trigger::Probability(p) => next_unit(&mut rng) < p,
                Trigger::Never => false,
            };
            if fire && out.is_none() {
                stats.injected += 1;
                out = Some(Injection {
                    code: rule.code,
                    when: rule.when,
                    message: format!(
                        "injected fault: {:?} {}{}{} (matching request #{n})",
                        req.verb,
                        req.resource,
                        req.namespace
                            .map(|ns| format!(" in {ns}"))
                            .unwrap_or_default(),
                        req.name.map(|n| format!(" named {n}")).unwrap_or_default(),
                    ),
                });
            }
        }
        st.rng = rng;
        out
    }

    /// [`Faults::check`] for an HTTP request on a resource endpoint.
    pub fn on_request(
        &self,
        method: &Method,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        name: Option<&str>,
        watch: bool,
    ) -> Option<Injection> {
        if !self.is_active() {
            return None;
        }
        let verb = Verb::of(method, name.is_some(), watch)?;
        self.check(&Request {
            verb,
            group,
            resource,
            namespace,
            name,
        })
    }
}

/// xorshift64* step mapped to [0, 1).
fn next_unit(state: &mut u64) -> f64 {
    if *state == 0 {
        *state = 0x9E37_79B9_7F4A_7C15;
    }
    let mut x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req<'a>(verb: Verb, resource: &'a str, name: &'a str) -> Request<'a> {
        Request {
            verb,
            group: "",
            resource,
            namespace: Some("default"),
            name: Some(name),
        }
    }

    #[test]
    fn inactive_by_default() {
        let f = Faults::default();
        assert!(!f.is_active());
        assert!(f.check(&req(Verb::Create, "secrets", "a")).is_none());
    }

    #[test]
    fn nth_write_fails_once_and_reads_are_not_counted() {
        let f = Faults::default();
        let id = f.add(Rule::nth(Match::writes().resource("secrets"), 2, 500));
        assert!(f.check(&req(Verb::Get, "secrets", "a")).is_none());
        assert!(f.check(&req(Verb::Create, "secrets", "a")).is_none());
        assert!(f.check(&req(Verb::Patch, "configmaps", "a")).is_none());
        let hit = f
            .check(&req(Verb::Update, "secrets", "a"))
            .expect("2nd write fails");
        assert_eq!(hit.error().code, 500);
        assert_eq!(hit.error().reason, "InternalError");
        assert!(f.check(&req(Verb::Delete, "secrets", "a")).is_none());
        assert_eq!(
            f.stats(id),
            RuleStats {
                matched: 3,
                injected: 1
            }
        );
        assert_eq!(f.remove(id).map(|s| s.matched), Some(3));
        assert!(!f.is_active());
    }

    #[test]
    fn probability_is_reproducible_from_the_seed() {
        let run = |seed| {
            let f = Faults::default();
            f.seed(seed);
            f.add(Rule::probability(Match::writes(), 0.5, 429));
            (0..64)
                .map(|_| f.check(&req(Verb::Create, "pods", "p")).is_some())
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        let hits = run(7).iter().filter(|h| **h).count();
        assert!((10..=54).contains(&hits), "{hits} of 64");
    }

    #[test]
    fn name_prefix_and_verbs() {
        let f = Faults::default();
        f.add(Rule {
            matcher: Match::default().verbs([Verb::Get]).name_prefix("sh.helm"),
            trigger: Trigger::Always,
            code: 503,
            when: When::After,
        });
        assert!(f.check(&req(Verb::Get, "secrets", "other")).is_none());
        assert!(f
            .check(&req(Verb::Create, "secrets", "sh.helm.x"))
            .is_none());
        let hit = f
            .check(&req(Verb::Get, "secrets", "sh.helm.x"))
            .expect("fires");
        assert_eq!(hit.when, When::After);
        assert_eq!(hit.error().reason, "ServiceUnavailable");
    }

    #[tokio::test]
    async fn server_answers_injected_errors_before_or_after_the_write() {
        use k8s_openapi::api::core::v1::ConfigMap;
        use kube::api::{Api, PostParams};

        let server = crate::Server::start(crate::Config::default())
            .await
            .expect("server starts");
        let api: Api<ConfigMap> = Api::namespaced(server.client().expect("client"), "default");
        let cm = |name: &str| ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let faults = server.faults();
        let lost = faults.add(Rule::nth(Match::writes().resource("configmaps"), 1, 500).after());
        let err = api.create(&PostParams::default(), &cm("lost")).await;
        assert!(
            matches!(err, Err(kube::Error::Api(ref s)) if s.code == 500),
            "{err:?}"
        );
        assert!(
            api.get_opt("lost").await.expect("read").is_some(),
            "write happened"
        );
        assert_eq!(faults.stats(lost).injected, 1);
        faults.clear();

        faults.add(Rule::nth(Match::writes().namespace("default"), 1, 409));
        let err = api.create(&PostParams::default(), &cm("refused")).await;
        assert!(
            matches!(err, Err(kube::Error::Api(ref s)) if s.code == 409),
            "{err:?}"
        );
        assert!(
            api.get_opt("refused").await.expect("read").is_none(),
            "nothing written"
        );
        api.create(&PostParams::default(), &cm("refused"))
            .await
            .expect("only the first write fails");
        server.stop().await;
    }
}
