use super::*;
use crate::accounts;
use play_model::model::schedule::Activation;

const BODY: &str = "svc:\n  trigger_config: {enabled: true, event_type: pull_request, repo_url: \
                    \"https://github.com/acme/app\", branch: main}\nservices:\n  web:\n    image: busybox\n";

/// The trigger of a new template `app` of a new account `acme`.
pub(crate) async fn trigger(store: &Store) -> Trigger {
    let account = accounts::create_account(store, "acme").await.unwrap().0.id;
    crate::testing::template(store, account, "app", BODY).await;
    launch_settings::list::<Trigger>(store, account).await.unwrap().remove(0)
}

async fn may_read(store: &Store, id: i64) -> bool {
    let row = sqlx::query("SELECT may_read_playzones FROM triggers WHERE id = $1").bind(id).fetch_one(store.pool());
    is_set(row.await.unwrap().try_get("may_read_playzones").unwrap())
}

/// The attack of a key without `playzones:read` (issue #49, item 3, on
/// PostgreSQL): it redirects the trigger with a new template version,
/// which clears `may_read_playzones` (`sync_in`), while it pauses the
/// trigger. The pause read the row before the redirect committed and
/// wrote the old right back, so the trigger built the redirected
/// repository with a right the change had taken away. The UPDATE below is
/// sync_in's; whichever commits first, the right must stay cleared.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pause_racing_a_redirect_never_gives_the_right_back() {
    let db = crate::testing::store().await;
    let store = &db.store;
    let trigger = trigger(store).await;
    let secrets = play_model::secrets::MasterKey::generate().secret_box();
    for round in 0..40 {
        sqlx::query("UPDATE triggers SET may_read_playzones = 1 WHERE id = $1")
            .bind(trigger.id)
            .execute(store.pool())
            .await
            .unwrap();
        // A pause is no start: it keeps the right the trigger has.
        let pause = Activation { playroom_id: None, variables: None, paused: Some(true) };
        let (paused, cleared) = tokio::join!(
            tokio::spawn({
                let (store, secrets) = (store.clone(), secrets.clone());
                async move {
                    launch_settings::activate::<Trigger>(
                        &store,
                        &secrets,
                        (trigger.account_id, trigger.id),
                        pause,
                        true,
                    )
                    .await
                }
            }),
            tokio::spawn({
                let store = store.clone();
                async move {
                    sqlx::query("UPDATE triggers SET may_read_playzones = 0 WHERE id = $1")
                        .bind(trigger.id)
                        .execute(store.pool())
                        .await
                }
            }),
        );
        paused.unwrap().unwrap();
        cleared.unwrap().unwrap();
        assert!(!may_read(store, trigger.id).await, "round {round}: the pause wrote the cleared right back");
    }
}
