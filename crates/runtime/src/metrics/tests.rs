use super::*;

/// The controller's name, as its metrics label it.
const CONTROLLER: &str = "memcached-controller";

fn has(text: &str, line: &str) -> bool {
    text.lines().any(|l| l == line)
}

fn assert_lines(text: &str, lines: &[&str]) {
    for line in lines {
        assert!(has(text, line), "missing {line:?} in:\n{text}");
    }
}

#[test]
fn a_started_controller_reports_every_series_at_zero() {
    let m = Metrics::new();
    m.controller_started(CONTROLLER, 4);
    let text = m.encode();
    assert_lines(
        &text,
        &[
            "# TYPE controller_runtime_reconcile_total counter",
            "controller_runtime_reconcile_total{controller=\"memcached-controller\",result=\"error\"} 0",
            "controller_runtime_reconcile_total{controller=\"memcached-controller\",result=\"requeue_after\"} 0",
            "controller_runtime_reconcile_total{controller=\"memcached-controller\",result=\"requeue\"} 0",
            "controller_runtime_reconcile_total{controller=\"memcached-controller\",result=\"success\"} 0",
            "controller_runtime_reconcile_errors_total{controller=\"memcached-controller\"} 0",
            "controller_runtime_terminal_reconcile_errors_total{controller=\"memcached-controller\"} 0",
            "controller_runtime_reconcile_panics_total{controller=\"memcached-controller\"} 0",
            "controller_runtime_max_concurrent_reconciles{controller=\"memcached-controller\"} 4",
            "controller_runtime_active_workers{controller=\"memcached-controller\"} 0",
            "# TYPE workqueue_depth gauge",
            "workqueue_depth{controller=\"memcached-controller\",name=\"memcached-controller\",priority=\"\"} 0",
            "workqueue_adds_total{controller=\"memcached-controller\",name=\"memcached-controller\"} 0",
            "# TYPE workqueue_queue_duration_seconds histogram",
            "workqueue_queue_duration_seconds_count{controller=\"memcached-controller\",name=\"memcached-controller\"} 0",
            "workqueue_queue_duration_seconds_bucket{controller=\"memcached-controller\",name=\"memcached-controller\",le=\"1e-08\"} 0",
            "workqueue_queue_duration_seconds_bucket{controller=\"memcached-controller\",name=\"memcached-controller\",le=\"1000\"} 0",
            "# TYPE workqueue_work_duration_seconds histogram",
            "workqueue_unfinished_work_seconds{controller=\"memcached-controller\",name=\"memcached-controller\"} 0.0",
            "workqueue_longest_running_processor_seconds{controller=\"memcached-controller\",name=\"memcached-controller\"} 0.0",
            "workqueue_retries_total{controller=\"memcached-controller\",name=\"memcached-controller\"} 0",
            "# TYPE certwatcher_read_certificate_total counter",
        ],
    );
    assert!(!text.contains("build_info"), "only when asked for:\n{text}");
    let buckets = text
        .lines()
        .filter(|l| l.starts_with("workqueue_work_duration_seconds_bucket{"))
        .count();
    assert_eq!(buckets, 13, "12 exponential buckets and +Inf:\n{text}");
    #[cfg(target_os = "linux")]
    for family in [
        "# TYPE process_cpu_seconds_total counter",
        "# TYPE process_resident_memory_bytes gauge",
        "# TYPE process_open_fds gauge",
        "# TYPE process_max_fds gauge",
        "# TYPE process_start_time_seconds gauge",
        "# TYPE process_virtual_memory_bytes gauge",
    ] {
        assert!(has(&text, family), "missing {family:?} in:\n{text}");
    }
    assert!(!text.contains("# EOF"), "0.0.4 text has no EOF marker");
    // Families without series yet are left out, as client_golang leaves them out.
    assert!(!text.contains("rest_client_requests_total"), "{text}");
    assert!(
        text.contains("# HELP workqueue_work_duration_seconds How long in seconds processing an item from workqueue takes.\n"),
        "Go's help text, one period:\n{text}"
    );
}

