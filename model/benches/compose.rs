//! The Compose and template engine, stage by stage, on a realistic
//! 10-service template: YAML parse (the bounded loader), template
//! validation of a new body, compile of a new body (parse, substitute,
//! write, validate the result), validate + compile of a new body (what
//! creating a version and launching it once cost together), compile of a
//! known version (a launch: the version's analysis is kept), Compose
//! validation of the compiled file, and the desired-state render a
//! reconciler pass makes from a Playspec (model + desired objects).
//!
//! Run: `cargo bench -p play-model --bench compose`
//! (quick: `cargo bench -p play-model --bench compose -- --quick`).

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use play_model::compose::svc::validate_template;
use play_model::compose::{Policy, compile, parse_yaml, validate_compose};
use play_model::desired::{Inputs, desired, model_for};
use rand::SeedableRng;
use rand::rngs::StdRng;

/// The allocator `play` itself runs with (src/main.rs), so that the figures
/// are the binary's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const TEMPLATE: &str = r#"
x-app: &app
  restart: unless-stopped
  networks: [backend]
  deploy:
    resources:
      limits: {cpus: "0.5", memory: 512M}
  healthcheck: &health
    interval: 10s
    timeout: 3s
    retries: 5
    start_period: 20s

svc:
  version: 1
  metadata:
    description: A shop with storefront, API, workers, search and monitoring
    category: e-commerce
    job_mode: false
  variables:
    REPO: {required: true, validation: "/^https://[^ ]+$/"}
    BRANCH: {default: main}
    DB_PASSWORD: {random: true, validation: "/^[a-f0-9]{16}$/"}
    SESSION: {random: true}
    SUBDOMAIN: {default: shop, validation: "/^[a-z0-9-]+$/"}
    API_PORT: {default: 8000}
    LOG_LEVEL: {default: info, validation: "/^(debug|info|warn|error)$/"}

services:
  storefront:
    <<: *app
    build: {context: ./storefront, target: runner, args: {NODE_VERSION: "20"}}
    environment:
      API_URL: http://api:$$var__API_PORT
      SESSION_SECRET: $$random__SESSION
    labels:
      svc/repo_url: $$var__REPO
      svc/branch: $$var__BRANCH
      svc/expose: "3000"
      svc/subdomain: $$var__SUBDOMAIN
      svc/zerodowntime: true
      svc/healthcheck_path: /health
    depends_on:
      api: {condition: service_healthy}
    networks: [backend, frontend]
  api:
    <<: *app
    build: {context: ./api, dockerfile: Dockerfile, target: production}
    environment:
      DATABASE_URL: postgres://shop:$$var__DB_PASSWORD@db:5432/shop
      REDIS_URL: redis://cache:6379/0
      SEARCH_URL: http://search:9200
      LOG_LEVEL: $$var__LOG_LEVEL
      PORT: $$var__API_PORT
    labels:
      - svc/expose=internal:8000
      - svc/path_rule=PathPrefix(`/api`) && !PathPrefix(`/api/admin`)
      - svc/build_args=NODE_ENV=production,API_VERSION=2
    healthcheck:
      <<: *health
      test: ["CMD", "wget", "-qO-", "http://localhost:8000/health"]
    depends_on:
      db: {condition: service_healthy}
      cache: {condition: service_started}
      migrate: {condition: service_completed_successfully}
  migrate:
    build: {context: ./api, target: production}
    command: ["npm", "run", "migrate"]
    environment:
      DATABASE_URL: postgres://shop:$$var__DB_PASSWORD@db:5432/shop
    depends_on:
      db: {condition: service_healthy}
    networks: [backend]
  worker:
    <<: *app
    build: {context: ./api, target: worker}
    command: npm run worker -- --concurrency 4
    environment:
      - DATABASE_URL=postgres://shop:$$var__DB_PASSWORD@db:5432/shop
      - REDIS_URL=redis://cache:6379/0
      - LOG_LEVEL=$$var__LOG_LEVEL
    depends_on: [cache, db]
  scheduler:
    <<: *app
    build: {context: ./api, target: worker}
    command: npm run scheduler
    depends_on: [worker]
  db:
    image: postgres:16-alpine
    environment:
      POSTGRES_USER: shop
      POSTGRES_PASSWORD: $$var__DB_PASSWORD
      POSTGRES_DB: shop
    volumes: [pg:/var/lib/postgresql/data]
    healthcheck:
      test: ["CMD-SHELL", "pg_isready -U shop"]
      interval: 5s
      retries: 10
    networks: [backend]
  cache:
    image: redis:7-alpine
    command: redis-server --appendonly yes
    volumes: [redis:/data]
    networks: [backend]
  search:
    image: docker.elastic.co/elasticsearch/elasticsearch:8.14.3
    environment:
      - discovery.type=single-node
      - ES_JAVA_OPTS=-Xms512m -Xmx512m
    volumes: [es:/usr/share/elasticsearch/data]
    networks: [backend]
  mail:
    image: axllent/mailpit:v1.19
    ports: ["8025:8025"]
    networks: [backend]
  metrics:
    image: prom/prometheus:v2.53.0
    configs:
      - source: prometheus
        target: /etc/prometheus/prometheus.yml
    ports: ["127.0.0.1:9090:9090"]
    networks: [backend]

