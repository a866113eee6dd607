//! The history limit against the test cluster (embedded, or `RUDDER_TEST_KUBECONFIG`'s):
//! a CR upgraded 50 times keeps Helm's ten records (the newest, the deployed one
//! among them) after every reconcile, and a lower `maxHistory` trims what is there
//! without a new revision.

use std::sync::Arc;

use kube::api::PostParams;
use operator::Watch;
use serde_json::json;

mod common;

use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_upgrades_keep_ten_records_and_a_lower_limit_trims_them() {
    let (_ns, client) = start();
    let ctx = context(&client, watch());
    create_cr(&client, "app", json!({"greeting": "v0"})).await;
    run_ok(&ctx, "app").await;
    for i in 1..=50 {
        let api = crs(&client);
        let mut cr = api.get("app").await.expect("get CR");
        cr.data["spec"] = json!({"greeting": format!("v{i}")});
        api.replace("app", &PostParams::default(), &cr)
            .await
            .expect("replace CR");
        run_ok(&ctx, "app").await;
        let records = revisions(&client, "app").await;
        assert!(records.len() <= 10, "after upgrade {i}: {records:?}");
        assert_eq!(
            records.last(),
            Some(&(i + 1, "deployed".to_string())),
            "after upgrade {i}: {records:?}"
        );
    }
    let expected: Vec<(i64, String)> = (42..=51)
        .map(|v| {
            let status = if v == 51 { "deployed" } else { "superseded" };
            (v, status.to_string())
        })
        .collect();
    assert_eq!(revisions(&client, "app").await, expected);

    // A lower limit applies at the next reconcile, though nothing changed.
    let lower = context(
        &client,
        Watch {
            max_history: Some(2),
            ..watch()
        },
    );
    run_ok(&lower, "app").await;
    assert_eq!(
        revisions(&client, "app").await,
        [(50, "superseded".to_string()), (51, "deployed".to_string())]
    );
}

async fn run_ok(ctx: &Arc<operator::Context>, name: &str) {
    run(ctx, name)
        .await
        .unwrap_or_else(|e| panic!("reconcile {name}: {e}"));
}