#[test]
fn reconcile_metrics_use_controller_runtime_names() {
    let m = Metrics::new();
    m.reconcile_done(CONTROLLER, Outcome::Success, Duration::from_millis(30));
    m.reconcile_done(CONTROLLER, Outcome::Error, Duration::from_secs(2));
    m.reconcile_done(CONTROLLER, Outcome::RequeueAfter, Duration::from_millis(3));
    m.reconcile_done(CONTROLLER, Outcome::RequeueAfter, Duration::from_millis(3));
    m.reconcile_panicked(CONTROLLER);
    let text = m.encode();
    assert_lines(
        &text,
        &[
            "controller_runtime_reconcile_total{controller=\"memcached-controller\",result=\"success\"} 1",
            "controller_runtime_reconcile_total{controller=\"memcached-controller\",result=\"error\"} 1",
            "controller_runtime_reconcile_total{controller=\"memcached-controller\",result=\"requeue_after\"} 2",
            "controller_runtime_reconcile_errors_total{controller=\"memcached-controller\"} 1",
            "controller_runtime_reconcile_panics_total{controller=\"memcached-controller\"} 1",
            "# TYPE controller_runtime_reconcile_time_seconds histogram",
            "controller_runtime_reconcile_time_seconds_count{controller=\"memcached-controller\"} 4",
            "controller_runtime_reconcile_time_seconds_bucket{controller=\"memcached-controller\",le=\"0.005\"} 2",
            "controller_runtime_reconcile_time_seconds_bucket{controller=\"memcached-controller\",le=\"0.05\"} 3",
            "controller_runtime_reconcile_time_seconds_bucket{controller=\"memcached-controller\",le=\"+Inf\"} 4",
        ],
    );
    let sum = text
        .lines()
        .find_map(|l| {
            l.strip_prefix(
                "controller_runtime_reconcile_time_seconds_sum{controller=\"memcached-controller\"} ",
            )
        })
        .expect("sum line");
    let sum: f64 = sum.parse().expect("number");
    assert!((sum - 2.036).abs() < 1e-9, "{sum}");
}

#[test]
fn the_queue_counts_adds_waits_work_and_retries() {
    let m = Metrics::new();
    m.controller_started(CONTROLLER, 1);
    m.queue_add(CONTROLLER);
    m.queue_add(CONTROLLER);
    let text = m.encode();
    assert_lines(
        &text,
        &[
            "workqueue_depth{controller=\"memcached-controller\",name=\"memcached-controller\",priority=\"\"} 2",
            "workqueue_adds_total{controller=\"memcached-controller\",name=\"memcached-controller\"} 2",
        ],
    );
    m.queue_get(CONTROLLER, Duration::from_millis(2));
    let work = m.work_started(CONTROLLER);
    std::thread::sleep(Duration::from_millis(20));
    let text = m.encode();
    assert_lines(
        &text,
        &[
            "workqueue_depth{controller=\"memcached-controller\",name=\"memcached-controller\",priority=\"\"} 1",
            "workqueue_queue_duration_seconds_count{controller=\"memcached-controller\",name=\"memcached-controller\"} 1",
            "controller_runtime_active_workers{controller=\"memcached-controller\"} 1",
        ],
    );
    let unfinished = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("workqueue_unfinished_work_seconds{controller=\"memcached-controller\",name=\"memcached-controller\"} ")
        })
        .and_then(|v| v.parse::<f64>().ok())
        .expect("unfinished work");
    assert!(unfinished >= 0.02, "{unfinished}");
    m.work_done(work);
    m.queue_retry(CONTROLLER);
    m.queue_dropped(CONTROLLER);
    let text = m.encode();
    assert_lines(
        &text,
        &[
            "workqueue_depth{controller=\"memcached-controller\",name=\"memcached-controller\",priority=\"\"} 0",
            "workqueue_work_duration_seconds_count{controller=\"memcached-controller\",name=\"memcached-controller\"} 1",
            "workqueue_unfinished_work_seconds{controller=\"memcached-controller\",name=\"memcached-controller\"} 0.0",
            "workqueue_retries_total{controller=\"memcached-controller\",name=\"memcached-controller\"} 1",
            "controller_runtime_active_workers{controller=\"memcached-controller\"} 0",
        ],
    );
}

