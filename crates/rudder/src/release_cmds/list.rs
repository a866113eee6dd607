//! `list`: Helm 4's `helm list` — releases of every status unless a state flag
//! narrows them, filtered by a name regex and a label selector, sorted by name
//! or date (either way round), paged with `--offset`/`--max`, printed as a
//! table (with `--time-format`), names only, JSON or YAML.

use std::collections::BTreeMap;

use action::ActionConfig;
use release::record::{Release, Status};
use serde_json::{json, Value};

use super::{format, KubeArgs, OutputFormat};
use crate::helm_cli::{check_arity, Arity};

/// `list`.
#[derive(clap::Args, Debug)]
pub(crate) struct ListArgs {
    /// Helm takes no arguments here; they are refused with Helm's words.
    #[arg(hide = true)]
    pub args: Vec<String>,
    /// Deprecated no-op: every status is listed by default (Helm 4).
    #[arg(short = 'a', long)]
    pub all: bool,
    /// List releases across all namespaces.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Print release names only.
    #[arg(short = 'q', long)]
    pub short: bool,
    /// Show only deployed releases (combines with the other state flags).
    #[arg(long)]
    pub deployed: bool,
    /// Show only failed releases.
    #[arg(long)]
    pub failed: bool,
    /// Show only pending releases.
    #[arg(long)]
    pub pending: bool,
    /// Show only superseded releases (every superseded revision when alone).
    #[arg(long)]
    pub superseded: bool,
    /// Show only uninstalled releases (kept with --keep-history).
    #[arg(long)]
    pub uninstalled: bool,
    /// Show only releases being uninstalled.
    #[arg(long)]
    pub uninstalling: bool,
    /// Do not print the header line.
    #[arg(long)]
    pub no_headers: bool,
    /// Format times with this Go layout (e.g. "2006-01-02 15:04:05Z0700").
    #[arg(long)]
    pub time_format: Option<String>,
    /// Sort by release date (oldest first).
    #[arg(short = 'd', long)]
    pub date: bool,
    /// Reverse the sort order.
    #[arg(short = 'r', long)]
    pub reverse: bool,
    /// Most releases shown (0: no limit).
    #[arg(short = 'm', long, default_value_t = 256)]
    pub max: usize,
    /// Index of the first release shown, counted from 0 in sort order.
    #[arg(long, default_value_t = 0)]
    pub offset: usize,
    /// Only releases whose name matches this regular expression.
    #[arg(short = 'f', long)]
    pub filter: Option<String>,
    /// Only releases whose labels match this selector (k=v, k==v, k!=v, k, !k, k in (a,b), k notin (a,b)).
    #[arg(short = 'l', long)]
    pub selector: Option<String>,
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    pub output: OutputFormat,
    #[command(flatten)]
    pub kube: KubeArgs,
}

/// Which statuses are shown: none set means every status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct States {
    deployed: bool,
    failed: bool,
    pending: bool,
    superseded: bool,
    uninstalled: bool,
    uninstalling: bool,
}

impl States {
    fn of(a: &ListArgs) -> States {
        States {
            deployed: a.deployed,
            failed: a.failed,
            pending: a.pending,
            superseded: a.superseded,
            uninstalled: a.uninstalled,
            uninstalling: a.uninstalling,
        }
    }

    fn shows(&self, status: &Status) -> bool {
        if *self == States::default() {
            return true;
        }
        match status {
            Status::Deployed => self.deployed,
            Status::Failed => self.failed,
            s if s.is_pending() => self.pending,
            Status::Superseded => self.superseded,
            Status::Uninstalled => self.uninstalled,
            Status::Uninstalling => self.uninstalling,
            _ => false,
        }
    }

    /// Superseded revisions are never the newest: asked for alone, Helm shows
    /// every one of them rather than only the newest record of each release.
    fn superseded_only(&self) -> bool {
        *self
            == States {
                superseded: true,
                ..States::default()
            }
    }
}

/// How `list` narrows, orders and pages the records (Helm's `action.List`).
#[derive(Debug)]
struct Query {
    states: States,
    filter: Option<regex::Regex>,
    selector: Option<Selector>,
    by_date: bool,
    reverse: bool,
    offset: usize,
    limit: usize,
}

impl Query {
    fn of(a: &ListArgs) -> anyhow::Result<Query> {
        let filter = match a.filter.as_deref().filter(|f| !f.is_empty()) {
            Some(f) => Some(
                regex::Regex::new(f).map_err(|e| anyhow::anyhow!("error parsing regexp: {e}"))?,
            ),
            None => None,
        };
        let selector = match a.selector.as_deref().filter(|s| !s.is_empty()) {
            Some(s) => Some(Selector::parse(s)?),
            None => None,
        };
        Ok(Query {
            states: States::of(a),
            filter,
            selector,
            by_date: a.date,
            reverse: a.reverse,
            offset: a.offset,
            limit: a.max,
        })
    }

