//! The server's own `/metrics`, in the Prometheus text format and under
//! kube-apiserver's names: `apiserver_request_total` (every request by verb,
//! resource and code), `apiserver_storage_objects` (stored objects per
//! resource) and `apiserver_storage_list_*` (what LISTs read: a label- or
//! field-selected LIST reads every object under its prefix and filters them, as
//! kube-apiserver's storage does, so its cost is the namespace's size, not the
//! answer's). Benchmarks read them to count what a client costs the server.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

use crate::storage::Stock;

/// What one request was, for counting: filled in as routing learns it.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct RequestLabels {
    /// kube-apiserver's verb spelling: GET, LIST, WATCH, POST, PUT, PATCH,
    /// APPLY, DELETE, DELETECOLLECTION; empty for non-resource requests.
    pub(crate) verb: &'static str,
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) resource: String,
    pub(crate) subresource: String,
}

impl RequestLabels {
    /// Labels of a resource request.
    pub(crate) fn resource(
        method: &axum::http::Method,
        content_type: Option<&str>,
        has_name: bool,
        watch: bool,
        rt: &apitypes::ResourceType,
        sub: Option<&str>,
    ) -> Self {
        let verb = match (method.as_str(), has_name) {
            ("GET", false) if watch => "WATCH",
            ("GET", false) => "LIST",
            ("GET", true) => "GET",
            ("POST", _) => "POST",
            ("PUT", _) => "PUT",
            ("PATCH", _) if content_type == Some("application/apply-patch+yaml") => "APPLY",
            ("PATCH", _) => "PATCH",
            ("DELETE", true) => "DELETE",
            ("DELETE", false) => "DELETECOLLECTION",
            _ => "OTHER",
        };
        RequestLabels {
            verb,
            group: rt.group.clone(),
            version: rt.version.clone(),
            resource: rt.plural.clone(),
            subresource: sub.unwrap_or_default().to_string(),
        }
    }
}

/// Request counters, by labels and status code, and what LISTs read, by resource.
#[derive(Default)]
pub(crate) struct Requests {
    counts: Mutex<BTreeMap<(RequestLabels, u16), u64>>,
    lists: Mutex<BTreeMap<String, ListReads>>,
}

/// What the LISTs of one resource read, under kube-apiserver's counter names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ListReads {
    /// `apiserver_storage_list_total`: LISTs served from storage.
    pub(crate) lists: u64,
    /// `apiserver_storage_list_fetched_objects_total`: objects read from storage.
    pub(crate) fetched: u64,
    /// `apiserver_storage_list_evaluated_objects_total`: objects tested against the
    /// selectors.
    pub(crate) evaluated: u64,
    /// `apiserver_storage_list_returned_objects_total`: objects in the answers.
    pub(crate) returned: u64,
}

impl Requests {
    pub(crate) fn record(&self, labels: RequestLabels, code: u16) {
        let mut counts = match self.counts.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        *counts.entry((labels, code)).or_insert(0) += 1;
    }

    /// One LIST of `resource` read `read` objects and answered with `returned`.
    pub(crate) fn list_read(&self, resource: &str, read: usize, returned: usize) {
        let mut lists = match self.lists.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let reads = lists.entry(resource.to_string()).or_default();
        reads.lists += 1;
        reads.fetched += read as u64;
        reads.evaluated += read as u64;
        reads.returned += returned as u64;
    }

