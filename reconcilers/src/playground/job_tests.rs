use super::super::plan::tests::{container, desired_from, playground};
use super::super::plan::{Health, Observed, Step, converged, converged_keeping, plan, plan_keeping};
use super::*;

/// A long-running `db`, a one-shot `migrate` (`run` waits for it to
/// complete: the only way a service outside the watched ones may finish),
/// and the job `run`.
const JOB: &str = r#"
services:
  db:
    image: play-test/busybox:1
    command: sleep 3600
  migrate:
    image: play-test/busybox:1
    command: "true"
  run:
    image: play-test/busybox:1
    command: sh -c 'echo hello; exit 3'
    depends_on:
      db:
        condition: service_started
      migrate:
        condition: service_completed_successfully
"#;

fn job(compose: &str, watched_services: &[&str]) -> (Playground, Desired) {
    let mut p = playground(&[], &[]);
    p.job_mode = true;
    p.watched_services = watched_services.iter().map(|s| (*s).to_owned()).collect();
    let d = desired_from(compose, &p);
    (p, d)
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| (*s).to_owned()).collect()
}

fn watched_in(compose: &str, watched_services: &[&str]) -> Result<BTreeSet<String>, String> {
    let (p, d) = job(compose, watched_services);
    watched(&p, &d)
}

/// [`JOB`] with `svc/job_watch: <value>` on `service`.
fn labelled(service: &str, value: &str) -> String {
    JOB.replace(
        &format!("  {service}:\n    image: play-test/busybox:1\n"),
        &format!("  {service}:\n    image: play-test/busybox:1\n    labels:\n      svc/job_watch: {value}\n"),
    )
}

#[test]
fn watched_services_come_from_the_list_then_labels_then_dynamic_then_all() {
    // 4. Every service when nothing says otherwise.
    assert_eq!(watched_in(JOB, &[]).unwrap(), set(&["db", "migrate", "run"]));
    // ... except those labelled false.
    assert_eq!(watched_in(&labelled("db", "false"), &[]).unwrap(), set(&["migrate", "run"]));
    // 2. Labelled true: only those (a YAML boolean or a string).
    assert_eq!(watched_in(&labelled("run", "true"), &[]).unwrap(), set(&["run"]));
    assert_eq!(watched_in(&labelled("run", "\"true\""), &[]).unwrap(), set(&["run"]));
    // 1. The Playground's list wins over labels.
    assert_eq!(watched_in(&labelled("run", "true"), &["migrate"]).unwrap(), set(&["migrate"]));
    // 3. Dynamic services before every service.
    let dynamic = format!("{JOB}  api:\n    build: ./api\n");
    assert_eq!(watched_in(&dynamic, &[]).unwrap(), set(&["api"]));
    let excluded = format!("{JOB}  api:\n    build: ./api\n    labels:\n      svc/job_watch: false\n");
    assert_eq!(watched_in(&excluded, &[]).unwrap(), set(&["db", "migrate", "run"]));
    // 2 before 3.
    assert_eq!(
        watched_in(&format!("{}  api:\n    build: ./api\n", labelled("run", "true")), &[]).unwrap(),
        set(&["run"])
    );
}

#[test]
fn a_job_that_can_never_complete_is_an_invalid_spec() {
    let profiled = format!("{JOB}  later:\n    image: play-test/busybox:1\n    profiles: [debug]\n");
    let e = watched_in(&profiled, &["run", "later"]).unwrap_err();
    assert!(e.contains("`later` never runs"), "{e}");
    let none = "services:\n  a:\n    image: x\n    labels:\n      svc/job_watch: false\n";
    let e = watched_in(none, &[]).unwrap_err();
    assert!(e.contains("watches nothing"), "{e}");
}

fn observed(d: &Desired, states: &[(&str, State)]) -> Observed {
    Observed {
        networks: d.networks.iter().map(|n| n.name.clone()).collect(),
        images: ["play-test/busybox:1".to_owned()].into(),
        containers: states.iter().map(|(s, state)| container(d, s, *state, None)).collect(),
        ..Observed::default()
    }
}

