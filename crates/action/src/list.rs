//! `helm list`: the newest revision of each release in a namespace (or in every
//! namespace holding release records), filtered by status as Helm's state flags do.

use std::collections::BTreeMap;

use release::record::{Release, Status};

use crate::config::ActionConfig;
use crate::error::{Error, Result};

/// Which statuses `list` shows (Helm's `--all`, `--deployed`, `--failed`, ...).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StateFilter {
    /// Every status (`--all`).
    pub all: bool,
    pub deployed: bool,
    pub failed: bool,
    /// `pending-install`, `pending-upgrade` and `pending-rollback`.
    pub pending: bool,
    pub superseded: bool,
    pub uninstalled: bool,
    pub uninstalling: bool,
}

impl StateFilter {
    /// Whether a release whose newest revision is in `status` is shown. With no flag
    /// set, Helm shows deployed and failed releases.
    pub fn shows(&self, status: Status) -> bool {
        if self.all {
            return true;
        }
        let any = self.deployed
            || self.failed
            || self.pending
            || self.superseded
            || self.uninstalled
            || self.uninstalling;
        if !any {
            return matches!(status, Status::Deployed | Status::Failed);
        }
        (self.deployed && status == Status::Deployed)
            || (self.failed && status == Status::Failed)
            || (self.pending && status.is_pending())
            || (self.superseded && status == Status::Superseded)
            || (self.uninstalled && status == Status::Uninstalled)
            || (self.uninstalling && status == Status::Uninstalling)
    }
}

/// Where `list` looks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Namespaces {
    One(String),
    /// Every namespace holding release records (`--all-namespaces`).
    All,
}

/// The `list` verb.
pub struct List<'a> {
    cfg: &'a ActionConfig,
    filter: StateFilter,
}

impl<'a> List<'a> {
    pub fn new(cfg: &'a ActionConfig, filter: StateFilter) -> List<'a> {
        List { cfg, filter }
    }

    /// The releases shown, sorted by name, then namespace.
    pub async fn run(&self, namespaces: &Namespaces) -> Result<Vec<Release>> {
        let namespaces = match namespaces {
            Namespaces::One(ns) => vec![ns.clone()],
            Namespaces::All => self
                .cfg
                .driver()
                .namespaces(self.cfg.client())
                .await
                .map_err(|source| Error::Storage {
                    release: String::new(),
                    source,
                })?,
        };
        let mut releases = Vec::new();
        for ns in &namespaces {
            let all = self
                .cfg
                .storage(ns)
                .list_releases()
                .await
                .map_err(|source| Error::Storage {
                    release: String::new(),
                    source,
                })?;
            releases.extend(newest(all).filter(|r| self.filter.shows(r.status())));
        }
        releases.sort_by(|x, y| x.name.cmp(&y.name).then(x.namespace.cmp(&y.namespace)));
        Ok(releases)
    }
}

/// The newest revision of each release, as Helm lists them.
fn newest(records: Vec<Release>) -> impl Iterator<Item = Release> {
    let mut latest: BTreeMap<String, Release> = BTreeMap::new();
    for r in records {
        match latest.get(&r.name) {
            Some(cur) if cur.version >= r.version => {}
            _ => {
                latest.insert(r.name.clone(), r);
            }
        }
    }
    latest.into_values()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(name: &str, version: i64, status: Status) -> Release {
        let mut r = Release {
            name: name.into(),
            version,
            ..Release::default()
        };
        r.set_status(status, "");
        r
    }

    #[test]
    fn default_filter_shows_deployed_and_failed() {
        let f = StateFilter::default();
        assert!(f.shows(Status::Deployed));
        assert!(f.shows(Status::Failed));
        assert!(!f.shows(Status::Superseded));
        assert!(!f.shows(Status::PendingInstall));
        assert!(!f.shows(Status::Uninstalled));
    }

    #[test]
    fn state_flags_select_only_their_statuses() {
        let pending = StateFilter {
            pending: true,
            ..StateFilter::default()
        };
        assert!(pending.shows(Status::PendingUpgrade));
        assert!(pending.shows(Status::PendingRollback));
        assert!(!pending.shows(Status::Deployed));
        let kept = StateFilter {
            uninstalled: true,
            superseded: true,
            ..StateFilter::default()
        };
        assert!(kept.shows(Status::Uninstalled));
        assert!(kept.shows(Status::Superseded));
        assert!(!kept.shows(Status::Failed));
        let all = StateFilter {
            all: true,
            ..StateFilter::default()
        };
        assert!(all.shows(Status::Uninstalling));
    }

    #[test]
    fn only_the_newest_revision_of_each_release_counts() {
        let records = vec![
            rel("b", 1, Status::Superseded),
            rel("a", 2, Status::Failed),
            rel("b", 2, Status::Deployed),
            rel("a", 1, Status::Deployed),
        ];
        let shown: Vec<(String, i64)> = newest(records).map(|r| (r.name, r.version)).collect();
        assert_eq!(shown, [("a".to_string(), 2), ("b".to_string(), 2)]);
    }

    #[tokio::test]
    async fn lists_the_newest_revision_per_release() {
        let (cfg, _) = crate::testing::memory_config();
        let store = cfg.storage(crate::testing::NS);
        for (name, version, status) in [
            ("a", 1, Status::Superseded),
            ("a", 2, Status::Deployed),
            ("b", 1, Status::Failed),
            ("c", 1, Status::Uninstalled),
        ] {
            let mut r = rel(name, version, status);
            r.namespace = crate::testing::NS.into();
            store.create(&r).await.expect("record");
        }
        let shown = List::new(&cfg, StateFilter::default())
            .run(&Namespaces::One(crate::testing::NS.into()))
            .await
            .expect("list");
        let names: Vec<_> = shown.iter().map(|r| (r.name.as_str(), r.version)).collect();
        assert_eq!(names, [("a", 2), ("b", 1)]);
    }
}
