//! Playspec service definitions from a Compose model (spec: Playspec,
//! "Service definition").
//!
//! - `type` is `dynamic` when the service has `build` or a `svc/repo_url`
//!   or `svc/branch` label (play builds it from a Playzone), `static`
//!   otherwise (a ready image).
//! - `dockerfile_path`: `svc/dockerfile`, else `build.dockerfile`, else
//!   `Dockerfile` (dynamic only).
//! - `env_file_path`: `svc/env_file`, else the first `env_file` entry
//!   (dynamic only).
//! - `workdir`: the build context, the directory of the Playzone's checkout
//!   the image is built from (dynamic only). `working_dir` is the
//!   container's own working directory and stays in the Compose file.
//! - `image`: the image for static services (and the tag to build, when a
//!   dynamic service names one).
//! - `exposure`: enabled when `svc/expose` is set or the service publishes a
//!   port; `port` from `svc/expose`, else the container port of the first
//!   published port; `visibility` from the `internal:`/`external:` prefix,
//!   `external` by default; `subdomain` from `svc/subdomain`, else the
//!   service name made DNS-safe.

use serde::{Deserialize, Serialize};

use super::model::{ComposeFile, Service};
use super::svc::parse_expose;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServiceType {
    Dynamic,
    Static,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exposure {
    pub enabled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subdomain: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visibility: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceDefinition {
    pub name: String,
    #[serde(rename = "type")]
    pub service_type: ServiceType,
    /// Filled by the API when it links a Playzone.
    pub playzone_id: Option<i64>,
    pub dockerfile_path: Option<String>,
    pub env_file_path: Option<String>,
    pub workdir: Option<String>,
    pub image: Option<String>,
    pub exposure: Exposure,
    /// The repository a dynamic service names (`svc/repo_url`): Launch and
    /// Playspec creation link (or create) its Playzone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo_url: Option<String>,
}

fn label<'a>(service: &'a Service, key: &str) -> Option<&'a str> {
    service.labels.get(key).map(String::as_str).filter(|v| !v.is_empty())
}

/// A DNS label from a service name: lowercase, `_` and `.` as `-`, other
/// characters dropped, trimmed of `-`, at most 63 characters.
pub fn dns_label(name: &str) -> String {
    let mapped: String = name
        .chars()
        .filter_map(|c| match c {
            'a'..='z' | '0'..='9' | '-' => Some(c),
            'A'..='Z' => Some(c.to_ascii_lowercase()),
            '_' | '.' => Some('-'),
            _ => None,
        })
        .collect();
    let trimmed = mapped.trim_matches('-');
    trimmed.chars().take(63).collect::<String>().trim_end_matches('-').to_owned()
}

fn exposure(name: &str, service: &Service) -> Exposure {
    let from_label = label(service, "svc/expose").and_then(parse_expose);
    let from_ports = service.ports.first().map(|p| (p.target.start, "external"));
    let Some((port, visibility)) = from_label.or(from_ports) else {
        return Exposure { enabled: false, port: None, subdomain: None, visibility: None };
    };
    let subdomain = label(service, "svc/subdomain").map_or_else(|| dns_label(name), str::to_owned);
    Exposure { enabled: true, port: Some(port), subdomain: Some(subdomain), visibility: Some(visibility.to_owned()) }
}

/// Whether play builds the service from a Playzone
/// ([`Service::is_built_from_source`]).
pub fn is_dynamic(service: &Service) -> bool {
    service.is_built_from_source()
}

/// One definition per service, in document order.
pub fn classify(file: &ComposeFile) -> Vec<ServiceDefinition> {
    file.services
        .iter()
        .map(|(name, service)| {
            let dynamic = is_dynamic(service);
            let build = service.build.as_ref();
            ServiceDefinition {
                name: name.clone(),
                service_type: if dynamic { ServiceType::Dynamic } else { ServiceType::Static },
                playzone_id: None,
                dockerfile_path: dynamic.then(|| {
                    label(service, "svc/dockerfile")
                        .map(str::to_owned)
                        .or_else(|| build.and_then(|b| b.dockerfile.clone()))
                        .unwrap_or_else(|| "Dockerfile".to_owned())
                }),
                env_file_path: if dynamic {
                    label(service, "svc/env_file")
                        .map(str::to_owned)
                        .or_else(|| service.env_file.first().map(|e| e.path.clone()))
                } else {
                    None
                },
                workdir: if dynamic { Some(build.map_or_else(|| ".".to_owned(), |b| b.context.clone())) } else { None },
                image: service.image.clone(),
                exposure: exposure(name, service),
                repo_url: if dynamic { label(service, "svc/repo_url").map(str::to_owned) } else { None },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compose::{Policy, parse_compose};

    fn classify_yaml(yaml: &str) -> Vec<ServiceDefinition> {
        let (report, model) = parse_compose(yaml, &Policy::UNTRUSTED);
        assert!(report.valid, "{:?}", report.errors);
        classify(&model.unwrap_or_default())
    }

    #[test]
    fn dynamic_and_static_services() {
        let defs = classify_yaml(
            "services:\n  api:\n    build:\n      context: ./api\n      dockerfile: Dockerfile.dev\n    env_file: .env\n    labels:\n      svc/expose: internal:8000\n  web:\n    build: .\n    labels:\n      svc/dockerfile: docker/web.Dockerfile\n      svc/env_file: web.env\n      svc/subdomain: \"@\"\n      svc/expose: \"3000\"\n  db:\n    image: postgres:16\n  proxy:\n    image: nginx\n    ports: [\"8080:80\", \"8443:443\"]\n",
        );
        let json = serde_json::to_value(&defs).unwrap_or_default();
        assert_eq!(
            json[0],
            serde_json::json!({"name": "api", "type": "dynamic", "playzone_id": null, "dockerfile_path": "Dockerfile.dev",
                "env_file_path": ".env", "workdir": "./api", "image": null,
                "exposure": {"enabled": true, "port": 8000, "subdomain": "api", "visibility": "internal"}})
        );
        assert_eq!(defs[1].dockerfile_path.as_deref(), Some("docker/web.Dockerfile"));
        assert_eq!(defs[1].env_file_path.as_deref(), Some("web.env"));
        assert_eq!(defs[1].workdir.as_deref(), Some("."));
        assert_eq!(defs[1].exposure.subdomain.as_deref(), Some("@"));
        assert_eq!(defs[1].exposure.port, Some(3000));
        assert_eq!(
            json[2],
            serde_json::json!({"name": "db", "type": "static", "playzone_id": null, "dockerfile_path": null,
                "env_file_path": null, "workdir": null, "image": "postgres:16", "exposure": {"enabled": false}})
        );
        assert_eq!(defs[3].exposure.port, Some(80));
        assert_eq!(defs[3].exposure.visibility.as_deref(), Some("external"));
        assert_eq!(defs[3].exposure.subdomain.as_deref(), Some("proxy"));
    }

    #[test]
    fn dns_labels_from_service_names() {
        assert_eq!(dns_label("Web_App.v2"), "web-app-v2");
        assert_eq!(dns_label("_x_"), "x");
        assert_eq!(dns_label(&"a".repeat(80)).len(), 63);
    }
}