    /// The records shown, in order: matching status and name first, then the
    /// newest of each release (unless only superseded ones are asked for),
    /// then the selector, the sort and the page.
    fn apply(&self, records: Vec<Release>) -> Vec<Release> {
        let matching = records.into_iter().filter(|r| {
            self.states.shows(&r.status())
                && self.filter.as_ref().is_none_or(|f| f.is_match(&r.name))
        });
        let mut shown: Vec<Release> = if self.states.superseded_only() {
            matching.collect()
        } else {
            newest(matching)
        };
        if let Some(sel) = &self.selector {
            shown.retain(|r| sel.matches(&record_labels(r)));
        }
        shown.sort_by(|a, b| {
            let by_name = a.name.cmp(&b.name).then(a.namespace.cmp(&b.namespace));
            if self.by_date {
                deployed_at(a).cmp(&deployed_at(b)).then(by_name)
            } else {
                by_name
            }
        });
        if self.reverse {
            shown.reverse();
        }
        if self.offset >= shown.len() {
            return Vec::new();
        }
        let end = match self.limit {
            0 => shown.len(),
            n => shown.len().min(self.offset.saturating_add(n)),
        };
        shown.drain(self.offset..end).collect()
    }
}

/// The newest revision of each release (by namespace and name).
fn newest(records: impl Iterator<Item = Release>) -> Vec<Release> {
    let mut latest: BTreeMap<(String, String), Release> = BTreeMap::new();
    for r in records {
        let key = (r.namespace.clone(), r.name.clone());
        match latest.get(&key) {
            Some(cur) if cur.version > r.version => {}
            _ => {
                latest.insert(key, r);
            }
        }
    }
    latest.into_values().collect()
}

/// Seconds since the epoch of the last deployment, as Helm compares them.
fn deployed_at(r: &Release) -> i64 {
    r.info
        .as_ref()
        .and_then(|i| i.last_deployed.as_ref())
        .map(|t| t.unix_seconds())
        .unwrap_or(i64::MIN)
}

/// The labels Helm matches `--selector` against: the record's own and the
/// storage labels (`name`, `owner`, `status`, `version`) its object carries.
fn record_labels(r: &Release) -> BTreeMap<String, String> {
    let mut labels = r.labels.clone();
    labels.insert("name".into(), r.name.clone());
    labels.insert("owner".into(), "helm".into());
    labels.insert("status".into(), r.status().to_string());
    labels.insert("version".into(), r.version.to_string());
    labels
}

/// A Kubernetes label selector (`k8s.io/apimachinery/pkg/labels.Parse`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Selector(Vec<Requirement>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

