use super::*;
use crate::accounts;
use play_model::model::event::Acting;

/// A push of several branches (one `git push`) is one `repo.push` event
/// listing every move, and one `repository_pushes` row per branch
/// (issue #49, item 6).
#[tokio::test]
async fn the_branches_of_one_push_are_one_event_and_one_row_each() {
    let db = crate::testing::store().await;
    let store = db.store.clone();
    let (account, _) = accounts::create_account(&store, "acme").await.unwrap();
    let mut tx = store.write().await.unwrap();
    let installation = builtin_installation_in(&mut tx, account.id).await.unwrap();
    let full = FullName { owner: "acme".into(), name: "app".into() };
    let new = NewRepository {
        installation: &installation,
        full_name: &full,
        description: "",
        private: true,
        default_branch: "main",
    };
    let repository =
        insert_in(&mut tx, Acting::system(account.id), new, &QuotaLimits::default(), false, None).await.unwrap();
    tx.commit().await.unwrap();
    let push = |branch: &str, old: Option<&str>, new: &str| Push {
        repository_id: repository.id,
        branch: branch.into(),
        old_sha: old.map(str::to_owned),
        new_sha: new.into(),
    };

    let pushes = [push("main", Some("a1"), "b2"), push("feature", None, "c3")];
    record_pushes(&store, &repository, &pushes, Actor::System, &[]).await.unwrap();
    record_pushes(&store, &repository, &[], Actor::System, &[]).await.unwrap();

    let all = events::list_for_account(&store, account.id).await.unwrap();
    let recorded: Vec<_> = all.iter().filter(|e| e.event_type == "repo.push").collect();
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    let moves = serde_json::json!([
        {"branch": "main", "before": "a1", "after": "b2"},
        {"branch": "feature", "before": null, "after": "c3"},
    ]);
    let expected = serde_json::json!({
        "repository": "acme/app", "branch": "main", "before": "a1", "after": "b2", "moves": moves,
    });
    assert_eq!(recorded[0].metadata.as_ref(), Some(&expected));
    let rows = shapes::column::<i64>(&store, sqlx::query("SELECT id FROM repository_pushes"), "id").await.unwrap();
    assert_eq!(rows.len(), 2);
}
