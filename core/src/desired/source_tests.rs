#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use crate::desired::Desired;

const WITH_LABEL: &str =
    "services:\n  web:\n    build: .\n    labels:\n      svc/source_mount: /app/\n  db:\n    image: postgres:16\n";

/// The desired state of `yaml` with `web` pinned to `commit` (or unpinned).
fn desired_of(yaml: &str, commit: Option<char>) -> Result<Desired, String> {
    let pins = commit.map(|c| crate::testing::pin("web", c)).into_iter().collect();
    crate::testing::pinned_desired(&crate::testing::playground(), yaml, pins)
}

#[test]
fn a_pinned_service_with_the_label_mounts_its_commit_volume() {
    let d = desired_of(WITH_LABEL, Some('a')).unwrap();
    let web = d.services.iter().find(|s| s.name == "web").unwrap();
    let source = web.source.as_ref().unwrap();
    let volume = format!("{}__src-web-aaaaaaaaaaaa", d.project);
    assert_eq!(source.volume, volume);
    assert_eq!((source.branch.as_str(), source.commit.as_str()), ("main", "a".repeat(40).as_str()));
    assert_eq!(source.mount_path, "/app");
    let mount = web.container.mounts.iter().find(|m| m.target == "/app").unwrap();
    assert_eq!((mount.kind, mount.source.as_deref(), mount.read_only), ("volume", Some(volume.as_str()), false));
    let spec = d.volumes.iter().find(|v| v.name == volume).unwrap();
    assert!(crate::desired::is_source_key(&spec.key), "{}", spec.key);
}

#[test]
fn another_commit_is_another_volume_and_another_config_hash() {
    let a = desired_of(WITH_LABEL, Some('a')).unwrap();
    let b = desired_of(WITH_LABEL, Some('b')).unwrap();
    let web = |d: &Desired| d.services.iter().find(|s| s.name == "web").unwrap().clone();
    assert_ne!(web(&a).source.unwrap().volume, web(&b).source.unwrap().volume);
    assert_ne!(web(&a).config_hash, web(&b).config_hash);
    let db = |d: &Desired| d.services.iter().find(|s| s.name == "db").unwrap().config_hash.clone();
    assert_eq!(db(&a), db(&b), "only the built service changes");
    assert!(!b.volumes.iter().any(|v| v.name == web(&a).source.unwrap().volume), "the old volume is not desired");
}

#[test]
fn no_label_or_no_pin_means_no_source() {
    let without = WITH_LABEL.replace("    labels:\n      svc/source_mount: /app/\n", "");
    let d = desired_of(&without, Some('a')).unwrap();
    assert!(d.services.iter().all(|s| s.source.is_none()));
    assert!(!d.volumes.iter().any(|v| crate::desired::is_source_key(&v.key)));
    assert!(d.services.iter().all(|s| s.container.mounts.is_empty()));
    let unpinned = desired_of(WITH_LABEL, None).unwrap();
    assert!(unpinned.services.iter().all(|s| s.source.is_none()));
    assert!(unpinned.volumes.is_empty());
}

#[test]
fn the_label_must_be_an_absolute_container_path() {
    for bad in ["app", "/app/../etc", "/"] {
        let yaml = WITH_LABEL.replace("/app/", bad);
        let err = desired_of(&yaml, Some('a')).unwrap_err();
        assert!(err.contains("svc/source_mount"), "{bad}: {err}");
    }
}