impl Selector {
    fn parse(text: &str) -> anyhow::Result<Selector> {
        let mut reqs = Vec::new();
        for part in split_requirements(text) {
            let part = part.trim();
            let bad = || anyhow::anyhow!("unable to parse requirement: {part:?}");
            if part.is_empty() {
                return Err(bad());
            }
            let set = |rest: &str| -> anyhow::Result<Vec<String>> {
                let inner = rest
                    .trim()
                    .strip_prefix('(')
                    .and_then(|r| r.strip_suffix(')'))
                    .ok_or_else(bad)?;
                Ok(inner.split(',').map(|v| v.trim().to_string()).collect())
            };
            let req = if let Some(key) = part.strip_prefix('!') {
                Requirement::NotExists(key.trim().to_string())
            } else if let Some((k, v)) = part.split_once("!=") {
                Requirement::NotEquals(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = part.split_once("==") {
                Requirement::Equals(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = part.split_once('=') {
                Requirement::Equals(k.trim().into(), v.trim().into())
            } else if let Some((k, rest)) = part.split_once(" notin ") {
                Requirement::NotIn(k.trim().into(), set(rest)?)
            } else if let Some((k, rest)) = part.split_once(" in ") {
                Requirement::In(k.trim().into(), set(rest)?)
            } else if part.contains(char::is_whitespace) {
                return Err(bad());
            } else {
                Requirement::Exists(part.to_string())
            };
            reqs.push(req);
        }
        Ok(Selector(reqs))
    }

    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => labels.get(k) == Some(v),
            Requirement::NotEquals(k, v) => labels.get(k) != Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|l| vs.contains(l)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|l| !vs.contains(l)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::NotExists(k) => !labels.contains_key(k),
        })
    }
}

/// Splits a selector at the commas that are not inside `( )`.
fn split_requirements(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0usize, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// One release as `helm list -o json` prints it, fields in Helm's order.
#[derive(serde::Serialize)]
struct ListRow {
    name: String,
    namespace: String,
    revision: String,
    updated: String,
    status: String,
    chart: String,
    app_version: String,
}

/// A record's time as Helm's `list` shows it: Go's `String()`, or the
/// `--time-format` layout; `-` for none.
fn updated(r: &Release, layout: Option<&str>) -> String {
    let Some(t) = r
        .info
        .as_ref()
        .and_then(|i| i.last_deployed.as_ref())
        .filter(|t| !t.is_zero())
    else {
        return "-".into();
    };
    match layout.filter(|l| !l.is_empty()) {
        Some(layout) => go_time(t).format(layout),
        None => format::go_time(t),
    }
}

/// A record time as Go's `time.Time` decoded from it: UTC for `Z`, else a
/// fixed zone at the recorded offset.
fn go_time(t: &release::Time) -> gostd::time::Time {
    let ts = t.to_timestamp();
    let off = t.offset_seconds();
    gostd::time::Time {
        unix: ts.as_second(),
        nsec: ts.subsec_nanosecond().max(0) as u32,
        loc: if off == 0 {
            gostd::time::Location::Utc
        } else {
            gostd::time::Location::Fixed(String::new(), off)
        },
        mono: None,
    }
}

pub(super) async fn list(a: ListArgs) -> anyhow::Result<String> {
    check_arity(&a.args, Arity::None, "list", "list [flags]")?;
    if a.all {
        crate::helm_cli::deprecated_flag(
            "all",
            "Helm 4 lists releases of every status by default; rudder still accepts it for Helm 3 scripts",
        );
    }
    let query = Query::of(&a)?;
    let (cfg, ns) = super::connect(&a.kube).await?;
    let records = records(&cfg, &ns, a.all_namespaces).await?;
    let releases = query.apply(records);
    print(&a, &releases)
}

/// Every record in `ns`, or in every namespace holding records.
async fn records(
    cfg: &ActionConfig,
    ns: &str,
    all_namespaces: bool,
) -> anyhow::Result<Vec<Release>> {
    let namespaces = if all_namespaces {
        cfg.driver()
            .namespaces(cfg.client())
            .await
            .map_err(|e| anyhow::anyhow!("listing releases: {}", apierror::Chain(&e)))?
    } else {
        vec![ns.to_string()]
    };
    let mut all = Vec::new();
    for ns in &namespaces {
        let records = cfg
            .storage(ns)
            .list_releases()
            .await
            .map_err(|e| anyhow::anyhow!("listing releases: {}", apierror::Chain(&e)))?;
        all.extend(records);
    }
    Ok(all)
}

fn print(a: &ListArgs, releases: &[Release]) -> anyhow::Result<String> {
    if a.short {
        let names: Vec<Value> = releases.iter().map(|r| json!(r.name)).collect();
        return Ok(match a.output {
            OutputFormat::Table => releases.iter().map(|r| format!("{}\n", r.name)).collect(),
            OutputFormat::Json => format::json(&Value::Array(names)),
            OutputFormat::Yaml => format::yaml(&Value::Array(names))?,
        });
    }
    let rows: Vec<ListRow> = releases
        .iter()
        .map(|r| ListRow {
            name: r.name.clone(),
            namespace: r.namespace.clone(),
            revision: r.version.to_string(),
            updated: updated(r, a.time_format.as_deref()),
            status: r.status().to_string(),
            chart: format::chart_name(r),
            app_version: format::app_version(r),
        })
        .collect();
    Ok(match a.output {
        OutputFormat::Json => format::json(&rows),
        OutputFormat::Yaml => format::yaml(&serde_json::to_value(&rows)?)?,
        OutputFormat::Table => {
            let mut table = Vec::new();
            if !a.no_headers {
                let head = [
                    "NAME",
                    "NAMESPACE",
                    "REVISION",
                    "UPDATED",
                    "STATUS",
                    "CHART",
                    "APP VERSION",
                ];
                table.push(head.map(String::from).to_vec());
            }
            for r in rows {
                table.push(vec![
                    r.name,
                    r.namespace,
                    r.revision,
                    r.updated,
                    r.status,
                    r.chart,
                    r.app_version,
                ]);
            }
            format::table(&table)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(clap::Parser)]
    struct T {
        #[command(flatten)]
        a: ListArgs,
    }

    fn args(flags: &[&str]) -> ListArgs {
        T::parse_from(std::iter::once("t").chain(flags.iter().copied())).a
    }

    /// Helm's list_test fixture: (name, namespace, version, second, status).
    fn fixture() -> Vec<Release> {
        [
            ("starlord", "default", 1, 1, "superseded"),
            ("starlord", "default", 2, 1, "deployed"),
            ("groot", "default", 1, 1, "uninstalled"),
            ("gamora", "default", 1, 1, "superseded"),
            ("rocket", "default", 1, 2, "failed"),
            ("drax", "default", 1, 1, "uninstalling"),
            ("thanos", "default", 1, 1, "pending-install"),
            ("hummingbird", "default", 1, 3, "deployed"),
            ("iguana", "default", 2, 4, "deployed"),
        ]
        .into_iter()
        .map(|(name, ns, version, sec, status)| {
            let mut r: Release = serde_json::from_value(json!({
                "name": name, "namespace": ns, "version": version,
                "info": {"status": status, "last_deployed": format!("2016-01-16T00:00:0{sec}Z")},
                "chart": {"metadata": {"name": "chickadee", "version": "1.0.0", "appVersion": "0.0.1"}}
            }))
            .expect("record");
            let team = if name.starts_with('g') { "g" } else { "other" };
            r.labels.insert("team".into(), team.into());
            r
        })
        .collect()
    }

    fn names(flags: &[&str]) -> Vec<String> {
        let q = Query::of(&args(flags)).expect("query");
        q.apply(fixture())
            .into_iter()
            .map(|r| format!("{}.{}", r.name, r.version))
            .collect()
    }

    #[test]
    fn every_status_by_default_sorted_by_name() {
        assert_eq!(
            names(&[]),
            [
                "drax.1",
                "gamora.1",
                "groot.1",
                "hummingbird.1",
                "iguana.2",
                "rocket.1",
                "starlord.2",
                "thanos.1"
            ]
        );
        assert_eq!(names(&["-a"]), names(&[]));
    }

    #[test]
    fn state_flags_filter_before_the_newest_is_taken() {
        assert_eq!(names(&["--superseded"]), ["gamora.1", "starlord.1"]);
        assert_eq!(
            names(&["--superseded", "--failed"]),
            ["gamora.1", "rocket.1", "starlord.1"]
        );
        assert_eq!(
            names(&["--deployed", "--failed"]),
            ["hummingbird.1", "iguana.2", "rocket.1", "starlord.2"]
        );
    }

    #[test]
    fn sorting_paging_and_filters() {
        assert_eq!(
            names(&["-d"]),
            [
                "drax.1",
                "gamora.1",
                "groot.1",
                "starlord.2",
                "thanos.1",
                "rocket.1",
                "hummingbird.1",
                "iguana.2"
            ]
        );
        assert_eq!(names(&["-d", "-r"])[..2], ["iguana.2", "hummingbird.1"]);
        assert_eq!(names(&["-r"])[..2], ["thanos.1", "starlord.2"]);
        assert_eq!(
            names(&["--max", "2", "--offset", "1"]),
            ["gamora.1", "groot.1"]
        );
        assert_eq!(names(&["--offset", "8"]), Vec::<String>::new());
        assert_eq!(names(&["-m", "0"]).len(), 8);
        assert_eq!(names(&["--filter", "^g"]), ["gamora.1", "groot.1"]);
        assert_eq!(names(&["-l", "team=g"]), ["gamora.1", "groot.1"]);
        assert_eq!(
            names(&["-l", "team!=other,status in (superseded)"]),
            ["gamora.1"]
        );
        assert_eq!(
            names(&["-l", "status=deployed", "-r"]),
            ["starlord.2", "iguana.2", "hummingbird.1"]
        );
        assert!(Query::of(&args(&["--filter", "("])).is_err());
    }

    #[test]
    fn time_format_is_a_go_layout() {
        let rel = &fixture()[7];
        assert_eq!(updated(rel, None), "2016-01-16 00:00:03 +0000 UTC");
        assert_eq!(
            updated(rel, Some("2006-01-02 15:04:05")),
            "2016-01-16 00:00:03"
        );
        assert_eq!(updated(rel, Some("Jan _2 15:04 MST")), "Jan 16 00:00 UTC");
    }

    #[test]
    fn short_and_table_output() {
        let a = args(&["-q", "-o", "json"]);
        let shown = Query::of(&a).expect("query").apply(fixture());
        assert_eq!(
            print(&a, &shown[..2]).expect("json"),
            "[\"drax\",\"gamora\"]\n"
        );
        let a = args(&["--no-headers"]);
        let text = print(&a, &shown[..1]).expect("table");
        assert_eq!(
            text,
            "drax\tdefault\t1\t2016-01-16 00:00:01 +0000 UTC\tuninstalling\tchickadee-1.0.0\t0.0.1\n"
        );
    }
}