#[test]
fn resources_are_reported_by_creation_time_until_gone() {
    let m = Metrics::new();
    let cr = ResourceId {
        group: "cache.example.com",
        version: "v1alpha1",
        kind: "Memcached",
        namespace: "default",
        name: "memcached-sample",
    };
    m.resource_seen(&cr, 1_700_000_000);
    let line = "resource_created_at_seconds{group=\"cache.example.com\",kind=\"Memcached\",name=\"memcached-sample\",namespace=\"default\",version=\"v1alpha1\"} 1700000000";
    assert!(has(&m.encode(), line), "{}", m.encode());
    m.resource_gone(&cr);
    assert!(!m.encode().contains("memcached-sample"));
}

#[test]
fn the_builder_adds_build_info() {
    let m = Metrics::builder()
        .build_info(
            "example_build_info",
            "Build information for the example binary",
            vec![("commit", "abc".into()), ("version", "1.2.3".into())],
        )
        .build();
    assert_lines(
        &m.encode(),
        &[
            "# HELP example_build_info Build information for the example binary.",
            "# TYPE example_build_info gauge",
            "example_build_info{commit=\"abc\",version=\"1.2.3\"} 1",
        ],
    );
}

#[test]
fn status_gauges_follow_each_object() {
    let m = Metrics::builder()
        .status_counts("example_objects", "Objects per status")
        .build();
    let gvk = "demo.rudder.dev/v1alpha1, Kind=Hello";
    let value = |status: &str| -> Option<String> {
        let prefix = format!("example_objects{{gvk=\"{gvk}\",status=\"{status}\"}} ");
        m.encode()
            .lines()
            .find_map(|l| l.strip_prefix(&prefix).map(str::to_string))
    };
    m.set_status(gvk, "ns", "a", Some("deployed"));
    m.set_status(gvk, "ns", "b", Some("deployed"));
    m.set_status(gvk, "other", "a", Some("failed"));
    assert_eq!(value("deployed").as_deref(), Some("2"));
    assert_eq!(value("failed").as_deref(), Some("1"));
    // The same status again changes nothing.
    m.set_status(gvk, "ns", "a", Some("deployed"));
    assert_eq!(value("deployed").as_deref(), Some("2"));
    // An object moves from one status to another.
    m.set_status(gvk, "ns", "b", Some("failed"));
    assert_eq!(value("deployed").as_deref(), Some("1"));
    assert_eq!(value("failed").as_deref(), Some("2"));
    // Gone objects leave the counts.
    m.set_status(gvk, "ns", "a", None);
    m.set_status(gvk, "ns", "never-seen", None);
    assert_eq!(value("deployed").as_deref(), Some("0"));
    assert_eq!(value("failed").as_deref(), Some("2"));
    // Without status counts the calls are ignored.
    let plain = Metrics::new();
    plain.set_status(gvk, "ns", "a", Some("deployed"));
    assert!(!plain.encode().contains("deployed"));
}

#[test]
fn the_leader_gauge() {
    let m = Metrics::new();
    m.set_leader("memcached-operator", true);
    assert!(has(
        &m.encode(),
        "leader_election_master_status{name=\"memcached-operator\"} 1"
    ));
    m.set_leader("memcached-operator", false);
    assert!(has(
        &m.encode(),
        "leader_election_master_status{name=\"memcached-operator\"} 0"
    ));
}
