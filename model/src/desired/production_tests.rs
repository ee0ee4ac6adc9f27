//! Production mode in the desired state (issue #52, item 1;
//! `compose::svc::production`): the production environment, no source
//! mount and no bind of the build context, and a rollout when the mode
//! changes.

use super::*;
use crate::compose::svc::production::PRODUCTION_ENV;
use crate::playground::model::ServiceSettings;

const DEV: &str = "services:
  app:
    build: ./app
    environment:
      NODE_ENV: development
      GREETING: hi
    volumes:
      - ./app:/code
      - ./conf/app.ini:/etc/app.ini
    labels:
      svc/source_mount: /src
";

fn app_of(compose: &str, setting: Option<bool>, env: &[(&str, &str)]) -> ServiceSpec {
    let mut p = super::tests::playground(env);
    if let Some(on) = setting {
        p.service_settings.insert("app".into(), ServiceSettings { production: Some(on), ..Default::default() });
    }
    let d = crate::testing::pinned_desired(&p, compose, vec![crate::testing::pin("app", 'a')]).unwrap();
    d.services.into_iter().find(|s| s.name == "app").unwrap()
}

#[test]
fn development_mode_keeps_the_compose_environment_and_the_source() {
    let app = app_of(DEV, None, &[]);
    assert_eq!(app.container.env["NODE_ENV"], "development");
    assert!(!app.built.as_ref().unwrap().production);
    assert!(app.sources.iter().any(|s| s.mount_path == "/src"), "the source mount");
    assert!(app.container.source_binds.iter().any(|b| b.target == "/code"), "the context bind");
    assert!(app.container.source_binds.iter().any(|b| b.target == "/etc/app.ini"));
}

#[test]
fn production_mode_sets_the_production_environment_and_drops_the_source_mounts() {
    for app in
        [app_of(DEV, Some(true), &[]), app_of(&DEV.replace("/src\n", "/src\n      svc/production: true\n"), None, &[])]
    {
        for (key, value) in PRODUCTION_ENV {
            assert_eq!(app.container.env[key], value, "{key}");
        }
        assert_eq!(app.container.env["GREETING"], "hi", "the rest of the Compose environment stays");
        assert!(app.built.as_ref().unwrap().production, "the build targets the production stage");
        assert!(app.sources.iter().all(|s| s.mount_path != "/src"), "no source mount: {:?}", app.sources);
        assert!(app.container.mounts.iter().all(|m| m.target != "/src" && m.target != "/code"));
        let binds: Vec<&str> = app.container.source_binds.iter().map(|b| b.target.as_str()).collect();
        assert_eq!(binds, ["/etc/app.ini"], "a configuration file is still bound; the code is the image's");
    }
}

#[test]
fn the_playgrounds_overrides_and_setting_win_and_a_change_rolls_the_service_out() {
    let overridden = app_of(DEV, Some(true), &[("NODE_ENV", "staging")]);
    assert_eq!(overridden.container.env["NODE_ENV"], "staging", "env_overrides win over the production defaults");
    let labelled = DEV.replace("/src\n", "/src\n      svc/production: true\n");
    let off = app_of(&labelled, Some(false), &[]);
    assert_eq!(off.container.env["NODE_ENV"], "development", "the Playground's setting wins over the label");
    let (dev, prod) = (app_of(DEV, None, &[]), app_of(DEV, Some(true), &[]));
    assert_ne!(dev.config_hash, prod.config_hash, "turning it on rolls the service out");
    assert_ne!(dev.container.image, prod.container.image, "onto another image");
}

#[test]
fn one_services_environment_shows_where_the_production_values_come_from() {
    let mut p = super::tests::playground(&[]);
    p.service_settings.insert("app".into(), ServiceSettings { production: Some(true), ..Default::default() });
    let model = model_for(DEV, &crate::compose::Policy::UNTRUSTED, &p).unwrap();
    let inputs = Inputs::new(&p, &model);
    let env = env_metadata(&inputs, Some("app")).unwrap();
    assert_eq!(env.metadata["NODE_ENV"], EnvEntry { value: "production".into(), source: EnvSource::Production });
    assert_eq!(env.metadata["GREETING"].source, EnvSource::Default);
    let whole = env_metadata(&inputs, None).unwrap();
    assert_eq!(whole.metadata["NODE_ENV"].source, EnvSource::Default, "per service only, as env_vars");
}
