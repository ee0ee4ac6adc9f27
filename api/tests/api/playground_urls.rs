//! `urls` and `routes` of Playgrounds over the real router and store: the
//! detail view and launch compute them from the desired state, the list
//! from the edge's stored decisions. The edge's decisions are simulated by
//! writing `edge_routes` and `playroom_edges` rows as the edge reconciler
//! would.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use play_api::testing::{NoHosts, Response, TestApp};
use play_core::wake::{ChannelWaker, Kind};
use play_model::playground::{ServiceState, ServiceStatus};
use play_model::time;
use serde_json::{Value, json};

const COMPOSE: &str = r#"
services:
  web:
    image: play-test/busybox:1
    labels:
      svc/expose: "8080"
      svc/subdomain: shop
  admin:
    image: play-test/busybox:1
    labels:
      svc/expose: "9000"
  db:
    image: play-test/busybox:1
"#;

struct Fixture {
    app: TestApp,
    playspec: i64,
    playroom: i64,
}

async fn fixture_with(app: TestApp, playroom: Value) -> Fixture {
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

async fn fixture(playroom: Value) -> Fixture {
    fixture_with(TestApp::new().await, playroom).await
}

fn with_domain() -> Value {
    json!({"domains": ["apps.example.com"], "acme_email": "ops@example.com"})
}

impl Fixture {
    async fn playground(&self, name: &str, extra: Value) -> Response {
        let mut body = json!({"name": name, "playspec_id": self.playspec, "playroom_id": self.playroom});
        body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let r = self.app.post("/api/playgrounds", &self.app.admin, json!({"playground": body})).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        r
    }

    async fn get(&self, path: &str) -> Response {
        self.app.get(path, &self.app.admin).await
    }

    /// Records services as the Playground reconciler observed them.
    async fn running(&self, playground: i64, services: &[&str]) {
        let status: Vec<ServiceStatus> = services
            .iter()
            .map(|name| ServiceStatus {
                name: (*name).to_owned(),
                status: ServiceState::Running,
                health: None,
                running: true,
                container: None,
            })
            .collect();
        sqlx::query("UPDATE playgrounds SET services_status = $1 WHERE id = $2")
            .bind(serde_json::to_string(&status).unwrap())
            .bind(playground)
            .execute(self.app.store().pool())
            .await
            .unwrap();
    }

    /// Writes a route as the edge reconciler decides it.
    async fn decided(&self, playground: i64, service: &str, host: &str, live: bool, conflict_with: Option<i64>) {
        sqlx::query(
            "INSERT INTO edge_routes (playground_id, service, playroom_id, host, claimed_at, live, conflict_with) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(playground)
        .bind(service)
        .bind(self.playroom)
        .bind(host)
        .bind(time::to_db(&time::now()))
        .bind(i64::from(live))
        .bind(conflict_with)
        .execute(self.app.store().pool())
        .await
        .unwrap();
    }

    async fn edge_error(&self, error: &str) {
        sqlx::query("INSERT INTO playroom_edges (playroom_id, error, error_at, updated_at) VALUES ($1, $2, $3, $3)")
            .bind(self.playroom)
            .bind(error)
            .bind(time::to_db(&time::now()))
            .execute(self.app.store().pool())
            .await
            .unwrap();
    }
}

fn route<'a>(detail: &'a Value, service: &str) -> &'a Value {
    detail["routes"].as_array().unwrap().iter().find(|r| r["service"] == service).unwrap()
}

#[tokio::test]
async fn the_detail_lists_every_routed_service_before_the_edge_serves_it() {
    let f = fixture(with_domain()).await;
    let created = f.playground("pr-1", json!({})).await;
    let urls = json!({"admin": "https://admin.apps.example.com/", "web": "https://shop.apps.example.com/"});
    assert_eq!(created.body["urls"], urls, "{}", created.text);
    let id = created.body["id"].as_i64().unwrap();
    let detail = f.get(&format!("/api/playgrounds/{id}")).await;
    assert_eq!(detail.body["urls"], urls);
    assert_eq!(
        route(&detail.body, "web"),
        &json!({"service": "web", "url": "https://shop.apps.example.com/", "host": "shop.apps.example.com",
                "live": false, "held_by_playground_id": null, "reason": "the service is not running yet"})
    );
    let services: Vec<&str> =
        detail.body["routes"].as_array().unwrap().iter().map(|r| r["service"].as_str().unwrap()).collect();
    assert_eq!(services, ["admin", "web"], "db is not exposed");
}

