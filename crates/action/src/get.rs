//! `helm get` and `helm status`: one revision of a release (the newest unless asked),
//! and its values, user-supplied or computed over the chart's defaults.

use chart::values::{coalesce_tables, Warnings};
use release::record::Release;
use serde_json::Value;

use crate::config::ActionConfig;
use crate::error::{Error, Result};

/// The `get` verb (and what `status` shows).
pub struct Get<'a> {
    cfg: &'a ActionConfig,
    namespace: String,
}

impl<'a> Get<'a> {
    pub fn new(cfg: &'a ActionConfig, namespace: impl Into<String>) -> Get<'a> {
        Get {
            cfg,
            namespace: namespace.into(),
        }
    }

    /// Revision `revision` of `name` (the newest when `None` or not positive);
    /// [`Error::ReleaseNotFound`] when there is no such record.
    pub async fn run(&self, name: &str, revision: Option<i64>) -> Result<Release> {
        let store = self.cfg.storage(&self.namespace);
        let not_found = || Error::ReleaseNotFound {
            release: name.to_string(),
        };
        match revision.filter(|r| *r > 0) {
            Some(v) => match store.get(name, v).await {
                Ok(r) => Ok(r),
                Err(e) if e.is_not_found() => Err(not_found()),
                Err(e) => Err(Error::storage(name, e)),
            },
            None => store
                .last(name)
                .await
                .map_err(|e| Error::storage(name, e))?
                .ok_or_else(not_found),
        }
    }

    /// The values of that revision: the user's (`null` when there are none, as Helm's
    /// record leaves empty values out), or with `all` the chart's defaults under them.
    pub async fn values(&self, name: &str, revision: Option<i64>, all: bool) -> Result<Value> {
        let rel = self.run(name, revision).await?;
        Ok(release_values(&rel, all))
    }
}

/// The values `helm get values` prints for a record.
pub fn release_values(rel: &Release, all: bool) -> Value {
    if all {
        let mut vals = rel.config.clone();
        let defaults = rel
            .chart
            .as_ref()
            .and_then(|c| c.values.clone())
            .unwrap_or_default();
        coalesce_tables(&mut vals, defaults, &mut Warnings(Vec::new()));
        Value::Object(vals)
    } else if rel.config.is_empty() {
        Value::Null
    } else {
        Value::Object(rel.config.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_as_helm_prints_them() {
        let obj = |v: Value| v.as_object().cloned().unwrap_or_default();
        let mut rel = Release::default();
        assert_eq!(release_values(&rel, false), Value::Null);
        rel.config = obj(json!({"a": 1}));
        rel.chart = Some(release::record::Chart {
            values: Some(obj(json!({"a": 0, "b": 2}))),
            ..Default::default()
        });
        assert_eq!(release_values(&rel, false), json!({"a": 1}));
        assert_eq!(release_values(&rel, true), json!({"a": 1, "b": 2}));
    }
}
