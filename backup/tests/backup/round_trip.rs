//! A backup restores whole: the store's rows, the installation, the key's
//! fingerprint and the repositories, also when taken while play writes.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use play_backup::{Output, RESTORE_ID_GAP, StoreKind};
use play_store::{Store, testing};

use crate::support::{Installation, empty_target, git, push_commit, restore};

#[tokio::test]
async fn a_backup_restores_the_store_and_the_repositories_whole() {
    let install = Installation::new().await;
    let before = install.store.contents().await.unwrap();
    let head = git(&install.source.git_root.join("acme/app.git"), &["rev-parse", "main"]);
    let (archive, manifest) = install.back_up().await;

    assert_eq!(manifest.counts, before.counts);
    assert_eq!(manifest.installation, install.store.installation().await.unwrap());
    assert_eq!(manifest.key_check.as_deref(), Some(install.key.fingerprint().as_str()));
    assert_eq!(manifest.schema_version, before.schema);
    let kind = if testing::backend() == play_store::Backend::Sqlite { StoreKind::Sqlite } else { StoreKind::Postgres };
    assert_eq!(manifest.store, kind);
    assert!(manifest.files.contains_key(kind.file()), "{:?}", manifest.files.keys());
    assert!(manifest.files.contains_key("repositories/acme/app.git/HEAD"), "{:?}", manifest.files.keys());
    // Nothing but the archive is left beside it or in the data directory.
    let beside: Vec<_> =
        std::fs::read_dir(archive.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(beside, [archive.file_name().unwrap()]);
    assert!(
        std::fs::read_dir(install.data.path()).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with('.'))
    );

    // A push after the backup is not in it.
    push_commit(&install.source.git_root.join("acme/app.git"), "after the backup");

    let target = empty_target(Some(&install.key_file)).await;
    let restored = restore(&archive, &target.target).await.unwrap();
    assert_eq!(restored.manifest, manifest);
    let store = Store::connect(&target.target.database_url).await.unwrap();
    let mut after = store.contents().await.unwrap();
    assert_eq!(after.counts.remove("restores"), Some(1));
    let mut expected = before.counts.clone();
    expected.remove("restores");
    assert_eq!(after.counts, expected);
    assert_eq!(after.installation, before.installation);
    assert_eq!(after.key_fingerprint, before.key_fingerprint);
    // The restore is recorded for the sweep's quarantine; the rest of
    // the counts are the backup's.
    let recorded = play_store::restores::latest(&store).await.unwrap().unwrap();
    assert_eq!(recorded.last_playground_id, manifest.last_playground_id);
    assert_eq!((recorded.quarantine_until - recorded.restored_at).num_seconds(), 3600);
    // New Playground ids start past the gap.
    let (account, room) = (
        testing::accounts(&store, ["later"]).await[0].id,
        sqlx::query_scalar::<_, i64>("SELECT id FROM playrooms").fetch_one(store.pool()).await.unwrap(),
    );
    let next = testing::insert_playground(&store, account, room).await;
    assert_eq!(next, manifest.last_playground_id + RESTORE_ID_GAP + 1);

    let clone = tempfile::tempdir().unwrap();
    let restored_repo = target.target.git_root.join("acme/app.git");
    git(clone.path(), &["clone", "-q", restored_repo.to_str().unwrap(), "c"]);
    assert_eq!(git(&clone.path().join("c"), &["rev-parse", "HEAD"]), head);
    git(&restored_repo, &["fsck", "--no-progress"]);

    // A second backup under the same name is refused; the first is kept.
    let again = play_backup::backup(&install.source, &Output::File(archive.clone()), &|_| {}).await.unwrap_err();
    assert!(again.to_string().contains("exists"), "{again}");
}

/// Taken while a client writes: the manifest's counts are the snapshot's,
/// and the restore finds exactly them.
#[tokio::test]
async fn a_backup_taken_while_play_writes_is_one_moment() {
    let install = Installation::new().await;
    let account = install.account;
    let writing = Arc::new(AtomicBool::new(true));
    let writer = {
        let (store, writing) = (install.store.clone(), Arc::clone(&writing));
        tokio::spawn(async move {
            let mut n = 0;
            while writing.load(Ordering::Relaxed) {
                testing::insert_playroom(&store, account, &format!("w{n}")).await;
                n += 1;
            }
            n
        })
    };
    // Some writes before, during and after the snapshot.
    while install.store.contents().await.unwrap().counts["playrooms"] < 5 {
        tokio::task::yield_now().await;
    }
    let (archive, manifest) = install.back_up().await;
    writing.store(false, Ordering::Relaxed);
    let written = writer.await.unwrap();
    let rooms = manifest.counts["playrooms"];
    assert!(rooms >= 5 && rooms < written + 3, "{rooms} of {written}");

    let target = empty_target(Some(&install.key_file)).await;
    restore(&archive, &target.target).await.unwrap();
    let store = Store::connect(&target.target.database_url).await.unwrap();
    assert_eq!(store.contents().await.unwrap().counts["playrooms"], rooms);
}
