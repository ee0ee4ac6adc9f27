//! The HTTP side of [`GitServer`](super::GitServer): basic auth per
//! repository, a request log, and `git http-backend` spawned per request
//! as a CGI program, the request body streamed to its stdin and its
//! output streamed back.
#![expect(clippy::expect_used, reason = "test harness: a panic with the reason is the failure report")]

use std::process::Stdio;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use futures::StreamExt as _;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

use super::{Access, LoggedRequest, Shared};

/// Runs the server until `stopped` fires (or its sender is dropped); the
/// runtime, its tasks and their child processes go with it.
pub(crate) fn serve(listener: std::net::TcpListener, shared: Arc<Shared>, stopped: tokio::sync::oneshot::Receiver<()>) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("server runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
        let app = Router::new().fallback(handle).with_state(shared);
        tokio::select! {
            result = axum::serve(listener, app) => result.expect("git server"),
            _ = stopped => {}
        }
    });
}

fn status(code: StatusCode, text: &'static str) -> Response {
    (code, text).into_response()
}

/// The password of a `Basic` Authorization header.
fn basic_password(headers: &HeaderMap) -> Option<(String, String)> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let encoded = value.strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim()).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_owned(), password.to_owned()))
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let uri = request.uri().path_and_query().map(|p| p.as_str().to_owned()).unwrap_or_default();
    let headers = request.headers().clone();
    shared.log.lock().expect("request log").push(LoggedRequest {
        method: request.method().to_string(),
        uri: uri.clone(),
        authorization: headers.contains_key(header::AUTHORIZATION),
    });
    let path = request.uri().path().to_owned();
    let name = path.trim_start_matches('/').split('/').next().unwrap_or_default();
    let name = name.strip_suffix(".git").unwrap_or(name).to_owned();
    let access = shared.repos.lock().expect("repositories").get(&name).cloned();
    let mut remote_user = None;
    if let Some(Access::Private { token }) = &access {
        match basic_password(&headers) {
            Some((user, password))
                if password == *token
                    || shared
                        .extra_tokens
                        .lock()
                        .expect("tokens")
                        .get(&name)
                        .is_some_and(|t| t.contains(&password)) =>
            {
                remote_user = Some(user)
            }
            _ => {
                let mut response = status(StatusCode::UNAUTHORIZED, "authentication required\n");
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"play-test\""));
                return response;
            }
        }
    }
    let mut command = tokio::process::Command::new(&shared.backend);
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &shared.home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_PROJECT_ROOT", &shared.root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("PATH_INFO", &path)
        .env("QUERY_STRING", request.uri().query().unwrap_or_default())
        .env("REQUEST_METHOD", request.method().as_str())
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    for (name, var) in [
        (header::CONTENT_TYPE, "CONTENT_TYPE"),
        (header::CONTENT_LENGTH, "CONTENT_LENGTH"),
        (header::CONTENT_ENCODING, "HTTP_CONTENT_ENCODING"),
        (HeaderName::from_static("git-protocol"), "GIT_PROTOCOL"),
    ] {
        if let Some(value) = headers.get(&name).and_then(|v| v.to_str().ok()) {
            command.env(var, value);
        }
    }
    if let Some(user) = remote_user {
        command.env("REMOTE_USER", user);
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(_) => return status(StatusCode::INTERNAL_SERVER_ERROR, "cannot run git http-backend\n"),
    };
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return status(StatusCode::INTERNAL_SERVER_ERROR, "no pipes to git http-backend\n");
    };
    let mut body = request.into_body().into_data_stream();
    tokio::spawn(async move {
        while let Some(Ok(chunk)) = body.next().await {
            if stdin.write_all(&chunk).await.is_err() {
                break;
            }
        }
        // Dropping stdin closes it: the end of the request body.
    });
    // Reap the backend when it exits (or kill it with the runtime).
    tokio::spawn(async move {
        let _ = child.wait().await;
    });
    cgi_response(BufReader::new(stdout)).await
}

/// Turns CGI output (headers, a blank line, the body) into a response
/// whose body streams the rest of `out`.
async fn cgi_response(mut out: BufReader<tokio::process::ChildStdout>) -> Response {
    let mut response = Response::new(Body::empty());
    loop {
        let mut line = String::new();
        match out.read_line(&mut line).await {
            Ok(0) | Err(_) => return status(StatusCode::BAD_GATEWAY, "git http-backend ended early\n"),
            Ok(_) => {}
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        if name.eq_ignore_ascii_case("Status") {
            let code = value.split(' ').next().and_then(|c| c.parse::<u16>().ok());
            *response.status_mut() = code.and_then(|c| StatusCode::from_u16(c).ok()).unwrap_or(StatusCode::OK);
        } else if let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            response.headers_mut().append(name, value);
        }
    }
    *response.body_mut() = Body::from_stream(tokio_util::io::ReaderStream::new(out));
    response
}
