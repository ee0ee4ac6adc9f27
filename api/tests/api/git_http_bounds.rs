//! The bounds of play's own Git host (issue #49, item 6), each attack sent
//! the way a client would: the stock `git` client (apt-get install git)
//! against the router on a loopback port, or a crafted request where `git`
//! would not send it (a gzip bomb, a request held open). Each refusal is
//! checked as `git` prints it.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use base64::Engine as _;
use http_body_util::BodyExt as _;
use play_api::testing::TestApp;
use play_git::GitHostLimits;
use play_git::builtin::BuiltinHost;
use play_git::hosted::HostedRepositories;
use play_model::scm::FullName;
use serde_json::{Value, json};
use tower::ServiceExt as _;

struct Served {
    app: TestApp,
    dir: tempfile::TempDir,
    /// The repository `default/app`'s clone URL with the admin key.
    url: String,
}

/// The router on a loopback port with play's own host held to `limits`,
/// the host switched on account by account when `selected`, and a
/// repository `default/app` (`private`) with its README commit.
async fn served_with(limits: GitHostLimits, selected: bool, private: bool) -> Served {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let host = BuiltinHost::new(HostedRepositories::new(dir.path().join("repos")), &base).with_limits(limits);
    let mut app = TestApp::new().await.with_source_host(Arc::new(host));
    if selected {
        app.state.shared_mut().hosts.builtin_selected = true;
        app.router = play_api::router(app.state.clone());
        play_store::accounts::set_git_host(app.store(), "default", true).await.unwrap();
    }
    let made = app.post("/api/repos", &app.admin, json!({"name": "app", "auto_init": true, "private": private})).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
    let router = app.router.clone();
    tokio::spawn(async move { axum::serve(listener, router).await });
    let url = format!("{base}/git/default/app.git").replacen("http://", &format!("http://play:{}@", app.admin), 1);
    Served { app, dir, url }
}

async fn served(limits: GitHostLimits) -> Served {
    served_with(limits, false, true).await
}

impl Served {
    /// A clone of `default/app` in `name`.
    fn clone(&self, name: &str) -> std::path::PathBuf {
        let work = self.dir.path().join(name);
        ok(&git(self.dir.path(), &["clone", "--quiet", &self.url, work.to_str().unwrap()]));
        work
    }

    fn on_disk(&self) -> HostedRepositories {
        HostedRepositories::new(self.dir.path().join("repos"))
    }

    async fn pushes(&self) -> Vec<Value> {
        let events = play_store::events::list_for_account(self.app.store(), self.app.account_id).await.unwrap();
        events.into_iter().filter(|e| e.event_type == "repo.push").filter_map(|e| e.metadata).collect()
    }

    /// `POST` of `body` to the repository's `service`, as `git` would
    /// send it, answered in full.
    async fn post(&self, service: &str, body: Vec<u8>, gzip: bool) -> (StatusCode, Vec<u8>) {
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("play:{}", self.app.admin));
        let mut request = Request::post(format!("/git/default/app.git/{service}"))
            .header(header::AUTHORIZATION, format!("Basic {basic}"))
            .header(header::CONTENT_TYPE, format!("application/x-{service}-request"));
        if gzip {
            request = request.header(header::CONTENT_ENCODING, "gzip");
        }
        let response = self.app.router.clone().oneshot(request.body(Body::from(body)).unwrap()).await.unwrap();
        let status = response.status();
        (status, response.into_body().collect().await.unwrap().to_bytes().to_vec())
    }
}

/// `git` in `dir`, never asking for a password on a terminal.
fn git(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "credential.helper="])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .expect("git is installed")
}