#[tokio::test]
async fn the_detail_joins_the_edges_decisions() {
    let f = fixture(with_domain()).await;
    let first = f.playground("pr-1", json!({})).await.body["id"].as_i64().unwrap();
    let second =
        f.playground("pr-2", json!({"service_subdomains": {"web": "other"}})).await.body["id"].as_i64().unwrap();
    f.running(second, &["web", "admin", "db"]).await;
    // The edge serves second's web; first holds `admin.apps.example.com`.
    f.decided(second, "web", "other.apps.example.com", true, None).await;
    f.decided(first, "admin", "admin.apps.example.com", true, None).await;
    f.decided(second, "admin", "admin.apps.example.com", false, Some(first)).await;

    let detail = f.get(&format!("/api/playgrounds/{second}")).await;
    assert_eq!(detail.status, StatusCode::OK, "{}", detail.text);
    let web = route(&detail.body, "web");
    assert_eq!((web["live"].as_bool(), web["reason"].clone()), (Some(true), Value::Null), "{web}");
    assert_eq!(web["url"], "https://other.apps.example.com/");
    let admin = route(&detail.body, "admin");
    assert_eq!((admin["live"].as_bool(), admin["held_by_playground_id"].as_i64()), (Some(false), Some(first)));
    assert!(admin["reason"].as_str().unwrap().contains(&format!("held by Playground {first}")), "{admin}");
    // The URL is the one the service would have: held back, not gone.
    assert_eq!(detail.body["urls"]["admin"], "https://admin.apps.example.com/");

    // A running service the edge has not picked up: the edge's error says why.
    f.running(first, &["web"]).await;
    f.edge_error("listen tcp :443: address already in use").await;
    let detail = f.get(&format!("/api/playgrounds/{first}")).await;
    let web = route(&detail.body, "web");
    assert_eq!(web["live"], false);
    assert!(web["reason"].as_str().unwrap().contains("address already in use"), "{web}");
    let admin = route(&detail.body, "admin");
    assert_eq!((admin["live"].as_bool(), admin["held_by_playground_id"].clone()), (Some(true), Value::Null));
}

#[tokio::test]
async fn the_list_shows_only_what_the_edge_serves() {
    let f = fixture(json!({"edge": {"http_port": 8080}})).await;
    let served = f.playground("pr-1", json!({})).await.body["id"].as_i64().unwrap();
    let waiting = f.playground("pr-2", json!({})).await.body["id"].as_i64().unwrap();
    f.decided(served, "web", &format!("shop-{served}.localhost"), true, None).await;
    f.decided(served, "admin", &format!("admin-{served}.localhost"), false, None).await;
    f.decided(waiting, "web", &format!("shop-{served}.localhost"), false, Some(served)).await;

    let list = f.get("/api/playgrounds").await;
    assert_eq!(list.status, StatusCode::OK, "{}", list.text);
    let item = |id: i64| list.body.as_array().unwrap().iter().find(|p| p["id"] == id).unwrap().clone();
    // No domain: plain HTTP on the edge's HTTP port.
    assert_eq!(item(served)["urls"], json!({"web": format!("http://shop-{served}.localhost:8080/")}));
    assert_eq!(item(waiting)["urls"], json!({}));

    // A Playground being destroyed lists no URL, though the edge has not
    // dropped its route yet; its detail has none either.
    let destroyed = f.app.delete(&format!("/api/playgrounds/{served}"), &f.app.admin).await;
    assert_eq!(destroyed.status, StatusCode::ACCEPTED, "{}", destroyed.text);
    assert_eq!((destroyed.body["urls"].clone(), destroyed.body["routes"].clone()), (json!({}), json!([])));
    let list = f.get("/api/playgrounds").await;
    let item = list.body.as_array().unwrap().iter().find(|p| p["id"] == served).unwrap();
    assert_eq!(item["urls"], json!({}));
}

#[tokio::test]
async fn list_urls_use_https_under_the_playrooms_domains() {
    let f = fixture(json!({"domains": ["apps.example.com"], "edge": {"tls": "internal", "https_port": 8443}})).await;
    let id = f.playground("pr-1", json!({})).await.body["id"].as_i64().unwrap();
    f.decided(id, "web", "shop.apps.example.com", true, None).await;
    let list = f.get("/api/playgrounds").await;
    assert_eq!(list.body[0]["urls"], json!({"web": "https://shop.apps.example.com:8443/"}));
    let detail = f.get(&format!("/api/playgrounds/{id}")).await;
    assert_eq!(detail.body["urls"]["web"], list.body[0]["urls"]["web"], "the list and the detail agree");
}

#[tokio::test]
async fn a_playground_that_cannot_run_has_no_urls() {
    let f = fixture(json!({"trusted": true, "domains": ["apps.example.com"]})).await;
    let compose = "services:\n  app:\n    image: x\n    privileged: true\n    labels:\n      svc/expose: \"80\"\n";
    let spec = f
        .app
        .post("/api/playspecs", &f.app.admin, json!({"playspec": {"name": "p", "base_compose_yaml": compose}}))
        .await;
    let r = f
        .app
        .post(
            "/api/playgrounds",
            &f.app.admin,
            json!({"playground": {"name": "p", "playspec_id": spec.body["id"], "playroom_id": f.playroom}}),
        )
        .await;
    assert_eq!(r.body["urls"], json!({"app": "http://app.apps.example.com/"}), "{}", r.text);
    let id = r.body["id"].as_i64().unwrap();
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
    let detail = f.get(&format!("/api/playgrounds/{id}")).await;
    assert_eq!(detail.status, StatusCode::OK, "{}", detail.text);
    assert_eq!((detail.body["urls"].clone(), detail.body["routes"].clone()), (json!({}), json!([])));
}

