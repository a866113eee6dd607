//! End-to-end test of `rudder run --shards=auto`: three replicas as separate `rudder`
//! processes against the test cluster (the embedded API server, or
//! `RUDDER_TEST_KUBECONFIG`'s) split 60 CRs, one is killed with SIGKILL, and the other
//! two take its CRs over. Every reconcile logs its replica and start and end times
//! (the `shard reconcile` debug line), from which the test checks that no CR was ever
//! reconciled by two replicas at once. Skips (with a message) without kubectl.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};
use testkit::{free_port, wait_for, Process};

/// Upper bounds that only stop a hung test; nothing is timed.
const SETTLE: Duration = Duration::from_secs(240);
const CRS: usize = 60;
const GROUP: &str = "shard-e2e";

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/operator")
}

/// One `rudder run` replica; killed when dropped.
struct Replica {
    process: Process,
    metrics: u16,
}

impl Replica {
    fn start(ns: &testkit::TestNamespace, name: &str) -> Replica {
        let metrics = free_port();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rudder"));
        cmd.current_dir(ns.dir())
            .env("KUBECONFIG", ns.kubeconfig())
            .env("WATCH_NAMESPACE", ns.name())
            .args([
                "run",
                "--watches-file",
                examples().join("watches.yaml").to_str().expect("utf-8"),
                "--shards=auto",
                "--leader-elect",
                "--leader-election-id",
                GROUP,
                "--leader-election-namespace",
                ns.name(),
                "--zap-log-level=info,rudder::shard=debug",
                "--health-probe-bind-address",
                "0",
                "--metrics-bind-address",
                &format!("127.0.0.1:{metrics}"),
            ]);
        Replica {
            process: Process::spawn_one_log(name, ns.dir(), &mut cmd),
            metrics,
        }
    }

    fn log(&self) -> String {
        self.process.stdout()
    }

    fn tail(&self) -> String {
        self.process.logs()
    }

    /// `(owned, members)` from this replica's shard gauges.
    fn share(&self) -> Option<(usize, usize)> {
        let text = scrape(self.metrics)?;
        let gauge = |name: &str| -> Option<usize> {
            text.lines()
                .find(|l| l.starts_with(name) && l.contains("Kind=Hello"))
                .and_then(|l| l.rsplit(' ').next())
                .and_then(|v| v.trim().parse().ok())
        };
        Some((
            gauge("rudder_shard_owned_resources")?,
            gauge("rudder_shard_members")?,
        ))
    }

    fn kill9(&mut self) {
        self.process.kill();
    }
}

fn scrape(port: u16) -> Option<String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    Some(body)
}

/// Every `shard reconcile` line of `log`: (cr, replica, start µs, end µs).
fn reconciles(log: &str) -> Vec<(String, String, u64, u64)> {
    log.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["msg"] == "shard reconcile")
        .filter_map(|v| {
            Some((
                v["cr"].as_str()?.to_string(),
                v["replica"].as_str()?.to_string(),
                v["start_us"].as_u64()?,
                v["end_us"].as_u64()?,
            ))
        })
        .collect()
}

/// Panics if two replicas' reconciles of one CR overlap in time.
fn assert_no_overlap(all: &[(String, String, u64, u64)]) {
    let mut by_cr: HashMap<&str, Vec<(u64, u64, &str)>> = HashMap::new();
    for (cr, replica, start, end) in all {
        by_cr
            .entry(cr)
            .or_default()
            .push((*start, *end, replica.as_str()));
    }
    for (cr, mut runs) in by_cr {
        runs.sort();
        for pair in runs.windows(2) {
            let ((_, end_a, a), (start_b, _, b)) = (pair[0], pair[1]);
            assert!(
                a == b || start_b >= end_a,
                "{cr} was reconciled by {a} until {end_a} and by {b} from {start_b}"
            );
        }
    }
}

fn hello_list(ns: &str, message: &str) -> String {
    let items: Vec<Value> = (0..CRS)
        .map(|i| {
            json!({
                "apiVersion": "demo.rudder.dev/v1alpha1",
                "kind": "Hello",
                "metadata": {"name": format!("hello-{i}"), "namespace": ns},
                "spec": {"replicaCount": 1, "message": message},
            })
        })
        .collect();
    // One document per CR (JSON is YAML), as a multi-document file.
    items
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n---\n")
}

