//! The hand-off protocol, as pure state (no API calls, the clock passed in), so its
//! timing and safety can be tested without a server.
//!
//! Each replica publishes in its own Lease the *view* it acts on: a fingerprint of
//! the member list (identities and watched kinds) it last read, written only once
//! none of its in-flight reconciles is of a CR that view gives to someone else (the
//! *ack*). A replica reconciles a CR only when the CR is its own under
//! - its current view (what it read last: a CR it lost stops at once),
//! - its settled view (the last view every member of it was seen to ack), and
//! - every ack it may have published and not yet replaced (what others may read).
//!
//! A CR it gains therefore waits until every live member has acked the new view,
//! which each does only after its reconciles of CRs it lost have finished. Members
//! are read in one consistent list taken after our own write, so what a gainer saw
//! acked is what those members act on. See docs/operator.md ("Sharding") for the
//! argument and for what happens when a replica dies.

use std::collections::HashMap;

use k8s_openapi::api::coordination::v1::Lease;
use tokio::time::Instant;

use super::assign::{self, fingerprint};
use crate::leader::{observe_at, Observed};

/// The annotation on a member's Lease listing the kinds it watches, each as the
/// operator names its watches (`group/version, Kind=Kind`), joined by `;`.
pub const WATCHES_ANNOTATION: &str = "rudder.dev/shard-watches";
/// The annotation on a member's Lease holding the fingerprint of the view it acts on.
pub const ACK_ANNOTATION: &str = "rudder.dev/shard-view";

/// One live member as its Lease describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub identity: String,
    pub watches: Vec<String>,
    pub ack: Option<u64>,
}

/// A member list as one replica saw it, in a canonical order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    members: Vec<(String, Vec<String>)>,
    fingerprint: u64,
}

impl View {
    pub fn new(members: &[Member]) -> View {
        let mut list: Vec<(String, Vec<String>)> = members
            .iter()
            .map(|m| {
                let mut w = m.watches.clone();
                w.sort();
                w.dedup();
                (m.identity.clone(), w)
            })
            .collect();
        list.sort();
        list.dedup_by(|a, b| a.0 == b.0);
        let mut text = String::new();
        for (id, watches) in &list {
            text.push_str(id);
            text.push('\t');
            text.push_str(&watches.join(";"));
            text.push('\n');
        }
        View {
            fingerprint: fingerprint(text.as_bytes()),
            members: list,
        }
    }

    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    fn contains(&self, identity: &str) -> bool {
        self.members.iter().any(|(id, _)| id == identity)
    }

    fn watchers<'a>(&'a self, watch: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.members
            .iter()
            .filter(move |(_, w)| w.iter().any(|x| x == watch))
            .map(|(id, _)| id.as_str())
    }

    /// The member owning `key` of `watch` under this view.
    pub fn owner<'a>(&'a self, watch: &'a str, key: &str) -> Option<&'a str> {
        assign::owner(key, self.watchers(watch))
    }

    /// How many members watch `watch`.
    pub fn members_of(&self, watch: &str) -> usize {
        self.watchers(watch).count()
    }
}

/// What one replica knows and has promised; see the module documentation.
#[derive(Debug)]
pub struct Handoff {
    me: String,
    current: Option<View>,
    settled: Option<View>,
    /// Acks others may read now: the last confirmed write, plus any write whose
    /// outcome is unknown.
    promised: Vec<View>,
}

impl Handoff {
    pub fn new(me: impl Into<String>) -> Handoff {
        Handoff {
            me: me.into(),
            current: None,
            settled: None,
            promised: Vec::new(),
        }
    }

    pub fn me(&self) -> &str {
        &self.me
    }

    /// The members read last (after our own latest write). Returns whether what we
    /// own may have grown (the settled view changed), so gained CRs can be queued.
    pub fn observe(&mut self, members: &[Member]) -> bool {
        let view = View::new(members);
        if !view.contains(&self.me) {
            // Our own Lease is not there (not yet written, or removed): own nothing.
            self.current = None;
            return false;
        }
        let settled = members.iter().all(|m| m.ack == Some(view.fingerprint()));
        self.current = Some(view.clone());
        if settled && self.settled.as_ref() != Some(&view) {
            self.settled = Some(view);
            return true;
        }
        false
    }