#[tokio::test]
async fn launch_answers_the_urls_of_the_new_playground() {
    let f = fixture(with_domain()).await;
    let r = f
        .app
        .post(
            "/api/launch",
            &f.app.admin,
            json!({"name": "l", "compose_yaml": COMPOSE, "create_playground": true, "playroom_id": f.playroom}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(
        r.body["urls"],
        json!({"admin": "https://admin.apps.example.com/", "web": "https://shop.apps.example.com/"})
    );
    let r = f.app.post("/api/launch", &f.app.admin, json!({"name": "m", "compose_yaml": COMPOSE})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(r.body["urls"], json!({}), "no Playground, no URLs");

    let template = f
        .app
        .post("/api/import_templates", &f.app.admin, json!({"import_template": {"name": "t", "category_id": 1}}))
        .await;
    let tid = template.body["id"].as_i64().unwrap();
    let version = f
        .app
        .post(&format!("/api/import_templates/{tid}/create_version"), &f.app.admin, json!({"template_body": COMPOSE}))
        .await;
    assert_eq!(version.status, StatusCode::CREATED, "{}", version.text);
    let r = f
        .app
        .post(&format!("/api/import_templates/{tid}/launch"), &f.app.admin, json!({"playroom_id": f.playroom}))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(r.body["urls"]["web"], "https://shop.apps.example.com/");
}

#[tokio::test]
async fn changes_of_desired_state_wake_the_playrooms_edge() {
    let waker = ChannelWaker::new();
    let mut wakes = waker.subscribe(Kind::Edge);
    let app = TestApp::with_waker(TestApp::default_config(), Arc::new(NoHosts), Arc::new(waker)).await;
    let f = fixture_with(app, json!({})).await;
    assert_eq!(wakes.try_recv(), Some(f.playroom), "the Playroom's create");
    let id = f.playground("pr-1", json!({})).await.body["id"].as_i64().unwrap();
    assert_eq!(wakes.try_recv(), Some(f.playroom), "create");
    for op in ["rollout", "hard_restart", "recreate"] {
        let r = f.app.request(Method::POST, &format!("/api/playgrounds/{id}/{op}"), Some(&f.app.admin), None).await;
        assert_eq!(r.status, StatusCode::OK, "{op}: {}", r.text);
        assert_eq!(wakes.try_recv(), Some(f.playroom), "{op}");
    }
    f.app.post(&format!("/api/playgrounds/{id}/extend_expiration"), &f.app.admin, json!({})).await;
    assert_eq!(wakes.try_recv(), None, "the expiry is not the edge's");
    f.app.delete(&format!("/api/playgrounds/{id}"), &f.app.admin).await;
    assert_eq!(wakes.try_recv(), Some(f.playroom), "destroy drops the routes promptly");
    f.app
        .post(
            "/api/launch",
            &f.app.admin,
            json!({"name": "l", "compose_yaml": COMPOSE, "create_playground": true, "playroom_id": f.playroom}),
        )
        .await;
    assert_eq!(wakes.try_recv(), Some(f.playroom), "launch");
}

/// The detail's routes are cached per replica (`route_cache`): a change of
/// the Playroom's domains or of the Playground's subdomains is seen at
/// once, never a stale URL.
#[tokio::test]
async fn cached_routes_follow_domain_and_subdomain_changes() {
    let f = fixture(with_domain()).await;
    let id = f.playground("pr-9", json!({})).await.body["id"].as_i64().unwrap();
    let path = format!("/api/playgrounds/{id}");
    assert_eq!(f.get(&path).await.body["urls"]["web"], "https://shop.apps.example.com/");
    assert_eq!(f.get(&path).await.body["urls"]["web"], "https://shop.apps.example.com/", "served from the cache");
    let r = f
        .app
        .request(
            Method::PATCH,
            &format!("/api/playrooms/{}", f.playroom),
            Some(&f.app.admin),
            Some(json!({"playroom": {"domains": ["preview.example.org"]}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(f.get(&path).await.body["urls"]["web"], "https://shop.preview.example.org/");
    let r = f
        .app
        .post(
            &format!("/api/playgrounds/{id}/rollout"),
            &f.app.admin,
            json!({"playground": {"service_subdomains": {"web": "store"}}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(f.get(&path).await.body["urls"]["web"], "https://store.preview.example.org/");
}
