//! `/compose`, `/env_metadata` and `/debug` over the real router and store:
//! what the views show is computed like the reconciler computes it (the
//! desired objects themselves are unit-tested in `play_model::desired`).

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use axum::http::{Method, StatusCode};
use play_api::testing::TestApp;
use play_model::compose::parse_rendered;
use play_model::scopes::ScopeSet;
use serde_json::{Value, json};

const COMPOSE: &str = r#"
services:
  web:
    image: play-test/busybox:1
    environment:
      MODE: base
      SHARED: from-web
    labels:
      svc/expose: "8080"
      svc/subdomain: shop
      svc/path_rule: "PathPrefix(`/api`) || Path(`/x`)"
      traefik.http.routers.evil.rule: "Host(`bank.example.com`)"
    depends_on: [db]
  admin:
    image: play-test/busybox:1
    labels:
      svc/expose: "9000"
  db:
    image: play-test/busybox:1
    environment:
      SHARED: from-db
      PASSWORD: "pa$$word"
"#;

struct Fixture {
    app: TestApp,
    playspec: i64,
    playroom: i64,
}

async fn fixture(playroom: Value) -> Fixture {
    let app = TestApp::new().await;
    let spec = app
        .post("/api/playspecs", &app.admin, json!({"playspec": {"name": "shop", "base_compose_yaml": COMPOSE}}))
        .await;
    assert_eq!(spec.status, StatusCode::CREATED, "{}", spec.text);
    let mut body = json!({"name": "box", "host": "127.0.0.1"});
    body.as_object_mut().unwrap().extend(playroom.as_object().unwrap().clone());
    let room = app.post("/api/playrooms", &app.admin, json!({"playroom": body})).await;
    assert_eq!(room.status, StatusCode::CREATED, "{}", room.text);
    Fixture { playspec: spec.body["id"].as_i64().unwrap(), playroom: room.body["id"].as_i64().unwrap(), app }
}

impl Fixture {
    async fn playground(&self, name: &str, extra: Value) -> (i64, Value) {
        let mut body = json!({"name": name, "playspec_id": self.playspec, "playroom_id": self.playroom});
        body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let r = self.app.post("/api/playgrounds", &self.app.admin, json!({"playground": body})).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        (r.body["id"].as_i64().unwrap(), r.body)
    }

    async fn get(&self, path: &str) -> play_api::testing::Response {
        self.app.get(path, &self.app.admin).await
    }
}

fn keys(v: &Value) -> Vec<String> {
    let mut keys: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    keys
}

fn with_domain() -> Value {
    json!({"domains": ["apps.example.com"], "acme_email": "ops@example.com"})
}

