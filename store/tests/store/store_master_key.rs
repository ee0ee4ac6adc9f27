//! The master key's fingerprint: recorded by the first process, compared
//! by every later one, one winner when two start at once.

use play_model::model::installation::KeyCheck;
use play_store::master_key;
use play_store::testing;

#[tokio::test]
async fn the_first_key_is_recorded_and_another_is_told_apart() {
    let t = testing::store().await;
    assert_eq!(master_key::recorded(&t.store).await.unwrap(), None);
    assert_eq!(master_key::check(&t.store, "aaaa").await.unwrap(), KeyCheck::Recorded);
    assert_eq!(master_key::check(&t.store, "aaaa").await.unwrap(), KeyCheck::Matches);
    assert_eq!(master_key::check(&t.store, "bbbb").await.unwrap(), KeyCheck::Differs { recorded: "aaaa".into() });
    assert_eq!(master_key::recorded(&t.store).await.unwrap().as_deref(), Some("aaaa"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_starting_at_once_with_different_keys_record_one() {
    let t = testing::store().await;
    let fingerprints: Vec<String> = (0..6).map(|n| format!("key{n}")).collect();
    let tasks: Vec<_> = fingerprints
        .iter()
        .map(|f| {
            let (store, f) = (t.store.clone(), f.clone());
            tokio::spawn(async move { master_key::check(&store, &f).await.unwrap() })
        })
        .collect();
    let mut checks = Vec::new();
    for task in tasks {
        checks.push(task.await.unwrap());
    }
    assert_eq!(checks.iter().filter(|c| **c == KeyCheck::Recorded).count(), 1, "{checks:?}");
    let winner = master_key::recorded(&t.store).await.unwrap().unwrap();
    for (f, c) in fingerprints.iter().zip(&checks) {
        match c {
            KeyCheck::Recorded => assert_eq!(*f, winner),
            KeyCheck::Differs { recorded } => assert_eq!(*recorded, winner),
            KeyCheck::Matches => panic!("no two replicas had the same key"),
        }
    }
}
