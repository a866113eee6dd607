//! CRs whose spec nests far deeper than serde_json's own limit (128 levels), next to a
//! plain CR of the same kind, with the operator running from a `watches.yaml` against
//! the test cluster (embedded, or `RUDDER_TEST_KUBECONFIG`'s): kube-apiserver accepts
//! JSON nested up to 10,000 levels, and such a CR once failed the operator's LIST of
//! the whole kind, so no CR of it was reconciled. Now every CR is reconciled: specs
//! within Helm's depth limit install as values like any other, and every CR can be
//! deleted.
//!
//! The test reads and writes the deep CRs as JSON text: a `serde_json::Value` (and so
//! kube's `DynamicObject`) cannot hold them. The operator runs on threads with deep
//! stacks, as `rudder run` runs it (values nested this deep are walked recursively).

mod common;

use std::time::Duration;

use common::watch_run::{self, WatchRun};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use kube::Client;
use operator::CustomResource;
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(120);

/// `{"greeting": …, "nested": {"a": {"a": … {"leaf": true}}}}`: a spec `levels` deep.
fn deep_spec(greeting: &str, levels: usize) -> String {
    let inner = levels - 2;
    format!(
        r#"{{"greeting":"{greeting}","nested":{}{{"leaf":true}}{}}}"#,
        r#"{"a":"#.repeat(inner - 1),
        "}".repeat(inner - 1)
    )
}

fn crs_path(namespace: &str) -> String {
    format!(
        "/apis/{}/{}/namespaces/{namespace}/demos",
        common::GROUP,
        common::VERSION
    )
}

/// Creates CR `name` from its spec's JSON text, without parsing it.
async fn create_raw(client: &Client, namespace: &str, name: &str, spec: &str) {
    let body = format!(
        r#"{{"apiVersion":"{}/{}","kind":"{}","metadata":{{"name":"{name}","namespace":"{namespace}"}},"spec":{spec}}}"#,
        common::GROUP,
        common::VERSION,
        common::KIND
    );
    let req = http::Request::post(crs_path(namespace))
        .header("content-type", "application/json")
        .body(body.into_bytes())
        .expect("request");
    client
        .request_text(req)
        .await
        .unwrap_or_else(|e| panic!("create {name}: {e}"));
}

/// Deletes CR `name`; the answer (the CR, deep) is not parsed.
async fn delete_raw(client: &Client, namespace: &str, name: &str) {
    let req = http::Request::delete(format!("{}/{name}", crs_path(namespace)))
        .body(Vec::new())
        .expect("request");
    client
        .request_text(req)
        .await
        .unwrap_or_else(|e| panic!("delete {name}: {e}"));
}

fn crs(client: &Client) -> Api<CustomResource> {
    Api::namespaced_with(
        client.clone(),
        client.default_namespace(),
        &common::resource(),
    )
}

/// The CR's condition of `type_` as (status, reason, message), read from its raw status.
async fn condition(client: &Client, name: &str, type_: &str) -> Option<(String, String, String)> {
    let cr = crs(client).get_opt(name).await.expect("get CR")?;
    let status: Value = serde_json::from_str(cr.status_raw()?.get()).expect("status JSON");
    common::condition_in(&status, type_)
}

async fn greeting(client: &Client, release: &str) -> Option<String> {
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let cm = api.get_opt(&format!("{release}-cfg")).await.ok()??;
    cm.data?.get("greeting").cloned()
}

async fn deployed(client: &Client, name: &str, greeting_want: &str) {
    testkit::eventually(WAIT, || async {
        let deployed = condition(client, name, "Deployed").await;
        let got = greeting(client, name).await;
        match (&deployed, &got) {
            (Some((s, _, _)), Some(g)) if s == "True" && g == greeting_want => Ok(()),
            _ => Err(format!("{name}: Deployed {deployed:?}, greeting {got:?}")),
        }
    })
    .await;
}

#[test]
fn crs_with_specs_nested_200_and_2000_levels_deploy_beside_a_plain_one_and_delete() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_stack_size(gocodec::depth::DEEP_STACK_BYTES)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let (ns, client) = common::start();
        let dir = ns.dir().to_path_buf();
        let op = WatchRun::start(
            &client,
            &dir,
            &common::chart_dir(),
            Duration::from_secs(3600),
        );

        watch_run::create_demo(&client, ns.name(), "plain", json!({"greeting": "plain"})).await;
        const DEEP: [(&str, &str, usize); 2] = [
            ("deep200", "two hundred", 200),
            ("deep2000", "two thousand", 2_000),
        ];
        for (name, says, levels) in DEEP {
            create_raw(&client, ns.name(), name, &deep_spec(says, levels)).await;
        }

        deployed(&client, "plain", "plain").await;
        // Within Helm's limit (10,000 levels): values like any other.
        for (name, says, _) in DEEP {
            deployed(&client, name, says).await;
        }
        for name in ["plain", "deep200", "deep2000"] {
            assert_eq!(
                condition(&client, name, "ReleaseFailed").await,
                None,
                "{name}"
            );
        }

        for name in ["deep2000", "deep200", "plain"] {
            delete_raw(&client, ns.name(), name).await;
        }
        testkit::eventually(WAIT, || async {
            let left = crs(&client)
                .list(&Default::default())
                .await
                .expect("list CRs");
            let names: Vec<_> = left
                .items
                .iter()
                .filter_map(|c| c.metadata.name.clone())
                .collect();
            if names.is_empty() {
                Ok(())
            } else {
                Err(format!("still there: {names:?}"))
            }
        })
        .await;
        for name in ["plain", "deep200", "deep2000"] {
            assert_eq!(greeting(&client, name).await, None, "{name}: uninstalled");
        }
        // The operator ran throughout (a crash would have ended this process) and
        // stops cleanly.
        op.stop(WAIT).await;
    });
}