#[tokio::test]
async fn compose_is_the_generated_document_with_the_edge_network_and_no_routing_labels() {
    let f = fixture(with_domain()).await;
    let (id, detail) = f.playground("pr-1", json!({"service_subdomains": {"admin": "@"}})).await;
    let r = f.get(&format!("/api/playgrounds/{id}/compose")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(keys(&r.body), ["compose_project", "compose_yaml"]);
    let project = detail["compose_project"].as_str().unwrap();
    assert_eq!(r.body["compose_project"], project);

    let yaml = r.body["compose_yaml"].as_str().unwrap();
    let (report, model) = parse_rendered(yaml);
    assert!(report.valid, "{:?}\n{yaml}", report.errors);
    let model = model.unwrap();
    assert_eq!(model.name.as_deref(), Some(project));
    let web = &model.services["web"];
    // Routes live in the edge's config (see /debug), not in labels; the
    // user's own routing labels are dropped.
    assert!(!web.labels.keys().any(|k| k.starts_with("traefik.")), "{yaml}");
    assert!(web.networks.keys().any(|k| k.starts_with("play-edge")), "{yaml}");
    let edge = model.networks.values().find(|n| n.external && n.name.as_deref().is_some_and(|n| n.ends_with("-edge")));
    assert!(edge.is_some(), "the edge network is external: {yaml}");
    assert!(model.services["db"].labels.keys().all(|k| !k.starts_with("traefik.")));
    assert_eq!(model.services["db"].environment["PASSWORD"].as_deref(), Some("pa$word"));
}

#[tokio::test]
async fn env_metadata_shows_each_layer() {
    let f = fixture(json!({})).await;
    let (id, _) = f
        .playground(
            "pr-2",
            json!({"env_overrides": {"MODE": "override", "PLAY_PLAYGROUND_ID": "spoof"},
                   "services": {"db": {"env_vars": {"QUEUE": "q1"}}}}),
        )
        .await;
    let r = f.get(&format!("/api/playgrounds/{id}/env_metadata")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(keys(&r.body), ["generated_keys", "merged", "metadata", "system_keys"]);
    let meta = &r.body["metadata"];
    assert_eq!(meta["MODE"], json!({"value": "override", "source": "override"}));
    assert_eq!(meta["SHARED"], json!({"value": "from-web", "source": "default"}), "first service wins");
    assert_eq!(meta["PLAY_PLAYGROUND_ID"], json!({"value": id.to_string(), "source": "system"}));
    assert_eq!(r.body["merged"]["PASSWORD"], "pa$word");
    assert!(r.body["merged"].get("QUEUE").is_none(), "per-service env_vars need ?service=");
    assert_eq!(r.body["system_keys"], json!(["PLAY_PLAYGROUND_ID", "PLAY_PLAYGROUND_NAME", "PLAY_COMPOSE_PROJECT"]));
    assert_eq!(r.body["generated_keys"], json!([]));
    for (name, entry) in meta.as_object().unwrap() {
        assert_eq!(r.body["merged"][name], entry["value"], "{name}");
    }

    let db = f.get(&format!("/api/playgrounds/{id}/env_metadata?service=db")).await;
    assert_eq!(db.status, StatusCode::OK, "{}", db.text);
    assert_eq!(db.body["metadata"]["QUEUE"], json!({"value": "q1", "source": "override"}));
    assert_eq!(db.body["metadata"]["SHARED"]["value"], "from-db");
    assert!(db.body["merged"].get("MODE").is_some_and(|v| v == "override"));

    let events = f.app.count("events").await;
    let unknown = f.get(&format!("/api/playgrounds/{id}/env_metadata?service=nope")).await;
    let details = unknown.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    assert!(details["service"][0].as_str().unwrap().contains("nope"), "{details}");
    assert_eq!(f.app.count("events").await, events, "a refused request writes nothing");
}

#[tokio::test]
async fn debug_names_every_field_and_explains_routing() {
    let f = fixture(json!({})).await;
    let (id, detail) = f.playground("pr-3", json!({})).await;
    let r = f.get(&format!("/api/playgrounds/{id}/debug")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    for field in [
        "id",
        "compose_project",
        "generated_compose_yaml",
        "augmented_compose_template",
        "services_configuration",
        "build_overrides",
        "build_records",
        "branch_clones",
    ] {
        assert!(r.body.get(field).is_some(), "{field} missing: {}", r.text);
    }
    assert_eq!(r.body["id"], id);
    assert_eq!(r.body["compose_project"], detail["compose_project"]);
    assert_eq!(r.body["build_overrides"], json!({}));
    assert_eq!(r.body["build_records"], json!([]));
    assert_eq!(r.body["branch_clones"], json!([]));
    assert_eq!(r.body["error"], Value::Null);
    assert!(r.body["edge_network"].as_str().unwrap().ends_with("-edge"), "routed without a domain");
    let compose = f.get(&format!("/api/playgrounds/{id}/compose")).await;
    assert_eq!(r.body["generated_compose_yaml"], compose.body["compose_yaml"]);
    let augmented = r.body["augmented_compose_template"].as_str().unwrap();
    assert!(augmented.contains("svc/subdomain: shop") && augmented.contains("pa$$word"), "{augmented}");

    let services = r.body["services_configuration"].as_array().unwrap();
    let names: Vec<&str> = services.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["admin", "db", "web"], "in dependency order");
    let service = |name: &str| services.iter().find(|s| s["name"] == name).unwrap();
    let web = service("web");
    assert_eq!(web["type"], "static");
    assert_eq!(web["image"], "play-test/busybox:1");
    assert_eq!(web["container_name"], format!("{}-web-1", detail["compose_project"].as_str().unwrap()));
    assert_eq!(web["config_hash"].as_str().unwrap().len(), 64);
    assert_eq!(web["depends_on"], json!([{"service": "db", "condition": "service_started"}]));
    assert_eq!(web["dropped_labels"], json!(["traefik.http.routers.evil.rule"]));
    assert!(web["env_keys"].as_array().unwrap().contains(&json!("MODE")));
    // No domain on a loopback host: a `.localhost` name, plain HTTP.
    let exposure = &web["exposure"];
    assert_eq!(
        keys(exposure),
        [
            "fqdn",
            "held_back",
            "held_by_playground_id",
            "live",
            "path_rule",
            "port",
            "reason",
            "route_id",
            "routed",
            "rule",
            "scheme",
            "tls",
            "upstream",
            "url"
        ]
    );
    assert_eq!(exposure["routed"], true, "{exposure}");
    assert_eq!(exposure["fqdn"], format!("shop-{id}.localhost"));
    assert_eq!(exposure["url"], format!("http://shop-{id}.localhost/"));
    assert_eq!((exposure["scheme"].as_str(), exposure["tls"].as_bool()), (Some("http"), Some(false)));
    let project = detail["compose_project"].as_str().unwrap();
    assert_eq!(exposure["route_id"], format!("{project}-web"));
    assert_eq!(exposure["upstream"], format!("{project}-web-1:8080"));
    assert_eq!(exposure["path_rule"], "PathPrefix(`/api`) || Path(`/x`)");
    assert_eq!((exposure["live"].as_bool(), exposure["held_by_playground_id"].clone()), (Some(false), Value::Null));
    assert_eq!(exposure["reason"], "the service is not running yet");
    assert_eq!(exposure["held_back"], json!([]));
    assert_eq!(service("db")["exposure"], Value::Null, "not exposed");
}

/// Writes a route as the edge reconciler decides it.
async fn decided(f: &Fixture, playground: i64, service: &str, host: &str, live: bool, conflict_with: Option<i64>) {
    sqlx::query(
        "INSERT INTO edge_routes (playground_id, service, playroom_id, host, claimed_at, live, conflict_with) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(playground)
    .bind(service)
    .bind(f.playroom)
    .bind(host)
    .bind(play_model::time::to_db(&play_model::time::now()))
    .bind(i64::from(live))
    .bind(conflict_with)
    .execute(f.app.store().pool())
    .await
    .unwrap();
}

#[tokio::test]
async fn debug_shows_the_route_and_the_edges_arbitration_of_its_host() {
    let f = fixture(with_domain()).await;
    let (first, _) = f.playground("pr-4", json!({})).await;
    let (second, _) = f.playground("pr-5", json!({"service_subdomains": {"admin": "other"}})).await;
    // The edge gave `shop.apps.example.com` to the first Playground, and
    // serves the second's admin.
    decided(&f, first, "web", "shop.apps.example.com", true, None).await;
    decided(&f, second, "web", "shop.apps.example.com", false, Some(first)).await;
    decided(&f, second, "admin", "other.apps.example.com", true, None).await;

    let r = f.get(&format!("/api/playgrounds/{second}/debug")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert!(r.body["edge_network"].as_str().unwrap().ends_with("-edge"));
    let services = r.body["services_configuration"].as_array().unwrap();
    let exposure = |name: &str| services.iter().find(|s| s["name"] == name).unwrap()["exposure"].clone();
    let web = exposure("web");
    assert_eq!(web["routed"], true);
    assert_eq!(web["fqdn"], "shop.apps.example.com");
    assert_eq!(web["url"], "https://shop.apps.example.com/");
    assert_eq!(web["rule"], "Host(`shop.apps.example.com`) && (PathPrefix(`/api`) || Path(`/x`))");
    assert_eq!((web["port"].as_u64(), web["tls"].as_bool()), (Some(8080), Some(true)));
    assert_eq!(web["scheme"], "https");
    assert_eq!((web["live"].as_bool(), web["held_by_playground_id"].as_i64()), (Some(false), Some(first)));
    assert!(web["reason"].as_str().unwrap().contains(&format!("held by Playground {first}")), "{web}");
    let admin = exposure("admin");
    assert_eq!(admin["fqdn"], "other.apps.example.com");
    assert_eq!((admin["live"].as_bool(), admin["reason"].clone()), (Some(true), Value::Null), "{admin}");
    assert_eq!(admin["held_by_playground_id"], Value::Null);

    // The holder sees whose route it holds back.
    let r = f.get(&format!("/api/playgrounds/{first}/debug")).await;
    let services = r.body["services_configuration"].as_array().unwrap();
    let web = services.iter().find(|s| s["name"] == "web").unwrap()["exposure"].clone();
    assert_eq!((web["live"].as_bool(), web["held_by_playground_id"].clone()), (Some(true), Value::Null));
    assert_eq!(web["held_back"], json!([{"playground_id": second, "service": "web"}]));
}

#[tokio::test]
async fn debug_keeps_the_reason_of_unrouted_services() {
    let f = fixture(json!({"edge": {"enabled": false}})).await;
    let (id, _) = f.playground("pr-8", json!({})).await;
    let r = f.get(&format!("/api/playgrounds/{id}/debug")).await;
    let services = r.body["services_configuration"].as_array().unwrap();
    let web = services.iter().find(|s| s["name"] == "web").unwrap()["exposure"].clone();
    assert_eq!((web["routed"].as_bool(), web["live"].as_bool()), (Some(false), Some(false)));
    assert!(web["reason"].as_str().unwrap().contains("edge is off"), "{web}");
    for field in ["route_id", "url", "scheme", "upstream", "fqdn", "held_by_playground_id"] {
        assert_eq!(web[field], Value::Null, "{field}");
    }
}

#[tokio::test]
async fn a_playground_that_cannot_run_has_no_compose_and_debug_says_why() {
    let f = fixture(json!({"trusted": true})).await;
    let spec = f
        .app
        .post(
            "/api/playspecs",
            &f.app.admin,
            json!({"playspec": {"name": "priv", "base_compose_yaml": "services:\n  app:\n    image: x\n    privileged: true\n"}}),
        )
        .await;
    let r = f
        .app
        .post(
            "/api/playgrounds",
            &f.app.admin,
            json!({"playground": {"name": "p", "playspec_id": spec.body["id"], "playroom_id": f.playroom}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let id = r.body["id"].as_i64().unwrap();
    // The Playroom stops trusting its tenants.
    let patch = f
        .app
        .request(
            Method::PATCH,
            &format!("/api/playrooms/{}", f.playroom),
            Some(&f.app.admin),
            Some(json!({"playroom": {"trusted": false}})),
        )
        .await;
    assert_eq!(patch.status, StatusCode::OK, "{}", patch.text);
    f.get(&format!("/api/playgrounds/{id}/compose"))
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "INVALID_STATE");
    f.get(&format!("/api/playgrounds/{id}/env_metadata"))
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "INVALID_STATE");
    let debug = f.get(&format!("/api/playgrounds/{id}/debug")).await;
    assert_eq!(debug.status, StatusCode::OK, "{}", debug.text);
    assert!(debug.body["error"].as_str().unwrap().contains("privileged"), "{}", debug.text);
    assert_eq!(debug.body["generated_compose_yaml"], Value::Null);
    assert!(debug.body["augmented_compose_template"].as_str().unwrap().contains("privileged: true"));
}

/// The config hash `/debug` shows is the one the reconciler converges to,
/// mounted files included: a changed file must change the hash of the
/// services that mount it (and only theirs).
#[tokio::test]
async fn debug_config_hashes_include_the_mounted_files() {
    let f = fixture(with_domain()).await;
    let upload = f
        .app
        .post_multipart(
            &format!("/api/playspecs/{}/add_mounted_file", f.playspec),
            &[
                ("file", Some("app.env"), b"PORT=80\n"),
                ("mount_path", None, b"/app/.env"),
                ("target_services[]", None, b"web"),
            ],
        )
        .await;
    assert_eq!(upload.status, StatusCode::CREATED, "{}", upload.text);
    let (id, _) = f.playground("pr-7", json!({})).await;
    let debug = f.get(&format!("/api/playgrounds/{id}/debug")).await;
    assert_eq!(debug.status, StatusCode::OK, "{}", debug.text);
    let shown = |name: &str| {
        let services = debug.body["services_configuration"].as_array().unwrap();
        services.iter().find(|s| s["name"] == name).unwrap()["config_hash"].as_str().unwrap().to_owned()
    };

    // What the reconciler converges to: the desired objects with the files.
    let store = f.app.store();
    let account = f.app.account_id;
    let playground = play_store::playgrounds::get(store, account, id).await.unwrap();
    let playspec = play_store::playspecs::get(store, account, f.playspec).await.unwrap();
    let playroom = play_store::playrooms::get(store, account, f.playroom).await.unwrap();
    let files = play_store::playspec_files::list_files(store, f.playspec).await.unwrap();
    assert_eq!(files.len(), 1);
    let policy = play_model::compose::Policy::of_room(playroom.trusted);
    let model = play_model::desired::model_for(&playspec.base_compose_yaml, &policy, &playground).unwrap();
    let definitions = playspec.definitions().unwrap();
    let inputs = play_model::desired::Inputs::new(&playground, &model)
        .with_persist_volumes(playspec.persist_volumes)
        .with_files(&files)
        .with_edge(play_model::desired::EdgeInputs {
            settings: playroom.edge,
            domains: &playroom.domains,
            acme_email: playroom.acme_email.as_deref(),
            local: false,
            host: &playroom.host,
        })
        .with_definitions(&definitions);
    let converged = play_model::desired::desired(&inputs).unwrap();
    let hash = |name: &str| converged.services.iter().find(|s| s.name == name).unwrap().config_hash.clone();
    assert_eq!(shown("web"), hash("web"), "the mounted file is part of web's container");
    assert_eq!(shown("db"), hash("db"));
    // ... which is what the one builder the reconciler calls answers.
    let computed =
        play_model::playground::desired_for(&playground, Some(&playspec), &files, &playroom, &Default::default())
            .unwrap();
    assert_eq!(computed.desired, converged);
    let without_files = play_model::desired::desired(&inputs.with_files(&[])).unwrap();
    let bare = without_files.services.iter().find(|s| s.name == "web").unwrap();
    assert_ne!(bare.config_hash, hash("web"), "the file changes the hash of the service that mounts it");
}

#[tokio::test]
async fn other_accounts_and_bad_ids_get_404() {
    let f = fixture(with_domain()).await;
    let (id, _) = f.playground("pr-6", json!({})).await;
    let other = f.app.new_account("other").await;
    let token = f.app.key_for(other, ScopeSet::all(), None).await;
    for view in ["compose", "env_metadata", "debug"] {
        f.app
            .get(&format!("/api/playgrounds/{id}/{view}"), &token)
            .await
            .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
        f.get(&format!("/api/playgrounds/abc/{view}")).await.assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
        f.get(&format!("/api/playgrounds/999999/{view}"))
            .await
            .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    }
}

#[tokio::test]
async fn the_openapi_document_describes_the_views() {
    let app = TestApp::new().await;
    let doc = app.request(Method::GET, "/api/openapi.json", None, None).await;
    for view in ["compose", "env_metadata", "debug"] {
        let op = &doc.body["paths"][format!("/api/playgrounds/{{id}}/{view}")]["get"];
        assert_eq!(op["security"][0]["bearer"][0], "playgrounds:read", "{view}");
    }
    let schemas = &doc.body["components"]["schemas"];
    for schema in ["ComposeView", "EnvMetadataView", "DebugView", "ServiceConfiguration", "ExposureView"] {
        assert!(schemas[schema].is_object(), "{schema} missing from the OpenAPI document");
    }
    let debug = &schemas["DebugView"]["properties"];
    for field in ["generated_compose_yaml", "augmented_compose_template", "services_configuration", "build_records"] {
        assert!(debug[field].is_object(), "{field}");
    }
}

#[tokio::test]
async fn a_playgrounds_events_come_newest_first_and_are_bounded() {
    let app = TestApp::new().await;
    let spec = app
        .post("/api/playspecs", &app.admin, json!({"playspec": {"name": "ev", "base_compose_yaml": "services:\n  web:\n    image: play-test/busybox:1\n"}}))
        .await;
    let room = app.post("/api/playrooms", &app.admin, json!({"playroom": {"name": "ev", "host": "127.0.0.1"}})).await;
    let pg = app
        .post(
            "/api/playgrounds",
            &app.admin,
            json!({"playground": {"name": "ev", "playspec_id": spec.body["id"], "playroom_id": room.body["id"]}}),
        )
        .await;
    let id = pg.body["id"].as_i64().unwrap();
    app.post(&format!("/api/playgrounds/{id}/extend_expiration"), &app.admin, json!({})).await;
    let r = app.get(&format!("/api/playgrounds/{id}/events"), &app.admin).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let types: Vec<&str> = r.body.as_array().unwrap().iter().map(|e| e["event_type"].as_str().unwrap()).collect();
    assert_eq!(types.last(), Some(&"playground.created"), "{types:?}");
    assert!(types.len() >= 2, "{types:?}");
    let one = app.get(&format!("/api/playgrounds/{id}/events?limit=1"), &app.admin).await;
    assert_eq!(one.body.as_array().unwrap().len(), 1);
    app.get(&format!("/api/playgrounds/{id}/events?limit=0"), &app.admin)
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED");
    app.get("/api/playgrounds/999999/events", &app.admin)
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
    let other = app.new_account("other").await;
    let theirs = app.key_for(other, play_model::scopes::ScopeSet::all(), None).await;
    app.get(&format!("/api/playgrounds/{id}/events"), &theirs)
        .await
        .assert_error(StatusCode::NOT_FOUND, "RESOURCE_NOT_FOUND");
}
