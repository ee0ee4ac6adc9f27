//! `logs PLAYGROUND SERVICE [-f] [--tail N]`.
//!
//! `-f` asks for `?follow=true` as a Server-Sent-Events stream (each
//! `data:` one log line, `event: end` the end). A server that does not
//! stream (it refuses `follow` with 400/422, or ignores it and answers
//! JSON) is polled instead every 2 s, printing only the lines after the
//! overlap with the previous answer ([`new_lines`]).

use std::time::Duration;

use reqwest::Method;
use serde::Deserialize;

use super::args::LogsArgs;
use super::client::{ApiError, Client, query_value};
use super::kinds::Kind;
use super::lookup;
use super::sse::Parser;

const POLL_EVERY: Duration = Duration::from_secs(2);
/// The API's largest `tail`: polls ask for it, so a busy service loses
/// fewer lines between two polls.
const MAX_TAIL: u16 = 1000;

#[derive(Debug, Deserialize)]
struct Logs {
    lines: Vec<String>,
}

fn path(id: i64, service: &str, tail: u16) -> String {
    format!("/api/playgrounds/{id}/logs/{}?tail={tail}", query_value(service))
}

/// The lines of `next` that come after `previous`: the longest suffix of
/// `previous` that is a prefix of `next` is the overlap. Without one, all
/// of `next` is new.
pub fn new_lines<'a>(previous: &[String], next: &'a [String]) -> &'a [String] {
    let most = previous.len().min(next.len());
    for k in (1..=most).rev() {
        if previous[previous.len() - k..] == next[..k] {
            return &next[k..];
        }
    }
    next
}

pub async fn logs(client: &Client, args: LogsArgs) -> anyhow::Result<()> {
    let id = lookup::resolve(client, Kind::Playground, &args.playground).await?;
    if !args.follow {
        let logs: Logs = client.get_as(&path(id, &args.service, args.tail)).await?;
        for line in logs.lines {
            println!("{line}");
        }
        return Ok(());
    }
    let url = format!("{}&follow=true", path(id, &args.service, args.tail));
    let response = client.stream(client.request(Method::GET, &url).header("accept", "text/event-stream")).await?;
    let status = response.status();
    let streams = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if status.is_success() && streams {
        return stream(response).await;
    }
    if status.as_u16() == 400 || status.as_u16() == 422 || status.is_success() {
        // No streaming here: the first answer (when it is one) starts the
        // polling.
        let first: Vec<String> = if status.is_success() {
            serde_json::from_value::<Logs>(client.read(response).await?).map(|l| l.lines).unwrap_or_default()
        } else {
            client.get_as::<Logs>(&path(id, &args.service, args.tail)).await?.lines
        };
        return poll(client, id, &args.service, first).await;
    }
    let body = response.text().await.unwrap_or_default();
    Err(ApiError::from_body(status, &body).into())
}

async fn stream(mut response: reqwest::Response) -> anyhow::Result<()> {
    let mut parser = Parser::default();
    loop {
        let chunk = tokio::select! {
            _ = tokio::signal::ctrl_c() => return Ok(()),
            chunk = response.chunk() => chunk,
        };
        let Some(chunk) = chunk.map_err(|e| super::exit::Transport(format!("the log stream broke: {e}")))? else {
            return Ok(());
        };
        for event in parser.feed(&chunk) {
            if event.event == "end" {
                return Ok(());
            }
            println!("{}", event.data);
        }
    }
}

async fn poll(client: &Client, id: i64, service: &str, first: Vec<String>) -> anyhow::Result<()> {
    for line in &first {
        println!("{line}");
    }
    let mut previous = first;
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => return Ok(()),
            () = tokio::time::sleep(POLL_EVERY) => {}
        }
        let next = client.get_as::<Logs>(&path(id, service, MAX_TAIL)).await?.lines;
        for line in new_lines(&previous, &next) {
            println!("{line}");
        }
        previous = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn polls_print_only_what_follows_the_overlap() {
        assert_eq!(new_lines(&lines("a b c"), &lines("b c d e")), lines("d e"));
        assert_eq!(new_lines(&lines("a b c"), &lines("a b c")), Vec::<String>::new());
        // The window moved past everything seen: all of it is new.
        assert_eq!(new_lines(&lines("a b"), &lines("x y")), lines("x y"));
        assert_eq!(new_lines(&[], &lines("x")), lines("x"));
        // Repeated lines: the longest overlap wins.
        assert_eq!(new_lines(&lines("x x"), &lines("x x x")), lines("x"));
    }

    #[test]
    fn service_names_are_encoded_in_the_path() {
        assert_eq!(path(3, "web app", 50), "/api/playgrounds/3/logs/web%20app?tail=50");
    }
}
