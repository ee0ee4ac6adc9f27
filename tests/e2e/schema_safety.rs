//! Schema safety from the command line (issue #53, item 4): `play migrate
//! --dry-run` lists what would run and changes nothing, and `play migrate`
//! and `play serve` refuse a database whose schema is newer than the
//! binary, naming both versions and the way back. With `PLAY_BACKUP_DIR`,
//! `play serve` takes a backup before it migrates an older schema.

use crate::support::serve::Play;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test]
async fn a_dry_run_lists_every_migration_of_a_new_database_and_creates_nothing() {
    let play = Play::with_database_in_data_dir();
    let out = play.run(&["migrate", "--dry-run"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listed = text(&out.stdout);
    assert!(listed.contains("schema: database none (a new database), this binary"), "{listed}");
    assert!(listed.contains("would run 0001 foundation"), "{listed}");
    assert!(!play.data_dir().join("play.db").exists(), "a dry run made the database");

    let applied = play.run(&["migrate"]);
    assert!(applied.status.success(), "{}", text(&applied.stderr));
    let again = text(&play.run(&["migrate", "--dry-run"]).stdout);
    assert!(again.contains("nothing to run") && !again.contains("would run"), "{again}");
}

#[tokio::test]
async fn a_database_newer_than_the_binary_is_refused_by_migrate_and_serve() {
    let play = Play::new().await;
    assert!(play.run(&["migrate"]).status.success());
    let store = play_store::Store::connect(play.database_url()).await.unwrap();
    let binary = store.schema().await.unwrap().binary;
    let newer = binary + 1;
    // What a newer play's migration leaves behind.
    play_store::testing::record_applied_migration(&store, newer).await;
    store.close().await;

    let expected = [
        format!("at migration {newer}, newer than this play binary knows (its last migration is {binary})"),
        "restore the backup of the database taken before the upgrade".to_owned(),
    ];
    for args in [&["migrate"][..], &["migrate", "--dry-run"]] {
        let out = play.run(args);
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "play {args:?} ran on a newer schema");
        assert!(expected.iter().all(|e| stderr.contains(e)), "play {args:?}: {stderr}");
    }
    let refused = play.serve_refused();
    let stderr = text(&refused.stderr);
    assert!(!refused.status.success());
    assert!(expected.iter().all(|e| stderr.contains(e)), "play serve: {stderr}");
}

#[tokio::test]
async fn serve_takes_a_backup_before_it_migrates_an_older_schema() {
    let backups = tempfile::tempdir().unwrap();
    let play = Play::new().await.env("PLAY_BACKUP_DIR", backups.path());
    // A database as the previous version of play left it.
    let store = play_store::Store::connect(play.database_url()).await.unwrap();
    let binary = store.schema().await.unwrap().binary;
    play_store::testing::migrate_up_to(&store, binary - 1).await;
    store.close().await;

    let server = play.serve().await;
    let taken: Vec<_> = std::fs::read_dir(backups.path()).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(taken.len(), 1, "{taken:?}");
    let name = taken[0].file_name().unwrap().to_string_lossy().into_owned();
    let expected = format!("play-before-migration-{:04}-to-{binary:04}-", binary - 1);
    assert!(name.starts_with(&expected) && name.ends_with(".tar.zst"), "{name}");
    // The backup holds the database as it was before the migration, and
    // the server then migrated it.
    let target = tempfile::tempdir().unwrap();
    let out = play
        .command()
        .env("PLAY_DATA_DIR", target.path().join("data"))
        .env("PLAY_DATABASE_URL", format!("sqlite://{}", target.path().join("data/play.db").display()))
        .args(["restore", taken[0].to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    if play_store::testing::backend() == play_store::Backend::Sqlite {
        assert!(out.status.success(), "{stderr}");
        assert!(stderr.contains(&format!("schema {}", binary - 1)), "{stderr}");
    } else {
        assert!(stderr.contains("of a PostgreSQL store"), "{stderr}");
    }
    let store = play_store::Store::connect(play.database_url()).await.unwrap();
    assert_eq!(store.schema().await.unwrap().database, Some(binary));

    // Started again at this binary's schema: no backup.
    drop(server);
    let _again = play.serve().await;
    assert_eq!(std::fs::read_dir(backups.path()).unwrap().count(), 1);
}
