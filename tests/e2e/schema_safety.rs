//! Schema safety from the command line (issue #53, item 4): `play migrate
//! --dry-run` lists what would run and changes nothing, and `play migrate`
//! and `play serve` refuse a database whose schema is newer than the
//! binary, naming both versions and the way back.

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
