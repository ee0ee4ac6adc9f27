use super::super::tests::playground;
use super::super::{Desired, Inputs, desired, model_for};
use super::*;
use crate::compose::{Policy, classify, parse_rendered};

const COMPOSE: &str = r#"
services:
  db:
    image: play-test/busybox:1
    command: sleep 3600
    environment:
      PASSWORD: "pa$$word"
    healthcheck:
      test: ["CMD", "true"]
      interval: 1500ms
      retries: 3
    volumes:
      - data:/data
      - shared:/shared:ro
      - type: tmpfs
        target: /tmp/scratch
    deploy:
      resources:
        limits:
          cpus: "0.5"
          memory: 64m
          pids: 100
  web:
    image: play-test/busybox:1
    entrypoint: ["/bin/sh", "-c"]
    command: ["httpd -f -p 80"]
    depends_on:
      db:
        condition: service_healthy
    ports: ["127.0.0.1:8080:80", "5353:53/udp", "9000", "[::1]::9001"]
    networks:
      back:
        aliases: [www]
      outside: {}
    restart: unless-stopped
    user: "1000"
    stop_grace_period: 20s
    stop_signal: SIGINT
    init: true
    labels:
      app.tier: front
      svc/subdomain: shop
      svc/path_rule: "PathPrefix(`/api`)"
networks:
  back: {}
  outside:
    external: true
    name: corp-net
volumes:
  data: {}
  shared:
    external: true
"#;

fn rendered() -> (Desired, String) {
    let p = playground(&[]);
    // `external` objects need a trusted Playroom.
    let model = model_for(COMPOSE, &Policy::TRUSTED, &p).unwrap();
    let definitions = classify(&model);
    let domains = vec!["apps.example.com".to_owned()];
    let edge = crate::desired::EdgeInputs {
        settings: crate::edge::EdgeSettings::default(),
        domains: &domains,
        acme_email: None,
        local: false,
        host: "203.0.113.9",
    };
    let d = desired(&Inputs::new(&p, &model).with_edge(edge).with_definitions(&definitions)).unwrap();
    let text = render_compose(&d);
    (d, text)
}

#[test]
fn the_document_parses_back_as_valid_compose_with_every_label() {
    let (d, text) = rendered();
    let (report, model) = parse_rendered(&text);
    assert!(report.valid, "{:?}\n{text}", report.errors);
    assert!(report.warnings.is_empty(), "{:?}\n{text}", report.warnings);
    let model = model.unwrap();
    assert_eq!(model.name.as_deref(), Some("play-3fa91c-7-pr-7"));
    let web = &model.services["web"];
    let spec = d.services.iter().find(|s| s.name == "web").unwrap();
    // Every label play puts on the container but Compose's own.
    for (key, value) in spec.labels(&d) {
        if key.starts_with("com.docker.compose.") {
            assert!(!web.labels.contains_key(&key), "{key}");
        } else {
            assert_eq!(web.labels.get(&key), Some(&value), "{key}\n{text}");
        }
    }
    assert!(!web.labels.keys().any(|k| k.starts_with("traefik.")), "routes live in the edge's config");
    assert_eq!(web.labels["dev.play.playground"], "7");
    assert_eq!(web.container_name.as_deref(), Some("play-3fa91c-7-pr-7-web-1"));
    // Networks under their real names; external ones and the edge network
    // as external.
    let net = |key: &str| &model.networks[key];
    assert_eq!(net("back").name.as_deref(), Some("play-3fa91c-7-pr-7_back"));
    assert!(!net("back").external);
    assert_eq!((net("outside").name.as_deref(), net("outside").external), (Some("corp-net"), true));
    assert_eq!((net("play-edge").name.as_deref(), net("play-edge").external), (Some("play-3fa91c-room1-edge"), true));
    assert_eq!(web.networks["back"].aliases, ["web", "www"]);
    assert!(web.networks["play-edge"].aliases.is_empty());
    assert_eq!(model.volumes["data"].name.as_deref(), Some("play-3fa91c-7-pr-7_data"));
    assert_eq!((model.volumes["shared"].name.as_deref(), model.volumes["shared"].external), (Some("shared"), true));
    assert_eq!(net("default").name.as_deref(), Some("play-3fa91c-7-pr-7_default"), "db uses the default network");
}

#[test]
fn the_document_describes_the_same_containers() {
    let (d, text) = rendered();
    let p = playground(&[]);
    let (report, model) = parse_rendered(&text);
    assert!(report.valid, "{:?}", report.errors);
    let again = desired(&Inputs::new(&p, &model.unwrap())).unwrap();
    for (a, b) in d.services.iter().zip(&again.services) {
        let (a, b) = (&a.container, &b.container);
        assert_eq!(a.image, b.image);
        assert_eq!(a.command, b.command);
        assert_eq!(a.entrypoint, b.entrypoint);
        assert_eq!(a.env, b.env, "values with `$` come back unchanged");
        assert_eq!(a.ports, b.ports);
        assert_eq!(a.mounts, b.mounts);
        assert_eq!(a.healthcheck, b.healthcheck);
        assert_eq!(a.restart, b.restart);
        assert_eq!((a.nano_cpus, a.memory, a.pids_limit), (b.nano_cpus, b.memory, b.pids_limit));
        assert_eq!((&a.user, a.stop_timeout), (&b.user, b.stop_timeout));
        assert_eq!((&a.stop_signal, a.init), (&b.stop_signal, b.init));
        assert_eq!(a.networks.keys().collect::<Vec<_>>(), b.networks.keys().collect::<Vec<_>>());
    }
    let deps: Vec<_> = again.services.iter().map(|s| s.depends_on.clone()).collect();
    assert_eq!(deps, d.services.iter().map(|s| s.depends_on.clone()).collect::<Vec<_>>());
    assert_eq!(d.services[0].container.env["PASSWORD"], "pa$word");
}

#[test]
fn built_services_and_durations() {
    let p = playground(&[]);
    let model = model_for("services:\n  api:\n    build: ./api\n", &Policy::UNTRUSTED, &p).unwrap();
    let text = render_compose(&desired(&Inputs::new(&p, &model)).unwrap());
    let (report, model) = parse_rendered(&text);
    assert!(report.valid, "{:?}\n{text}", report.errors);
    let api = &model.unwrap().services["api"];
    assert_eq!(api.build.as_ref().map(|b| b.context.as_str()), Some("./api"));
    assert_eq!(api.image, None);
    assert_eq!(duration(1_500_000_000), Value::String("1500ms".into()));
    assert_eq!(duration(2_000_000_000), Value::String("2s".into()));
    assert_eq!(duration(7), Value::String("7ns".into()));
}

#[test]
fn ports_use_the_short_syntax() {
    let (_, text) = rendered();
    for port in ["127.0.0.1:8080:80/tcp", "5353:53/udp", "9000/tcp", "'[::1]::9001/tcp'"] {
        assert!(text.contains(&format!("- {port}\n")), "{port}\n{text}");
    }
}
