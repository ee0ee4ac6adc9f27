//! Pulls from a local registry with credentials, through the SSH tunnel.

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use crate::support::registry::Registry;
use crate::support::sshd::Sshd;
use play_core::metrics::Metrics;
use play_reconcilers::Error;
use play_reconcilers::host::{DockerHostGateway, HostConfig, RegistryCredentials, pull_image};

fn image_present(reference: &str) -> bool {
    Command::new("docker").args(["image", "inspect", reference]).output().map(|o| o.status.success()).unwrap_or(false)
}

#[tokio::test]
async fn pulls_with_credentials_through_the_tunnel_and_refuses_wrong_ones() {
    let mut registry = Registry::start();
    let reference = registry.push_test_image(&crate::support::unique_label("pull"));
    assert!(!image_present(&reference), "the push helper must untag {reference}");

    let sshd = Sshd::start();
    let gateway = DockerHostGateway::new(HostConfig::with_timeout(Duration::from_secs(10)), Arc::new(Metrics::new()));
    let docker = gateway.docker(&sshd.target(20)).await.unwrap();
    let bound = Duration::from_secs(60);

    let wrong = RegistryCredentials {
        username: registry.username.clone(),
        password: "not-the-password".into(),
        server: registry.address(),
    };
    let err = pull_image(&docker, &reference, Some(&wrong), bound).await.unwrap_err();
    assert!(matches!(err, Error::RegistryUnauthorized { .. }), "{err:?}");
    assert!(!format!("{err} {err:?}").contains("not-the-password"));

    let err = pull_image(&docker, &reference, None, bound).await.unwrap_err();
    assert!(matches!(err, Error::RegistryUnauthorized { .. }), "{err:?}");
    assert!(!image_present(&reference));

    let right = RegistryCredentials {
        username: registry.username.clone(),
        password: registry.password.clone(),
        server: registry.address(),
    };
    pull_image(&docker, &reference, Some(&right), bound).await.unwrap();
    assert!(image_present(&reference), "{reference} was not pulled");
}
