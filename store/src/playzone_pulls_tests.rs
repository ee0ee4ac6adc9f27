use super::*;
use crate::{accounts, playzones};
use play_model::model::event::{Acting, Actor};
use play_model::model::quota::QuotaLimits;

fn pull(number: u64, state: PullState, sha: char, at_secs: i64) -> PullRequest {
    PullRequest {
        number,
        state,
        head_sha: sha.to_string().repeat(40),
        head_ref: "feature".into(),
        head_repo: Some("acme/app".into()),
        base_ref: "main".into(),
        fork: false,
        title: "A change".into(),
        html_url: format!("https://github.com/acme/app/pull/{number}"),
        updated_at: chrono::DateTime::from_timestamp(1_800_000_000 + at_secs, 0).unwrap(),
    }
}

async fn zone(store: &Store) -> i64 {
    let (account, _) = accounts::create_account(store, "pulls").await.unwrap();
    let changes = play_model::playzone::Changes {
        name: Some("app".into()),
        scm_url: Some("https://github.com/acme/app.git".into()),
        ..Default::default()
    };
    let by = Acting::new(account.id, Actor::System);
    playzones::create(store, None, by, changes, false, &QuotaLimits::default()).await.unwrap().id
}

#[tokio::test]
async fn the_later_description_wins_and_a_stale_list_never_reopens() {
    let db = crate::testing::store().await;
    let store = &db.store;
    let zone = zone(store).await;
    record(store, zone, &[pull(3, PullState::Open, 'a', 10)]).await.unwrap();
    assert_eq!(head(store, zone, 3).await.unwrap(), Some("a".repeat(40)));
    // A new commit (synchronize) is later: the head moves, and a build
    // pinned to the pull request's name sees it.
    record(store, zone, &[pull(3, PullState::Open, 'b', 20)]).await.unwrap();
    assert_eq!(
        playzones::branch_commit(store, zone, "pull/3/head").await.unwrap(),
        Some("b".repeat(40)),
        "the pin name resolves through the pull request index"
    );
    // Closed by a delivery; then a list read before it was closed arrives.
    record(store, zone, &[pull(3, PullState::Closed, 'b', 30)]).await.unwrap();
    record(store, zone, &[pull(3, PullState::Open, 'b', 20)]).await.unwrap();
    assert_eq!(list(store, zone).await.unwrap()[0].state, PullState::Closed, "a stale list does not reopen it");
    // Open and closed at the same second: closed holds.
    record(store, zone, &[pull(4, PullState::Open, 'c', 40), pull(4, PullState::Closed, 'c', 40)]).await.unwrap();
    record(store, zone, &[pull(4, PullState::Open, 'c', 40)]).await.unwrap();
    assert_eq!(list(store, zone).await.unwrap()[1].state, PullState::Closed);
    // Reopened later: open again.
    record(store, zone, &[pull(3, PullState::Open, 'd', 50)]).await.unwrap();
    let listed = list(store, zone).await.unwrap();
    assert_eq!((listed[0].state, listed[0].head_sha.as_str()), (PullState::Open, "d".repeat(40).as_str()));
    // No branch of the index answers for a pull request's name.
    assert_eq!(playzones::branch_commit(store, zone, "pull/9/head").await.unwrap(), None);
}

/// A delivery of a just-opened pull request and the trigger loop's list
/// record the same new pull request at once: on PostgreSQL both found no
/// row and both inserted, and the loser's primary-key violation failed
/// the delivery with a 500 (CI, triggers_pulls_e2e). Every writer must
/// succeed and leave one row.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writers_of_one_new_pull_request_at_once_all_succeed() {
    let db = crate::testing::store().await;
    let store = &db.store;
    let zone = zone(store).await;
    for number in 1..=25 {
        let mut writers = tokio::task::JoinSet::new();
        for at in 0..6 {
            let store = store.clone();
            writers.spawn(async move { record(&store, zone, &[pull(number, PullState::Open, 'a', at)]).await });
        }
        while let Some(done) = writers.join_next().await {
            done.unwrap().unwrap();
        }
    }
    let listed = list(store, zone).await.unwrap();
    assert_eq!(listed.len(), 25);
    // The latest description won each race, whichever writer came last.
    assert!(listed.iter().all(|p| p.updated_at == pull(1, PullState::Open, 'a', 5).updated_at), "{listed:?}");
}
