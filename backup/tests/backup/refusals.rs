//! Each refusal of a restore, with its message; a refused restore writes
//! nothing to its target.

use std::io::{Read, Write};
use std::path::Path;

use play_model::secrets::MasterKey;
use play_store::{Backend, Store, testing};

use crate::support::{Installation, empty_target, restore};

/// What the target's data directory holds, by name.
fn held(dir: &Path) -> Vec<String> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .map(|entries| entries.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn a_data_directory_that_holds_anything_but_the_key_is_refused() {
    let install = Installation::new().await;
    let (archive, _) = install.back_up().await;
    let target = empty_target(Some(&install.key_file)).await;
    std::fs::write(target.target.data_dir.join("notes.txt"), "mine").unwrap();
    let err = restore(&archive, &target.target).await.unwrap_err().to_string();
    assert!(err.contains("is not empty") && err.contains("notes.txt"), "{err}");
    assert_eq!(held(&target.target.data_dir), ["master.key", "notes.txt"]);
}

#[tokio::test]
async fn a_database_that_holds_tables_is_refused() {
    if testing::backend() != Backend::Postgres {
        return;
    }
    let install = Installation::new().await;
    let (archive, _) = install.back_up().await;
    let mut target = empty_target(Some(&install.key_file)).await;
    let used = testing::store().await;
    target.target.database_url = used.url.clone();
    let err = restore(&archive, &target.target).await.unwrap_err().to_string();
    assert!(err.contains("holds tables") && !err.contains("password"), "{err}");
}

#[tokio::test]
async fn a_damaged_archive_is_refused_and_nothing_is_restored() {
    let install = Installation::new().await;
    let (archive, _) = install.back_up().await;
    // A byte flipped in the compressed stream.
    let mut bytes = std::fs::read(&archive).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xFF;
    let flipped = archive.with_extension("flipped");
    std::fs::write(&flipped, bytes).unwrap();
    let target = empty_target(Some(&install.key_file)).await;
    let err = restore(&flipped, &target.target).await.unwrap_err().to_string();
    assert!(err.contains("damaged"), "{err}");
    assert_eq!(held(&target.target.data_dir), ["master.key"]);
    assert_empty_database(&target.target.database_url).await;
}

#[tokio::test]
async fn a_file_that_does_not_match_its_checksum_is_refused_naming_it() {
    let install = Installation::new().await;
    let (archive, _) = install.back_up().await;
    // The archive rewritten whole (a valid stream) with one file changed
    // and the manifest kept.
    let tampered = archive.with_extension("tampered");
    rewrite(&archive, &tampered, |name, data| {
        if name == "repositories/acme/app.git/HEAD" {
            data.extend_from_slice(b"# changed\n");
        }
    });
    let target = empty_target(Some(&install.key_file)).await;
    let err = restore(&tampered, &target.target).await.unwrap_err().to_string();
    assert!(err.contains("repositories/acme/app.git/HEAD does not match its checksum"), "{err}");
    assert_eq!(held(&target.target.data_dir), ["master.key"]);
}

#[tokio::test]
async fn a_backup_of_a_newer_schema_is_refused_naming_both_versions() {
    let install = Installation::new().await;
    let binary = install.store.schema().await.unwrap().binary;
    testing::record_applied_migration(&install.store, binary + 1).await;
    let (archive, manifest) = install.back_up().await;
    assert_eq!(manifest.schema_version, Some(binary + 1));
    let target = empty_target(Some(&install.key_file)).await;
    let err = restore(&archive, &target.target).await.unwrap_err().to_string();
    assert!(err.contains(&format!("at migration {}", binary + 1)), "{err}");
    assert!(err.contains(&format!("its last migration is {binary}")), "{err}");
    assert_eq!(held(&target.target.data_dir), ["master.key"]);
}

#[tokio::test]
async fn a_missing_or_other_master_key_is_refused_naming_the_key_file() {
    let install = Installation::new().await;
    let (archive, manifest) = install.back_up().await;
    let expected = manifest.key_check.unwrap();

    let without = empty_target(None).await;
    let err = restore(&archive, &without.target).await.unwrap_err().to_string();
    let file = without.target.master_key_file.display().to_string();
    assert!(err.contains(&expected) && err.contains(&file) && err.contains("no key file"), "{err}");

    let other_dir = tempfile::tempdir().unwrap();
    let other_file = other_dir.path().join("other.key");
    let (other, _) = MasterKey::load_or_create(&other_file).unwrap();
    let wrong = empty_target(Some(&other_file)).await;
    let err = restore(&archive, &wrong.target).await.unwrap_err().to_string();
    let file = wrong.target.master_key_file.display().to_string();
    assert!(err.contains(&file) && err.contains(&other.fingerprint()) && err.contains(&expected), "{err}");
    assert_eq!(held(&wrong.target.data_dir), ["master.key"]);
    assert_empty_database(&wrong.target.database_url).await;
}

#[tokio::test]
async fn a_backup_restores_into_its_own_kind_of_store_only() {
    if testing::backend() != Backend::Postgres {
        return;
    }
    let install = Installation::new().await;
    let (archive, _) = install.back_up().await;
    let mut target = empty_target(Some(&install.key_file)).await;
    target.target.database_url = format!("sqlite://{}", target.target.data_dir.join("play.db").display());
    let err = restore(&archive, &target.target).await.unwrap_err().to_string();
    assert!(err.contains("of a PostgreSQL store and restores into PostgreSQL only"), "{err}");
}

async fn assert_empty_database(url: &str) {
    if testing::backend() == Backend::Postgres {
        let store = Store::connect(url).await.unwrap();
        assert!(store.is_empty().await.unwrap(), "the refused restore wrote to the database");
    } else {
        assert!(!Path::new(url.trim_start_matches("sqlite://")).exists(), "the refused restore wrote {url}");
    }
}

/// Copies the archive `from` to `to`, entry by entry, through `change`.
fn rewrite(from: &Path, to: &Path, change: impl Fn(&str, &mut Vec<u8>)) {
    let decoder = zstd::Decoder::new(std::fs::File::open(from).unwrap()).unwrap();
    let mut archive = tar::Archive::new(decoder);
    let encoder = zstd::Encoder::new(std::fs::File::create(to).unwrap(), 3).unwrap();
    let mut out = tar::Builder::new(encoder);
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().to_string_lossy().into_owned();
        let mut data = Vec::new();
        entry.read_to_end(&mut data).unwrap();
        change(&name, &mut data);
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o600);
        out.append_data(&mut header, &name, data.as_slice()).unwrap();
    }
    out.into_inner().unwrap().finish().unwrap().flush().unwrap();
}