/// Releases whose newest deployed record is at `revision`.
fn deployed_at(kubectl: &testkit::Kubectl, revision: &str) -> usize {
    kubectl
        .items(&["secrets", "-l", "owner=helm,status=deployed"])
        .iter()
        .filter(|s| {
            s.pointer("/metadata/labels/version")
                .and_then(Value::as_str)
                == Some(revision)
        })
        .count()
}

#[test]
fn three_replicas_split_the_crs_and_take_over_a_killed_ones_share() {
    let ns = testkit::Cluster::start().namespace("e2e-shard");
    let Some(kubectl) = ns.kubectl() else {
        eprintln!("skipping: kubectl is not installed");
        return;
    };
    kubectl.apply_file(&examples().join("crd.yaml"));
    wait_for("the Hello CRD", SETTLE, || {
        kubectl
            .get(&["crd", "hellos.demo.rudder.dev"])
            .and_then(|crd| {
                crd.pointer("/status/conditions")?
                    .as_array()?
                    .iter()
                    .any(|c| c["type"] == "Established" && c["status"] == "True")
                    .then_some(())
            })
    });
    let mut replicas: Vec<Replica> = ["a", "b", "c"]
        .iter()
        .map(|name| Replica::start(&ns, name))
        .collect();
    kubectl.apply_yaml(&hello_list(ns.name(), "first"));

    let shares = wait_for("three replicas to split 60 CRs", SETTLE, || {
        let shares: Vec<(usize, usize)> = replicas.iter().filter_map(Replica::share).collect();
        (shares.len() == 3
            && shares.iter().all(|(_, members)| *members == 3)
            && shares.iter().map(|(owned, _)| owned).sum::<usize>() == CRS)
            .then_some(shares)
    });
    for (owned, _) in &shares {
        // A fair share is 20; rendezvous hashing of 60 keys stays well within 8..=32.
        assert!(
            (8..=32).contains(owned),
            "uneven shares {shares:?}:\n{}",
            replicas[0].tail()
        );
    }
    wait_for("all 60 releases deployed", SETTLE, || {
        (deployed_at(&kubectl, "1") == CRS).then_some(())
    });

    // Each CR was installed by the replica that owns it, and only by it.
    let mut installed_by: BTreeMap<String, HashSet<String>> = BTreeMap::new();
    for r in &replicas {
        for (cr, replica, _, _) in reconciles(&r.log()) {
            installed_by.entry(cr).or_default().insert(replica);
        }
    }
    assert_eq!(installed_by.len(), CRS, "every CR was reconciled");
    let victim_log = replicas[2].log();
    let victim_crs: HashSet<String> = reconciles(&victim_log)
        .into_iter()
        .map(|(cr, _, _, _)| cr)
        .collect();
    assert!(
        !victim_crs.is_empty(),
        "replica c reconciled nothing:\n{}",
        replicas[2].tail()
    );

    replicas[2].kill9();
    kubectl.apply_yaml(&hello_list(ns.name(), "second"));
    wait_for(
        "the survivors to take over and upgrade all 60",
        SETTLE,
        || {
            let shares: Vec<(usize, usize)> =
                replicas[..2].iter().filter_map(Replica::share).collect();
            (shares.len() == 2
                && shares.iter().all(|(_, members)| *members == 2)
                && shares.iter().map(|(owned, _)| owned).sum::<usize>() == CRS
                && deployed_at(&kubectl, "2") == CRS)
                .then_some(())
        },
    );

    let mut all = reconciles(&victim_log);
    for r in &replicas[..2] {
        all.extend(reconciles(&r.log()));
    }
    assert_no_overlap(&all);
    let victim_id = reconciles(&victim_log)[0].1.clone();
    for cr in &victim_crs {
        assert!(
            all.iter()
                .any(|(c, replica, _, _)| c == cr && *replica != victim_id),
            "{cr}, replica c's, was not taken over"
        );
    }
    // The killed replica's Lease expired; the survivors' are live (three Leases at
    // most: the dead one is removed 30 s after it expired).
    let leases = kubectl.items(&["leases", "-l", &format!("rudder.dev/shard-group={GROUP}")]);
    assert!((2..=3).contains(&leases.len()), "{leases:?}");
}