    /// Forgets the current view: after our Lease could not be renewed in time, or
    /// while leaving, nothing is ours.
    pub fn stand_down(&mut self) {
        self.current = None;
    }

    /// Whether we may start reconciling `key` of `watch` now.
    pub fn owns(&self, watch: &str, key: &str) -> bool {
        let mine = |v: &View| v.owner(watch, key) == Some(self.me.as_str());
        match (&self.current, &self.settled) {
            (Some(current), Some(settled)) => {
                mine(current) && mine(settled) && self.promised.iter().all(mine)
            }
            _ => false,
        }
    }

    /// The view to ack in our next write: the current one once none of `in_flight`
    /// (the CRs being reconciled now) belongs to someone else under it; until then
    /// `None` (keep the ack already published).
    pub fn ack_ready<'a>(
        &self,
        mut in_flight: impl Iterator<Item = (&'a str, &'a str)>,
    ) -> Option<&View> {
        let current = self.current.as_ref()?;
        in_flight
            .all(|(watch, key)| current.owner(watch, key) == Some(self.me.as_str()))
            .then_some(current)
    }

    /// A write carrying `view` as our ack is about to be sent.
    pub fn publishing(&mut self, view: &View) {
        if !self.promised.contains(view) {
            self.promised.push(view.clone());
        }
    }

    /// The server confirmed a write carrying `view` as our ack: it is the only one
    /// anyone can read now.
    pub fn published(&mut self, view: &View) {
        self.promised.clear();
        self.promised.push(view.clone());
    }

    /// Members watching `watch` in the current view (0 when we own nothing).
    pub fn members_of(&self, watch: &str) -> usize {
        self.current.as_ref().map_or(0, |v| v.members_of(watch))
    }

    /// Whether the current view is settled (every member acked it).
    pub fn is_settled(&self) -> bool {
        self.current.is_some() && self.current == self.settled
    }
}

/// Tracks every member Lease as read, on our own clock: a Lease is live while the
/// time since we first saw its current renewal is under its duration (the rule
/// leader election uses, so clock skew between nodes does not matter).
#[derive(Default)]
pub struct Roster {
    seen: HashMap<String, Observed>,
}

impl Roster {
    /// Reads one list of the group's Leases at `now`: returns the live members and the
    /// names of Leases expired for longer than `forget_after` (dead replicas' leftovers).
    pub fn update(
        &mut self,
        leases: &[Lease],
        now: Instant,
        forget_after: std::time::Duration,
    ) -> (Vec<Member>, Vec<String>) {
        let mut next = HashMap::new();
        let mut live = Vec::new();
        let mut stale = Vec::new();
        for lease in leases {
            let Some(name) = lease.metadata.name.clone() else {
                continue;
            };
            let seen = observe_at(lease, self.seen.get(&name), now);
            let expires = seen.at + seen.duration;
            if !seen.holder.is_empty() && expires > now {
                live.push(member_of(lease, &seen.holder));
            } else if expires + forget_after <= now {
                stale.push(name.clone());
            }
            next.insert(name, seen);
        }
        self.seen = next;
        (live, stale)
    }
}