networks:
  backend:
  frontend:
volumes:
  pg:
  redis:
  es:
configs:
  prometheus:
    content: |
      global: {scrape_interval: 15s}
"#;

fn provided() -> BTreeMap<String, serde_json::Value> {
    BTreeMap::from([("REPO".to_owned(), serde_json::json!("https://github.com/example/shop.git"))])
}

/// The compiled template with its `build:` sections swapped for images, as a
/// Playspec holds it when its services are prebuilt (builds need pins, which
/// the render of a Playspec without Playzones does not have).
fn prebuilt(compiled: &str) -> String {
    compiled
        .lines()
        .filter(|line| !line.trim_start().starts_with("target:") && !line.trim_start().starts_with("dockerfile:"))
        .map(|line| {
            let trimmed = line.trim_start();
            if trimmed.starts_with("build:") {
                format!("{}image: example/app:1", &line[..line.len() - trimmed.len()])
            } else {
                line.to_owned()
            }
        })
        .filter(|line| {
            let t = line.trim_start();
            !(t.starts_with("context:") || t.starts_with("args:") || t.starts_with("NODE_VERSION:"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn bench(c: &mut Criterion) {
    let vars = provided();
    let mut rng = StdRng::seed_from_u64(1);
    let compiled = compile(TEMPLATE, &vars, &mut rng, &Policy::UNTRUSTED);
    assert!(compiled.is_ok(), "{compiled:?}");
    let compiled_yaml = compiled.map(|c| c.compose_yaml).unwrap_or_default();
    let playspec = prebuilt(&compiled_yaml);
    let playground = play_model::testing::playground();
    let model = model_for(&playspec, &Policy::UNTRUSTED, &playground);
    assert!(model.is_ok(), "{model:?}\n{playspec}");
    let rendered = model.as_ref().map(|m| desired(&Inputs::new(&playground, m)));
    assert!(matches!(rendered, Ok(Ok(_))), "{rendered:?}");

    let mut group = c.benchmark_group("compose");
    group.throughput(Throughput::Bytes(TEMPLATE.len() as u64));
    group.bench_function("parse", |b| b.iter(|| parse_yaml(black_box(TEMPLATE))));
    // A new version's body is new text: each iteration takes the next of
    // more bodies than the analysis cache keeps, so every one is analysed
    // (and cached) afresh, as creating a version does. A launch compiles a
    // body the process has seen: the version's analysis is reused.
    let fresh: Vec<String> = (0..4096).map(|n| format!("{TEMPLATE}# version {n}\n")).collect();
    let mut next = fresh.iter().cycle();
    let mut new_body = move || next.next().map_or(TEMPLATE, String::as_str);
    group.bench_function("validate_template(new body)", |b| b.iter(|| validate_template(black_box(new_body()))));
    group.bench_function("compile(new body)", |b| {
        b.iter(|| compile(black_box(new_body()), &vars, &mut rng, &Policy::UNTRUSTED))
    });
    group.bench_function("validate_template+compile(new body)", |b| {
        b.iter(|| {
            let body = new_body();
            let info = validate_template(black_box(body));
            let compiled = compile(black_box(body), &vars, &mut rng, &Policy::UNTRUSTED);
            (info.is_ok(), compiled.is_ok())
        })
    });
    group.bench_function("compile(launch of a known version)", |b| {
        b.iter(|| compile(black_box(TEMPLATE), &vars, &mut rng, &Policy::UNTRUSTED))
    });
    group.throughput(Throughput::Bytes(compiled_yaml.len() as u64));
    group.bench_function("validate_compose(compiled)", |b| {
        b.iter(|| validate_compose(black_box(&compiled_yaml), &Policy::UNTRUSTED))
    });
    group.throughput(Throughput::Bytes(playspec.len() as u64));
    group.bench_function("render(model+desired)", |b| {
        b.iter(|| {
            let model = model_for(black_box(&playspec), &Policy::UNTRUSTED, &playground);
            model.map(|m| desired(&Inputs::new(&playground, &m)).map(|d| d.services.len()))
        })
    });
    if let Ok(model) = &model {
        group.bench_function("render(desired only)", |b| {
            b.iter(|| desired(&Inputs::new(&playground, black_box(model))).map(|d| d.services.len()))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