    fn list_snapshot(&self) -> BTreeMap<String, ListReads> {
        match self.lists.lock() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    fn snapshot(&self) -> Vec<((RequestLabels, u16), u64)> {
        let counts = match self.counts.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        counts.iter().map(|(k, v)| (k.clone(), *v)).collect()
    }
}

/// One `apiserver_storage_list_*` counter: name, help, and its value.
type ListCounter = (&'static str, &'static str, fn(&ListReads) -> u64);

/// The exposition text: request counters and per-resource object counts.
pub(crate) fn render(requests: &Requests, objects: &BTreeMap<String, Stock>) -> String {
    let mut out = String::new();
    out.push_str(
        "# HELP apiserver_request_total Counter of apiserver requests broken out for each verb, \
         group, version, resource, subresource and HTTP response code.\n\
         # TYPE apiserver_request_total counter\n",
    );
    for ((l, code), n) in requests.snapshot() {
        if l.verb.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "apiserver_request_total{{code=\"{code}\",component=\"apiserver\",group=\"{}\",\
             resource=\"{}\",subresource=\"{}\",verb=\"{}\",version=\"{}\"}} {n}",
            l.group, l.resource, l.subresource, l.verb, l.version
        );
    }
    out.push_str(
        "# HELP apiserver_storage_objects Number of stored objects at the time of last check \
         split by kind.\n# TYPE apiserver_storage_objects gauge\n",
    );
    for (resource, stock) in objects {
        let _ = writeln!(
            out,
            "apiserver_storage_objects{{resource=\"{resource}\"}} {}",
            stock.objects
        );
    }
    out.push_str(
        "# HELP apiserver_resource_size_estimate_bytes Estimated size of stored objects in \
         database. Estimate is based on sum of last observed sizes of serialized objects.\n\
         # TYPE apiserver_resource_size_estimate_bytes gauge\n",
    );
    for (resource, stock) in objects {
        let (plural, group) = resource.split_once('.').unwrap_or((resource, ""));
        let _ = writeln!(
            out,
            "apiserver_resource_size_estimate_bytes{{group=\"{group}\",resource=\"{plural}\"}} {}",
            stock.json_bytes
        );
    }
    let lists = requests.list_snapshot();
    let counters: [ListCounter; 4] = [
        (
            "apiserver_storage_list_total",
            "Number of LIST requests served from storage",
            |r| r.lists,
        ),
        (
            "apiserver_storage_list_fetched_objects_total",
            "Number of objects read from storage in the course of serving a LIST request",
            |r| r.fetched,
        ),
        (
            "apiserver_storage_list_evaluated_objects_total",
            "Number of objects tested in the course of serving a LIST request from storage",
            |r| r.evaluated,
        ),
        (
            "apiserver_storage_list_returned_objects_total",
            "Number of objects returned for a LIST request from storage",
            |r| r.returned,
        ),
    ];
    for (name, help, value) in counters {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        for (resource, reads) in &lists {
            let _ = writeln!(out, "{name}{{resource=\"{resource}\"}} {}", value(reads));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_render_under_kube_apiserver_names() {
        let requests = Requests::default();
        let labels = RequestLabels {
            verb: "LIST",
            group: String::new(),
            version: "v1".into(),
            resource: "secrets".into(),
            subresource: String::new(),
        };
        requests.record(labels.clone(), 200);
        requests.record(labels, 200);
        requests.record(RequestLabels::default(), 200);
        let objects = BTreeMap::from([(
            "secrets".to_string(),
            Stock {
                objects: 3,
                json_bytes: 1200,
            },
        )]);
        let text = render(&requests, &objects);
        assert!(text.contains(
            "apiserver_request_total{code=\"200\",component=\"apiserver\",group=\"\",\
             resource=\"secrets\",subresource=\"\",verb=\"LIST\",version=\"v1\"} 2\n"
        ));
        assert!(text.contains("apiserver_storage_objects{resource=\"secrets\"} 3\n"));
        assert!(text.contains(
            "apiserver_resource_size_estimate_bytes{group=\"\",resource=\"secrets\"} 1200\n"
        ));
        // Non-resource requests are not counted as resource verbs.
        assert_eq!(text.matches("apiserver_request_total{").count(), 1);
    }

    #[test]
    fn a_selected_list_counts_everything_it_read() {
        let requests = Requests::default();
        requests.list_read("secrets", 40, 3);
        requests.list_read("secrets", 40, 0);
        let text = render(&requests, &BTreeMap::new());
        for line in [
            "apiserver_storage_list_total{resource=\"secrets\"} 2\n",
            "apiserver_storage_list_fetched_objects_total{resource=\"secrets\"} 80\n",
            "apiserver_storage_list_evaluated_objects_total{resource=\"secrets\"} 80\n",
            "apiserver_storage_list_returned_objects_total{resource=\"secrets\"} 3\n",
        ] {
            assert!(text.contains(line), "{line:?} missing from\n{text}");
        }
    }
}
