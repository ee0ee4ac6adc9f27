//! Names play reserves for its own objects, and the bounds on what a
//! document expands to: refused under every policy, trusted included,
//! each with the attack itself.

use play_model::compose::{Policy, validate_compose};

fn refused(yaml: &str, path: &str, fragment: &str) {
    for policy in [Policy::UNTRUSTED, Policy::TRUSTED] {
        let report = validate_compose(yaml, &policy);
        assert!(
            report.errors.iter().any(|e| e.path == path && e.message.contains(fragment)),
            "{policy:?}: expected a refusal at {path} containing {fragment:?}, got {:?}",
            report.errors
        );
    }
}

#[test]
fn the_mounted_files_volume_cannot_be_declared() {
    // `<project>_` + `_play_files` would be the Playground's own files volume.
    refused(
        "services:\n  web:\n    image: x\n    volumes: [\"_play_files:/steal\"]\nvolumes:\n  _play_files: {}\n",
        "volumes._play_files",
        "must start with a letter or digit",
    );
    refused(
        "services:\n  web:\n    image: x\n    networks: [_edge]\nnetworks:\n  _edge: {}\n",
        "networks._edge",
        "must start with a letter or digit",
    );
}

#[test]
fn play_names_cannot_be_named() {
    refused(
        "services:\n  web:\n    image: x\n    volumes: [\"f:/steal\"]\nvolumes:\n  f:\n    external: true\n    name: play-3fa91c-7-shop__play_files\n",
        "volumes.f.name",
        "reserved",
    );
    refused(
        "services:\n  web:\n    image: x\n    networks: [edge]\nnetworks:\n  edge:\n    external: true\n    name: PLAY-3fa91c-edge\n",
        "networks.edge.name",
        "reserved",
    );
}

#[test]
fn play_labels_are_reserved() {
    refused(
        "services:\n  web:\n    image: x\n    labels:\n      dev.play.edge: \"true\"\n",
        "services.web.labels.dev.play.edge",
        "reserved",
    );
    refused(
        "services:\n  web:\n    image: x\n    labels: [\"dev.play.playground=1\"]\n",
        "services.web.labels.dev.play.playground",
        "reserved",
    );
}

#[test]
fn a_port_range_is_counted_by_its_length() {
    let yaml = "services:\n  a:\n    image: x\n    ports: [\"1-65535:1-65535\"]\n  b:\n    image: x\n    ports: [\"1-65535:1-65535/udp\"]\n";
    refused(yaml, "services", "131070 ports");
    // 1,000 ports in all is still fine.
    let fine = "services:\n  a:\n    image: x\n    ports: [\"20000-20499:20000-20499\"]\n  b:\n    image: x\n    ports: [\"21000-21499:21000-21499\"]\n";
    assert!(validate_compose(fine, &Policy::UNTRUSTED).valid);
}

#[test]
fn collections_are_bounded() {
    let mut services = String::from("services:\n");
    for i in 0..101 {
        services.push_str(&format!("  s{i}:\n    image: x\n"));
    }
    refused(&services, "services", "101 services; the limit is 100");

    let mut env = String::from("services:\n  web:\n    image: x\n    environment:\n");
    for i in 0..1001 {
        env.push_str(&format!("      V{i}: x\n"));
    }
    refused(&env, "services.web.environment", "1001 environment entries");

    let mut labels = String::from("services:\n  web:\n    image: x\n    labels:\n");
    for i in 0..501 {
        labels.push_str(&format!("      l{i}: x\n"));
    }
    refused(&labels, "services.web.labels", "501 labels");

    let mut networks = String::from("services:\n  web:\n    image: x\nnetworks:\n");
    for i in 0..101 {
        networks.push_str(&format!("  n{i}: {{}}\n"));
    }
    refused(&networks, "networks", "101 networks");
}
