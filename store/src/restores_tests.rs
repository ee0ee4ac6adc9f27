use std::time::Duration;

use play_model::model::restore::QuarantinedObject;
use play_model::time;

use super::*;
use crate::testing;

#[tokio::test]
async fn the_latest_restore_is_read_back_with_its_grace_period() {
    let t = testing::store().await;
    assert_eq!(latest(&t.store).await.unwrap(), None, "never restored");
    let backup = time::now() - chrono::Duration::hours(2);
    record(&t.store, backup, 41, Duration::from_secs(3600)).await.unwrap();
    record(&t.store, backup, 42, Duration::from_secs(7200)).await.unwrap();
    let restore = latest(&t.store).await.unwrap().unwrap();
    assert_eq!(restore.last_playground_id, 42);
    assert_eq!(time::to_db(&restore.backup_created_at), time::to_db(&backup));
    let grace = restore.quarantine_until - restore.restored_at;
    assert_eq!(grace.num_seconds(), 7200);
    assert!(restore.quarantines(43, time::now()) && !restore.quarantines(42, time::now()));
}

#[tokio::test]
async fn a_playrooms_quarantined_objects_are_replaced_whole_and_keep_their_first_time() {
    let t = testing::store().await;
    let (_, room) = testing::playroom_row(&t.store).await;
    let object = |id: &str, at| QuarantinedObject {
        playroom_id: room,
        object_id: id.into(),
        kind: "container".into(),
        name: format!("play-x-9-{id}"),
        playground_id: 9,
        quarantined_at: at,
    };
    let first = time::now() - chrono::Duration::minutes(5);
    replace_quarantined(&t.store, room, &[object("a", first), object("b", first)]).await.unwrap();
    let later = time::now();
    replace_quarantined(&t.store, room, &[object("b", later), object("c", later)]).await.unwrap();
    let listed = quarantined(&t.store).await.unwrap();
    let ids: Vec<_> = listed.iter().map(|o| o.object_id.as_str()).collect();
    assert_eq!(ids, ["b", "c"], "a is gone from the host, c is new");
    assert_eq!(time::to_db(&listed[0].quarantined_at), time::to_db(&first), "b keeps the time it was first seen");
    replace_quarantined(&t.store, room, &[]).await.unwrap();
    assert!(quarantined(&t.store).await.unwrap().is_empty());
}