/// `git` with `input` on its standard input.
fn git_with_input(dir: &Path, args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new("git")
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("git is installed");
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// Makes `count` branches `b0000`, `b0001`, ... at `HEAD` in the clone
/// `work`, written into its packed refs at once (`git update-ref` makes one
/// file per ref, seconds on a busy machine); `HEAD`'s commit.
fn branches(work: &Path, count: usize) -> String {
    let head = ok(&git(work, &["rev-parse", "HEAD"]));
    ok(&git(work, &["pack-refs", "--all"]));
    let packed = work.join(".git/packed-refs");
    let existing = std::fs::read_to_string(&packed).unwrap();
    let mut lines: Vec<String> = existing.lines().filter(|l| !l.starts_with('#')).map(str::to_owned).collect();
    lines.extend((0..count).map(|i| format!("{head} refs/heads/b{i:04}")));
    lines.sort_by(|a, b| a.split(' ').nth(1).cmp(&b.split(' ').nth(1)));
    let text = format!("# pack-refs with: peeled fully-peeled sorted \n{}\n", lines.join("\n"));
    std::fs::write(packed, text).unwrap();
    assert_eq!(ok(&git(work, &["branch", "--list", "b*"])).lines().count(), count);
    head
}

fn ok(out: &Output) -> String {
    assert!(out.status.success(), "git failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A `git` run that must have failed; its standard error.
fn refused(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "git succeeded: {stderr}");
    stderr
}

/// Bytes no compressor shrinks (a xorshift stream), so a pack holds them
/// at their size.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn commit_file(work: &Path, name: &str, content: &[u8]) {
    std::fs::write(work.join(name), content).unwrap();
    ok(&git(work, &["add", name]));
    ok(&git(work, &["commit", "--quiet", "-m", name]));
}

fn pkt(text: &str) -> Vec<u8> {
    [format!("{:04x}", text.len() + 4).into_bytes(), text.as_bytes().to_vec()].concat()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
/// Thousands, not the 100,000: the stock client's own work grows
/// faster than linearly with the refs of one push (5,000 took it 20 s on a
/// busy machine), and 2,000 already made 2,000 transactions and events.
async fn two_thousand_branches_in_one_push_are_one_transaction_and_one_repo_push_event() {
    let s = served(GitHostLimits { max_refs_per_push: 2_000, ..Default::default() }).await;
    let work = s.clone("work");
    let head = branches(&work, 2_000);
    let before = s.pushes().await.len();

    // To the URL, not the remote: no remote-tracking ref to write per branch.
    ok(&git(&work, &["push", "--quiet", &s.url, "refs/heads/b*:refs/heads/b*"]));

    // Recorded by the time `git push` returns: the answer waits for it.
    let pushes = s.pushes().await;
    assert_eq!(pushes.len(), before + 1, "one repo.push event for the whole push");
    let event = pushes.iter().find(|m| m["moves"].as_array().is_some_and(|m| m.len() == 2_000)).unwrap();
    let moves = event["moves"].as_array().unwrap();
    assert_eq!((&event["branch"], &event["before"], &event["after"]), (&json!("b0000"), &Value::Null, &json!(head)));
    assert_eq!(moves[0], json!({"branch": "b0000", "before": null, "after": head}));
    assert_eq!(moves[1_999]["branch"], "b1999");
    assert_eq!(event["repository"], "default/app");
    assert_eq!(s.app.count("repository_pushes").await, 1 + 2_000, "the README commit, then one row per branch");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_of_more_refs_than_the_bound_is_refused_with_git_s_own_error_line() {
    let s = served(GitHostLimits::default()).await;
    let work = s.clone("work");
    branches(&work, 2_000);
    let before = s.pushes().await.len();

    let stderr = refused(&git(&work, &["push", &s.url, "refs/heads/b*:refs/heads/b*"]));
    assert!(stderr.contains("[remote rejected] b0000 -> b0000 (a push may update at most 1000 refs)"), "{stderr}");
    let remote = ok(&git(&work, &["ls-remote", "--heads", "origin"]));
    assert_eq!(remote.lines().count(), 1, "only main: {remote}");
    assert_eq!(s.pushes().await.len(), before, "nothing recorded");

    // Within the bound the same client pushes.
    ok(&git(&work, &["push", "--quiet", "origin", "refs/heads/b0000", "refs/heads/b0001"]));
    assert_eq!(ok(&git(&work, &["ls-remote", "--heads", "origin"])).lines().count(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gzip_body_is_bounded_inflated_and_a_pack_over_the_bound_gets_git_s_own_error() {
    let s = served(GitHostLimits { max_request_bytes: 1 << 20, ..Default::default() }).await;

    // A pack of 4 MiB (stored, not deflated) sent gzipped: a few
    // kilobytes on the wire.
    let loose = s.dir.path().join("loose");
    ok(&git(s.dir.path(), &["init", "--quiet", loose.to_str().unwrap()]));
    commit_file(&loose, "zeros", &vec![0u8; 4 << 20]);
    let commit = ok(&git(&loose, &["rev-parse", "HEAD"]));
    let pack = git_with_input(
        &loose,
        &["-c", "pack.compression=0", "pack-objects", "--stdout", "--revs"],
        format!("{commit}\n").as_bytes(),
    );
    assert!(pack.stdout.len() > 4 << 20, "a stored pack: {} bytes", pack.stdout.len());
    let zero = "0".repeat(40);
    let mut body = pkt(&format!("{zero} {commit} refs/heads/bomb\0report-status\n"));
    body.extend(b"0000");
    body.extend(&pack.stdout);
    let mut gzip = gzip_c(&body);
    assert!(gzip.len() < 64 << 10, "{} bytes on the wire", gzip.len());
    let (status, answer) = s.post("git-receive-pack", std::mem::take(&mut gzip), true).await;
    let answer = String::from_utf8_lossy(&answer);
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert!(answer.contains("ng refs/heads/bomb"), "the push is rejected: {answer}");
    assert_eq!(s.on_disk().head(&FullName::parse("repo", "default/app").unwrap(), "bomb").unwrap(), None);

    // The stock client, a pack over the bound: receive-pack's own words.
    let work = s.clone("work");
    commit_file(&work, "noise", &noise(2 << 20, 7));
    let stderr = refused(&git(&work, &["push", "origin", "main"]));
    assert!(stderr.contains("pack exceeds maximum allowed size"), "{stderr}");
    assert!(stderr.contains("[remote rejected] main -> main"), "{stderr}");
}

/// `gzip -c` of `bytes` (the Debian package `gzip`, as on every machine
/// that has `git`).
fn gzip_c(bytes: &[u8]) -> Vec<u8> {
    let mut child =
        Command::new("gzip").arg("-c").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("gzip is installed");
    let mut stdin = child.stdin.take().unwrap();
    let input = bytes.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    out.stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_of_more_objects_than_the_bound_is_refused_with_git_s_own_error_line() {
    let s = served(GitHostLimits { max_objects_per_push: 10, ..Default::default() }).await;
    let work = s.clone("work");
    for i in 0..20 {
        std::fs::write(work.join(format!("f{i}")), format!("file {i}\n")).unwrap();
    }
    ok(&git(&work, &["add", "."]));
    ok(&git(&work, &["commit", "--quiet", "-m", "twenty files"]));
    let stderr = refused(&git(&work, &["push", "origin", "main"]));
    assert!(stderr.contains("a push may send at most 10 objects, this one has 22"), "{stderr}");
    assert!(stderr.contains("[remote rejected] main -> main"), "{stderr}");
    let remote = ok(&git(&work, &["ls-remote", "origin", "main"]));
    assert!(!remote.starts_with(&ok(&git(&work, &["rev-parse", "HEAD"]))), "main did not move");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_over_the_account_s_room_on_disk_is_refused_by_git_and_by_the_api() {
    let s = served(GitHostLimits { max_account_bytes: 256 << 10, ..Default::default() }).await;
    let work = s.clone("work");
    // More than the room left: receive-pack stops the pack.
    commit_file(&work, "noise", &noise(300 << 10, 3));
    let stderr = refused(&git(&work, &["push", "origin", "main"]));
    assert!(stderr.contains("pack exceeds maximum allowed size"), "{stderr}");
    ok(&git(&work, &["reset", "--quiet", "--hard", "HEAD~1"]));

    // An account at its bound (another repository's objects): no push at
    // all, by git or the API; reading still works.
    std::fs::write(s.dir.path().join("repos/default/app.git/objects/pack/other"), noise(256 << 10, 5)).unwrap();
    commit_file(&work, "small", b"small\n");
    let stderr = refused(&git(&work, &["push", "origin", "main"]));
    assert!(stderr.contains("remote error: the account's repositories use"), "{stderr}");
    let api = json!({"repo": "default/app", "message": "m", "files": [{"path": "a", "content": "a"}]});
    let answer = s.app.post("/api/repos/push", &s.app.admin, api).await;
    assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", answer.text);
    assert_eq!(answer.body["error"]["code"], "QUOTA_EXCEEDED", "{}", answer.text);
    ok(&git(&work, &["fetch", "--quiet", "origin"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_processes_are_bounded_per_replica_anonymous_fetches_included() {
    let limits = GitHostLimits { max_processes: 1, queue_wait: Duration::ZERO, ..Default::default() };
    let s = served_with(limits, false, false).await;
    // An anonymous fetch of the public repository whose client has not
    // finished sending: its upload-pack holds the one process.
    let (sender, receiver) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(1);
    let held = Request::post("/git/default/app.git/git-upload-pack")
        .header(header::CONTENT_TYPE, "application/x-git-upload-pack-request")
        .body(Body::from_stream(tokio_stream_of(receiver)))
        .unwrap();
    let held = s.app.router.clone().oneshot(held).await.unwrap();
    assert_eq!(held.status(), StatusCode::OK);

    let advertisement =
        || Request::get("/git/default/app.git/info/refs?service=git-upload-pack").body(Body::empty()).unwrap();
    let busy = s.app.router.clone().oneshot(advertisement()).await.unwrap();
    assert_eq!(busy.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(busy.headers()[header::RETRY_AFTER], "1");
    let stderr = refused(&git(s.dir.path(), &["ls-remote", &s.url]));
    assert!(stderr.contains("503"), "{stderr}");

    // The client finishes: its process ends, and the host is free again
    // once the answer has been read.
    drop(sender);
    held.into_body().collect().await.unwrap();
    let again = s.app.router.clone().oneshot(advertisement()).await.unwrap();
    assert_eq!(again.status(), StatusCode::OK);
}

fn tokio_stream_of(
    mut receiver: tokio::sync::mpsc::Receiver<Result<Vec<u8>, std::io::Error>>,
) -> impl futures::Stream<Item = Result<Vec<u8>, std::io::Error>> {
    futures::stream::poll_fn(move |cx| receiver.poll_recv(cx))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_of_an_account_switched_off_is_refused_and_its_repositories_stay_readable() {
    let s = served_with(GitHostLimits::default(), true, true).await;
    let work = s.clone("work");
    commit_file(&work, "a.txt", b"a\n");
    ok(&git(&work, &["push", "--quiet", "origin", "main"]));
    play_store::accounts::set_git_host(s.app.store(), "default", false).await.unwrap();
    let before = s.pushes().await.len();

    commit_file(&work, "b.txt", b"b\n");
    let stderr = refused(&git(&work, &["push", "origin", "main"]));
    assert!(stderr.contains("remote error: play's own Git host is switched off for this account"), "{stderr}");
    // A client that skips the advertisement gets Git's report.
    let zero = "0".repeat(40);
    let head = ok(&git(&work, &["rev-parse", "HEAD"]));
    let mut body = pkt(&format!("{zero} {head} refs/heads/sneak\0report-status\n"));
    body.extend(b"0000PACK\0\0\0\x02\0\0\0\0");
    let (_, answer) = s.post("git-receive-pack", body, false).await;
    assert!(String::from_utf8_lossy(&answer).contains("ng refs/heads/sneak play's own Git host is switched off"));
    let api = json!({"repo": "default/app", "message": "m", "files": [{"path": "c", "content": "c"}]});
    let answer = s.app.post("/api/repos/push", &s.app.admin, api).await;
    assert_eq!(answer.body["error"]["code"], "SCM_APP_REQUIRED", "{}", answer.text);
    assert_eq!(s.pushes().await.len(), before);

    ok(&git(&work, &["fetch", "--quiet", "origin"]));
    ok(&git(s.dir.path(), &["clone", "--quiet", &s.url, s.dir.path().join("again").to_str().unwrap()]));
}
