//! The history limit: records past `maxHistory` go before the reconcile decides,
//! the actions are asked to keep the limit, and a held release is pruned later.

use super::*;

/// A history of `n` revisions of `digest`, the newest deployed, the rest superseded.
fn long_history(n: i64, digest: &str) -> Vec<RecordMeta> {
    (1..=n)
        .map(|v| {
            let status = if v == n {
                Status::Deployed
            } else {
                Status::Superseded
            };
            meta(v, status, labels(&[(digest::LABEL, digest)]))
        })
        .collect()
}

fn versions(actions: &FakeActions) -> Vec<i64> {
    actions.lock().history.iter().map(|m| m.version).collect()
}

fn limited(max: usize) -> Setup {
    let mut setup = Setup::default();
    setup.watch.max_history = Some(max);
    setup
}

#[tokio::test]
async fn records_past_the_limit_go_before_the_reconcile_decides() {
    let spec = json!({"greeting": "hi"});
    let actions = FakeActions::with_history(long_history(12, &digest_of(&spec)));
    let (result, _) = limited(3).reconcile(&actions, cr(spec)).await;
    result.expect("repaired");
    assert_eq!(actions.calls(), ["history", "prune", "repair"]);
    assert_eq!(versions(&actions), [10, 11, 12]);
}

#[tokio::test]
async fn a_history_within_the_limit_costs_no_call() {
    let spec = json!({"greeting": "hi"});
    let actions = FakeActions::with_history(long_history(10, &digest_of(&spec)));
    let (result, _) = reconcile_once(&actions, cr(spec)).await;
    result.expect("repaired");
    assert_eq!(
        actions.calls(),
        ["history", "repair"],
        "Helm's 10 by default"
    );
    assert_eq!(versions(&actions).len(), 10);
}

#[tokio::test]
async fn actions_keep_the_limit_and_one_leaves_only_the_deployed_revision() {
    let actions = FakeActions::with_history(long_history(1, "old-inputs"));
    let spec = json!({"greeting": "new"});
    let (result, _) = limited(1).reconcile(&actions, cr(spec.clone())).await;
    result.expect("upgraded");
    let opts = actions.lock().last_opts.clone().expect("upgrade options");
    assert_eq!(opts.max_history, 1, "the upgrade prunes to the limit too");
    // The record the upgrade superseded goes at the next reconcile.
    assert_eq!(versions(&actions), [1, 2]);
    let (result, _) = limited(1).reconcile(&actions, cr(spec)).await;
    result.expect("repaired");
    assert_eq!(versions(&actions), [2]);
    assert_eq!(actions.lock().history[0].status, Status::Deployed);
}

#[tokio::test]
async fn a_release_another_action_holds_is_pruned_later() {
    let spec = json!({"greeting": "hi"});
    let actions = FakeActions::with_history(long_history(5, &digest_of(&spec)));
    actions.lock().locked = true;
    let (result, _) = limited(2).reconcile(&actions, cr(spec.clone())).await;
    result.expect("the reconcile goes on");
    assert_eq!(versions(&actions).len(), 5);
    actions.lock().locked = false;
    let (result, _) = limited(2).reconcile(&actions, cr(spec)).await;
    result.expect("repaired");
    assert_eq!(versions(&actions), [4, 5]);
}

#[tokio::test]
async fn zero_keeps_every_record() {
    let spec = json!({"greeting": "hi"});
    let actions = FakeActions::with_history(long_history(30, &digest_of(&spec)));
    let (result, _) = limited(0).reconcile(&actions, cr(spec)).await;
    result.expect("repaired");
    assert!(!actions.calls().contains(&"prune"), "{:?}", actions.calls());
    assert_eq!(versions(&actions).len(), 30);
}

#[tokio::test]
async fn a_limit_of_one_keeps_the_failure_the_release_backs_off_from() {
    let spec = json!({"greeting": "new"});
    let (new, now) = (digest_of(&spec), unix_now().to_string());
    // An upgrade to the new inputs failed (2) and was rolled back (3), twice over.
    let failed = || {
        labels(&[
            (digest::LABEL, &new),
            (ATTEMPT_LABEL, "2"),
            ("modifiedAt", &now),
        ])
    };
    let rolled_back = || {
        labels(&[
            (digest::LABEL, "old"),
            (ROLLBACK_OF_LABEL, &new),
            (ATTEMPT_LABEL, "2"),
            ("modifiedAt", &now),
        ])
    };
    let actions = FakeActions::with_history(vec![
        meta(1, Status::Superseded, labels(&[(digest::LABEL, "old")])),
        meta(2, Status::Failed, failed()),
        meta(3, Status::Superseded, rolled_back()),
        meta(4, Status::Failed, failed()),
        meta(5, Status::Deployed, rolled_back()),
    ]);
    let (result, _) = limited(1).reconcile(&actions, cr(spec)).await;
    let err = result.expect_err("backing off");
    assert!(
        matches!(err, ReconcileError::BackingOff { attempts: 2, .. }),
        "{err}"
    );
    assert_eq!(actions.calls(), ["history", "prune"], "no upgrade yet");
    assert_eq!(versions(&actions), [4, 5], "the last failure stays");
}
