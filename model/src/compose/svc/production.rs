//! Production mode of a service (issue #52, item 1): the `svc/production`
//! label, or a Playground's `services.{name}.production`, which wins over
//! the label when given.
//!
//! A service in production mode runs as it would ship rather than as it is
//! developed (`docs/compose.md`, "Production mode"):
//! - **build target:** a built service's image is built from the
//!   Dockerfile's production stage, the first of [`PRODUCTION_STAGES`] the
//!   Dockerfile declares (`FROM ... AS production`), in place of
//!   `svc/build_target` or `build.target`; a Dockerfile without such a
//!   stage builds as the service says. The stage can only be known from
//!   the Dockerfile at the pinned commit, so the builder picks it
//!   ([`production_target`]); the image's content key carries the mode, so
//!   the production image is another image;
//! - **environment:** [`PRODUCTION_ENV`] over the Compose `environment:`
//!   and the repository's env file (a development Compose often says
//!   `NODE_ENV: development`); the Playground's `env_overrides` and
//!   `env_vars` still win, and play's system keys over all;
//! - **no source mount:** `svc/source_mount` is not mounted, nor a bind of
//!   the service's own build context (`build: ./app` beside
//!   `./app:/code`): the code is the image's. Other relative binds (a
//!   configuration file) stay.
//!
//! Pure: the label is read from the interpolated Compose model.

use crate::compose::model::Service;

/// The label that turns production mode on for a service.
pub const PRODUCTION_LABEL: &str = "svc/production";

/// The stage names a production build targets, in order of preference
/// (matched as Docker matches stage names: ignoring ASCII case).
pub const PRODUCTION_STAGES: [&str; 2] = ["production", "prod"];

/// The environment a service gets in production mode: the variables the
/// common frameworks read to choose their production behaviour.
pub const PRODUCTION_ENV: [(&str, &str); 6] = [
    ("NODE_ENV", "production"),
    ("RAILS_ENV", "production"),
    ("RACK_ENV", "production"),
    ("APP_ENV", "production"),
    ("MIX_ENV", "prod"),
    ("ASPNETCORE_ENVIRONMENT", "Production"),
];

/// Whether `service` runs in production mode: the Playground's `setting`
/// for it when given, else its [`PRODUCTION_LABEL`] (`true`; empty or
/// `false` is off, as validation allows nothing else).
pub fn is_production(setting: Option<bool>, service: &Service) -> bool {
    setting.unwrap_or_else(|| service.labels.get(PRODUCTION_LABEL).is_some_and(|v| v.trim() == "true"))
}

/// The target a production build uses: the first of
/// [`PRODUCTION_STAGES`] among the Dockerfile's `stages`, as written
/// there; `None` when it declares none of them.
pub fn production_target(stages: &[String]) -> Option<String> {
    PRODUCTION_STAGES.iter().find_map(|wanted| stages.iter().find(|s| s.eq_ignore_ascii_case(wanted)).cloned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(label: Option<&str>) -> Service {
        let mut s = Service::default();
        if let Some(value) = label {
            s.labels.insert(PRODUCTION_LABEL.to_owned(), value.to_owned());
        }
        s
    }

    #[test]
    fn the_playground_setting_wins_over_the_label() {
        assert!(!is_production(None, &service(None)));
        assert!(!is_production(None, &service(Some(""))));
        assert!(!is_production(None, &service(Some("false"))));
        assert!(is_production(None, &service(Some("true"))));
        assert!(!is_production(Some(false), &service(Some("true"))), "a Playground turns it off");
        assert!(is_production(Some(true), &service(None)), "or on");
    }

    #[test]
    fn the_production_stage_is_found_as_docker_matches_names() {
        let stages = |names: &[&str]| names.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(production_target(&stages(&["deps", "dev", "Production"])), Some("Production".into()));
        assert_eq!(
            production_target(&stages(&["prod", "production"])),
            Some("production".into()),
            "the first preferred"
        );
        assert_eq!(production_target(&stages(&["PROD"])), Some("PROD".into()));
        assert_eq!(production_target(&stages(&["dev", "productionish"])), None);
        assert_eq!(production_target(&[]), None);
    }
}
