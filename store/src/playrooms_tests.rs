use super::*;

/// A new SSH key from a key without `playrooms:trust` clears the
/// Playroom's trust; a rename at the same moment (PostgreSQL) read the
/// row trusted and wrote `trusted = 1` back, so a Playroom reached with a
/// key the operator never saw stayed trusted. Whichever commits first,
/// trust ends cleared.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rename_racing_a_new_key_never_keeps_trust() {
    let db = crate::testing::store().await;
    let store = &db.store;
    let (account, id) = crate::testing::playroom_row(store).await;
    let secrets = play_model::secrets::MasterKey::generate().secret_box();
    for round in 0..30 {
        sqlx::query("UPDATE playrooms SET trusted = 1 WHERE id = $1").bind(id).execute(store.pool()).await.unwrap();
        let by = Acting { account_id: account, actor: Actor::System };
        let (keyed, renamed) = tokio::join!(
            tokio::spawn({
                let (store, secrets) = (store.clone(), secrets.clone());
                async move { set_key(&store, &secrets, by, id, ("private", "public"), false).await }
            }),
            tokio::spawn({
                let (store, secrets) = (store.clone(), secrets.clone());
                let fields = PlayroomFields { name: Some(format!("box-{round}")), ..PlayroomFields::default() };
                async move { update(&store, &secrets, by, id, fields).await }
            }),
        );
        keyed.unwrap().unwrap();
        renamed.unwrap().unwrap();
        assert!(!get(store, account, id).await.unwrap().trusted, "round {round}: the rename kept trust");
    }
}

/// A launch onto a Playroom while it is deleted (PostgreSQL): the delete
/// counted no Playground, the launch's insert went in beside it, and
/// either the insert or the delete failed on the foreign key (a 500), or,
/// once an edge had run there, a Playground stood on a deleted Playroom.
/// Exactly one wins, and the other is told why.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_launch_racing_the_playrooms_delete_is_refused_or_refuses_it() {
    let db = crate::testing::store().await;
    let store = &db.store;
    let (account, _) = crate::testing::playroom_row(store).await;
    let by = Acting { account_id: account, actor: Actor::System };
    let fields = play_model::model::playspec::PlayspecFields {
        name: Some("spec".into()),
        base_compose_yaml: Some("services:\n  web:\n    image: x\n".into()),
        ..Default::default()
    };
    let playspec = crate::playspecs::create(store, by, fields, &QuotaLimits::default()).await.unwrap().id;
    for round in 0..30 {
        let room = crate::testing::insert_playroom(store, account, &format!("room-{round}")).await;
        let new = crate::testing::new_playground(&format!("pg-{round}"), room, playspec);
        let (launched, deleted) = tokio::join!(
            tokio::spawn({
                let store = store.clone();
                async move {
                    let mut tx = store.write().await?;
                    crate::playgrounds::insert_in(&mut tx, account, &new, Actor::System).await?;
                    tx.commit().await?;
                    Ok::<_, Error>(())
                }
            }),
            tokio::spawn({
                let store = store.clone();
                async move { delete(&store, account, room, Actor::System).await }
            }),
        );
        match (launched.unwrap(), deleted.unwrap()) {
            (Ok(()), Err(Error::Conflict(_))) | (Err(Error::Validation(_)), Ok(())) => {}
            other => panic!("round {round}: one must win and the other be told why: {other:?}"),
        }
    }
}