#[test]
fn a_job_finishes_when_every_watched_service_has_exited() {
    let (_, d) = job(JOB, &[]);
    let watched = set(&["migrate", "run"]);
    let running = observed(&d, &[("db", State::Running), ("migrate", State::Exited(0)), ("run", State::Running)]);
    assert_eq!(finished(&d, &running, &watched), None);
    let mut done = running.clone();
    done.containers[2].state = State::Exited(3);
    let exits = finished(&d, &done, &watched).unwrap();
    assert_eq!(exits, BTreeMap::from([("migrate".to_owned(), 0), ("run".to_owned(), 3)]));
    assert_eq!(exit_code(&d, &exits), 3);
    // A watched service without a container (not started yet, or waiting)
    // has not exited.
    let waiting = observed(&d, &[("db", State::Running), ("migrate", State::Exited(0))]);
    assert_eq!(finished(&d, &waiting, &watched), None);
    // Created or restarting is not exited either.
    let mut restarting = done.clone();
    restarting.containers[2].state = State::Other;
    assert_eq!(finished(&d, &restarting, &watched), None);
    // An exited container of an outdated config is not this job's.
    let mut outdated = done;
    outdated.containers[2].config_hash = Some("old".into());
    assert_eq!(finished(&d, &outdated, &watched), None);
    assert_eq!(finished(&d, &running, &BTreeSet::new()), None, "nothing watched never finishes");
}

#[test]
fn the_exit_code_is_the_first_failure_in_service_order_else_zero() {
    let (_, d) = job(JOB, &[]);
    let exits = |pairs: &[(&str, i64)]| pairs.iter().map(|(s, c)| ((*s).to_owned(), *c)).collect();
    assert_eq!(exit_code(&d, &exits(&[("migrate", 0), ("run", 0)])), 0);
    // Service order is dependency order: db, migrate, run.
    assert_eq!(exit_code(&d, &exits(&[("run", 3), ("db", 137), ("migrate", 0)])), 137);
    assert_eq!(exit_code(&d, &exits(&[("run", 3), ("migrate", 2)])), 2);
}

#[test]
fn completed_at_is_the_latest_watched_exit() {
    let (_, d) = job(JOB, &[]);
    let mut o = observed(&d, &[("db", State::Running), ("migrate", State::Exited(0)), ("run", State::Exited(3))]);
    assert_eq!(completed_at(&d, &o, &set(&["migrate", "run"])), None);
    let early = time::now() - chrono::Duration::minutes(5);
    let late = early + chrono::Duration::seconds(90);
    o.containers[1].finished_at = Some(late);
    o.containers[2].finished_at = Some(early);
    assert_eq!(completed_at(&d, &o, &set(&["migrate", "run"])), Some(late));
    assert_eq!(completed_at(&d, &o, &set(&["run"])), Some(early));
}

#[test]
fn an_exited_watched_service_is_never_started_again() {
    let (_, d) = job(JOB, &[]);
    let watched = set(&["run"]);
    let o = observed(&d, &[("db", State::Running), ("migrate", State::Exited(0)), ("run", State::Exited(3))]);
    // Outside job mode the failed container is started again ...
    assert_eq!(plan(&d, &o), vec![Step::StartContainer { service: "run".into(), id: "id-run".into() }]);
    assert!(!converged(&d, &o));
    // ... in job mode it stays as it is, and the rest counts as converged.
    assert_eq!(plan_keeping(&d, &o, &watched), vec![]);
    assert!(converged_keeping(&d, &o, &watched));
    // A service that is not watched is still repaired.
    let mut crashed = o.clone();
    crashed.containers[0].state = State::Exited(137);
    assert_eq!(
        plan_keeping(&d, &crashed, &watched),
        vec![Step::StartContainer { service: "db".into(), id: "id-db".into() }]
    );
    assert!(!converged_keeping(&d, &crashed, &watched));
    // Not yet started (created): started as usual.
    let mut created = o;
    created.containers[2].state = State::Created;
    created.containers[2].health = Some(Health::Starting);
    assert_eq!(
        plan_keeping(&d, &created, &watched),
        vec![Step::StartContainer { service: "run".into(), id: "id-run".into() }]
    );
}

#[test]
fn tail_logs_hold_the_last_lines_of_the_watched_services() {
    let (_, d) = job(JOB, &[]);
    let lines = |prefix: &str, n: usize| (1..=n).map(|i| format!("{prefix} {i}")).collect::<Vec<_>>();
    let logs = BTreeMap::from([
        ("db".to_owned(), lines("db", 3)),
        ("migrate".to_owned(), lines("m", 2)),
        ("run".to_owned(), lines("r", 150)),
    ]);
    let one = tail_logs(&d, &set(&["run"]), &logs);
    let one: Vec<&str> = one.lines().collect();
    assert_eq!((one.len(), one[0], one[99]), (TAIL_LOG_LINES, "r 51", "r 150"));
    let two = tail_logs(&d, &set(&["run", "migrate"]), &logs);
    let two: Vec<&str> = two.lines().collect();
    assert_eq!(&two[..3], ["migrate | m 1", "migrate | m 2", "run | r 51"]);
    assert_eq!(two.len(), 102);
    assert_eq!(tail_logs(&d, &set(&["run"]), &BTreeMap::new()), "");
}
