use super::*;
use crate::triggers::tests::trigger;

/// A trigger with a launch begun for pull request `number` at commit `a`:
/// the trigger and the launch's target.
async fn launched(store: &Store, number: &str) -> (Trigger, Target) {
    let trigger = trigger(store).await;
    let target = begin_launch(store, trigger.id, "pull_request", number, "a").await.unwrap();
    (trigger, target)
}

/// The generation fence: a launch records its Playground on the target in
/// its own transaction only while the target is live at the generation
/// the launch was announced with. A pull request closed meanwhile (the
/// target gone), or a later launch (the next generation), refuses it.
#[tokio::test]
async fn a_launch_is_claimed_only_at_the_generation_it_was_announced_with() {
    let db = crate::testing::store().await;
    let store = &db.store;
    let (trigger, first) = launched(store, "7").await;
    assert_eq!((first.status, first.generation, first.playground_id), (TargetStatus::Live, 1, None));

    // Closed while the launch was being made: the claim fails.
    destroy(store, &trigger, &first, "pull request #7 was closed").await.unwrap();
    let claim = async |generation: i64, playground: i64| {
        let mut tx = store.write().await.unwrap();
        let claimed = claim_in(&mut tx, first.id, generation, playground).await.unwrap();
        tx.commit().await.unwrap();
        claimed
    };
    assert!(!claim(1, 41).await, "a gone target takes no Playground");

    // Reopened: the next generation; the old launch still cannot claim.
    let second = begin_launch(store, trigger.id, "pull_request", "7", "b").await.unwrap();
    assert_eq!((second.id, second.generation), (first.id, 2));
    assert!(!claim(1, 41).await, "a launch of an earlier generation is refused");
    assert!(claim(2, 42).await);
    let now = list(store, trigger.id).await.unwrap().remove(0);
    assert_eq!((now.playground_id, now.commit_sha.as_deref()), (Some(42), Some("b")));
}

#[tokio::test]
async fn what_a_target_reported_is_kept_beside_it() {
    let db = crate::testing::store().await;
    let store = &db.store;
    let (_, target) = launched(store, "3").await;
    assert_eq!(reported(store, target.id).await.unwrap(), Reported::default());
    let done = Reported {
        comment_id: Some("1001".into()),
        deployment_id: Some("1002".into()),
        deployment_sha: Some("a".into()),
        digest: Some("d".into()),
    };
    record_report(store, target.id, &done).await.unwrap();
    assert_eq!(reported(store, target.id).await.unwrap(), done);
}
