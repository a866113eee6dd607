//! `helm history`: a release's revisions, oldest first; and the same read by labels
//! only, without decoding any record (what the operator decides from).

use release::record::Release;
use release::RecordMeta;

use crate::config::ActionConfig;
use crate::error::{Error, Result};

/// The `history` verb.
pub struct History<'a> {
    cfg: &'a ActionConfig,
    namespace: String,
}

impl<'a> History<'a> {
    pub fn new(cfg: &'a ActionConfig, namespace: impl Into<String>) -> History<'a> {
        History {
            cfg,
            namespace: namespace.into(),
        }
    }

    /// The newest `max` revisions of `name`, decoded, oldest first;
    /// [`Error::ReleaseNotFound`] when it has none. Where Helm leaves out a record it
    /// cannot decode (and so calls a release of only damaged records "not found"),
    /// this fails naming the first such record and its decode error.
    pub async fn run(&self, name: &str, max: usize) -> Result<Vec<Release>> {
        let store = self.cfg.storage(&self.namespace);
        let mut history = store
            .history(name)
            .await
            .map_err(|e| Error::storage(name, e))?;
        let labelled = store
            .history_meta(name)
            .await
            .map_err(|e| Error::storage(name, e))?;
        if let Some(unread) = labelled
            .iter()
            .find(|m| !history.iter().any(|r| r.version == m.version))
        {
            // Decoding it again gives its error.
            if let Err(e) = store.get(name, unread.version).await {
                return Err(Error::storage(name, e));
            }
        }
        if history.is_empty() {
            return Err(Error::ReleaseNotFound {
                release: name.to_string(),
            });
        }
        if history.len() > max {
            history.drain(..history.len() - max);
        }
        Ok(history)
    }

    /// What the records' labels say about every revision of `name`, oldest first;
    /// empty when there is none. Decodes nothing.
    pub async fn meta(&self, name: &str) -> Result<Vec<RecordMeta>> {
        self.cfg
            .storage(&self.namespace)
            .history_meta(name)
            .await
            .map_err(|e| Error::storage(name, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{memory_config, NS};

    #[tokio::test]
    async fn history_keeps_the_newest_revisions() {
        let (cfg, _) = memory_config();
        let err = History::new(&cfg, NS)
            .run("web", 10)
            .await
            .expect_err("none");
        assert!(matches!(err, Error::ReleaseNotFound { .. }), "{err}");
        assert!(History::new(&cfg, NS).meta("web").await.unwrap().is_empty());
        for version in 1..=3 {
            let rel = Release {
                name: "web".into(),
                namespace: NS.into(),
                version,
                ..Release::default()
            };
            cfg.storage(NS).create(&rel).await.expect("record");
        }
        let kept = History::new(&cfg, NS).run("web", 2).await.expect("history");
        let versions: Vec<i64> = kept.iter().map(|r| r.version).collect();
        assert_eq!(versions, [2, 3]);
        let metas = History::new(&cfg, NS).meta("web").await.expect("meta");
        assert_eq!(metas.len(), 3);
    }
}