fn member_of(lease: &Lease, holder: &str) -> Member {
    let annotations = lease.metadata.annotations.as_ref();
    let get = |k: &str| annotations.and_then(|a| a.get(k)).map(String::as_str);
    Member {
        identity: holder.to_string(),
        watches: get(WATCHES_ANNOTATION)
            .map(|w| {
                w.split(';')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        ack: get(ACK_ANNOTATION).and_then(|a| u64::from_str_radix(a, 16).ok()),
    }
}

/// How an ack is written into [`ACK_ANNOTATION`].
pub fn ack_text(view: &View) -> String {
    format!("{:016x}", view.fingerprint())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::coordination::v1::LeaseSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
    use std::time::Duration;

    const W: &str = "demo.rudder.dev/v1, Kind=Hello";

    fn member(id: &str, ack: Option<&View>) -> Member {
        Member {
            identity: id.into(),
            watches: vec![W.into()],
            ack: ack.map(View::fingerprint),
        }
    }

    fn keys() -> Vec<String> {
        (0..600).map(|i| format!("ns-{}/cr-{i}", i % 7)).collect()
    }

    /// A replica acks its current view (nothing in flight) and confirms the write.
    fn ack(h: &mut Handoff) -> View {
        let v = h.ack_ready(std::iter::empty()).expect("ready").clone();
        h.publishing(&v);
        h.published(&v);
        v
    }

    fn owned(h: &Handoff) -> Vec<String> {
        keys().into_iter().filter(|k| h.owns(W, k)).collect()
    }

    #[test]
    fn a_lone_replica_owns_everything_once_its_ack_is_read_back() {
        let mut a = Handoff::new("a");
        assert!(!a.owns(W, "ns/x"), "nothing before any read");
        a.observe(&[member("a", None)]);
        assert!(!a.owns(W, "ns/x"), "not settled before its own ack is read");
        let v = ack(&mut a);
        assert!(
            a.observe(&[member("a", Some(&v))]),
            "settling grows what it owns"
        );
        assert_eq!(owned(&a).len(), keys().len());
        assert!(a.is_settled());
    }

    /// a alone, then b joins: a's lost CRs stop at once; b starts only after a acked.
    #[test]
    fn a_joiner_waits_for_the_old_owner_to_ack() {
        let mut a = Handoff::new("a");
        a.observe(&[member("a", None)]);
        let solo = ack(&mut a);
        a.observe(&[member("a", Some(&solo))]);

        let mut b = Handoff::new("b");
        b.observe(&[member("a", Some(&solo)), member("b", None)]);
        let pair = ack(&mut b);
        b.observe(&[member("a", Some(&solo)), member("b", Some(&pair))]);
        assert!(owned(&b).is_empty(), "b owns nothing until a acked");

        // a reads b's Lease: the CRs now b's stop for a at once.
        a.observe(&[member("a", Some(&solo)), member("b", Some(&pair))]);
        let a_now = owned(&a);
        assert!(a_now.len() < keys().len() && !a_now.is_empty());
        assert!(a_now.iter().all(|k| pair.owner(W, k) == Some("a")));

        // a is still reconciling one of b's CRs: it may not ack yet.
        let bs = keys()
            .into_iter()
            .find(|k| pair.owner(W, k) == Some("b"))
            .expect("b owns some");
        assert!(a.ack_ready([(W, bs.as_str())].into_iter()).is_none());
        // Finished: a acks, b reads it and starts.
        let a_ack = ack(&mut a);
        assert_eq!(a_ack, pair);
        let both = [member("a", Some(&pair)), member("b", Some(&pair))];
        assert!(b.observe(&both));
        a.observe(&both);
        let (oa, ob) = (owned(&a), owned(&b));
        assert_eq!(oa.len() + ob.len(), keys().len());
        assert!(oa.iter().all(|k| !ob.contains(k)), "no CR owned twice");
    }

    /// Two replicas' owned sets never overlap at any step, whatever order their reads
    /// and writes interleave in, through a join and a leave.
    #[test]
    fn owned_sets_never_overlap_through_a_join_and_a_leave() {
        let mut a = Handoff::new("a");
        let mut b = Handoff::new("b");
        let mut c = Handoff::new("c");
        // Leases as the server holds them: (identity, ack).
        let mut leases: Vec<(String, Option<View>)> = vec![];
        fn read(leases: &[(String, Option<View>)]) -> Vec<Member> {
            leases
                .iter()
                .map(|(id, ack)| member(id, ack.as_ref()))
                .collect()
        }
        fn write(h: &mut Handoff, leases: &mut Vec<(String, Option<View>)>) {
            let ack = h.ack_ready(std::iter::empty()).cloned();
            if let Some(v) = &ack {
                h.publishing(v);
                h.published(v);
            }
            match leases.iter_mut().find(|(id, _)| id == h.me()) {
                Some(l) => {
                    if ack.is_some() {
                        l.1 = ack;
                    }
                }
                None => leases.push((h.me().to_string(), ack)),
            }
        }
        let check = |hs: &[&Handoff]| {
            for k in keys() {
                let owners = hs.iter().filter(|h| h.owns(W, &k)).count();
                assert!(owners <= 1, "{k} owned by {owners} replicas");
            }
        };
        // Round-robin ticks: each replica writes then reads, like the membership loop.
        for step in 0..40 {
            if step == 0 {
                write(&mut a, &mut leases);
            }
            if step == 3 {
                write(&mut b, &mut leases);
            }
            if step == 8 {
                write(&mut c, &mut leases);
            }
            if step == 20 {
                // c leaves: its Lease goes, and it stands down first.
                c.stand_down();
                leases.retain(|(id, _)| id != "c");
            }
            for h in [&mut a, &mut b, &mut c] {
                let present = leases.iter().any(|(id, _)| id == h.me());
                if !present {
                    continue;
                }
                write(h, &mut leases);
                let seen = read(&leases);
                h.observe(&seen);
                check(&[&*h]);
            }
            check(&[&a, &b, &c]);
        }
        let (oa, ob) = (owned(&a), owned(&b));
        assert_eq!(
            oa.len() + ob.len(),
            keys().len(),
            "a and b cover all after c left"
        );
        assert!(owned(&c).is_empty());
    }

    #[test]
    fn an_unconfirmed_ack_still_binds() {
        let mut a = Handoff::new("a");
        a.observe(&[member("a", None), member("b", None)]);
        let pair = ack(&mut a);
        a.observe(&[member("a", Some(&pair)), member("b", Some(&pair))]);
        let with_b = owned(&a);
        // b vanishes; a sends an ack of the solo view but the write's outcome is unknown.
        a.observe(&[member("a", Some(&pair))]);
        let solo = a.ack_ready(std::iter::empty()).expect("ready").clone();
        a.publishing(&solo);
        // A read showing the solo ack settles it, but the pair ack may still be read by
        // someone: only CRs a owns under both are a's.
        a.observe(&[member("a", Some(&solo))]);
        assert_eq!(owned(&a), with_b);
        a.published(&solo);
        assert_eq!(owned(&a).len(), keys().len());
    }

    fn lease(name: &str, holder: &str, renew_secs: i64, ack: Option<&str>) -> Lease {
        let mut annotations = std::collections::BTreeMap::new();
        annotations.insert(WATCHES_ANNOTATION.to_string(), format!("{W};other"));
        if let Some(a) = ack {
            annotations.insert(ACK_ANNOTATION.to_string(), a.to_string());
        }
        Lease {
            metadata: ObjectMeta {
                name: Some(name.into()),
                annotations: Some(annotations),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(holder.into()),
                lease_duration_seconds: Some(15),
                renew_time: Some(MicroTime(
                    k8s_openapi::jiff::Timestamp::from_second(renew_secs).expect("time"),
                )),
                ..LeaseSpec::default()
            }),
        }
    }

    #[test]
    fn a_lease_is_live_until_unchanged_for_its_duration_on_our_clock() {
        let mut r = Roster::default();
        let t0 = Instant::now();
        let forget = Duration::from_secs(30);
        let (live, stale) = r.update(
            &[lease("l-a", "a", 100, Some("00000000000000ff"))],
            t0,
            forget,
        );
        assert_eq!(live.len(), 1);
        assert_eq!(live[0].identity, "a");
        assert_eq!(live[0].watches, vec![W.to_string(), "other".to_string()]);
        assert_eq!(live[0].ack, Some(0xff));
        assert!(stale.is_empty());
        // Unchanged for 14 s: still live; renewed at 14 s: live for 15 s more.
        let l = lease("l-a", "a", 100, None);
        assert_eq!(
            r.update(
                std::slice::from_ref(&l),
                t0 + Duration::from_secs(14),
                forget
            )
            .0
            .len(),
            1
        );
        let renewed = lease("l-a", "a", 114, None);
        let t = t0 + Duration::from_secs(20);
        assert_eq!(
            r.update(std::slice::from_ref(&renewed), t, forget).0.len(),
            1
        );
        assert_eq!(
            r.update(
                std::slice::from_ref(&renewed),
                t + Duration::from_secs(14),
                forget
            )
            .0
            .len(),
            1
        );
        // 15 s without a renewal: dead; 30 s after that: to be removed.
        let (live, stale) = r.update(
            std::slice::from_ref(&renewed),
            t + Duration::from_secs(15),
            forget,
        );
        assert!(live.is_empty());
        assert!(stale.is_empty());
        let (_, stale) = r.update(&[renewed], t + Duration::from_secs(45), forget);
        assert_eq!(stale, vec!["l-a".to_string()]);
    }

    #[test]
    fn a_released_lease_is_not_a_member() {
        let mut r = Roster::default();
        let (live, _) = r.update(
            &[lease("l-a", "", 100, None)],
            Instant::now(),
            Duration::ZERO,
        );
        assert!(live.is_empty());
    }
}
