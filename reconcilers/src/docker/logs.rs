//! Reading the end of a container's log, bounded in lines, bytes, line
//! length and time.
//!
//! The engine is asked for the last `lines` lines, but one line may be
//! megabytes and a chunk may hold several lines, so the reader enforces
//! its own bounds while streaming: each line is clipped to
//! [`MAX_LINE_BYTES`], and only the newest lines that fit in both `lines`
//! and [`MAX_LOG_BYTES`] are kept (older ones are dropped as newer ones
//! arrive). Memory is therefore bounded whatever the container wrote.

use std::collections::VecDeque;
use std::time::Duration;

use bollard::Docker;
use bollard::query_parameters::LogsOptions;
use futures::StreamExt as _;
use play_model::host::HostError;

use crate::{Error, Result};

/// The longest line kept, in bytes; longer ones are clipped.
pub const MAX_LINE_BYTES: usize = 4096;
/// The most log bytes one read returns.
pub const MAX_LOG_BYTES: usize = 1024 * 1024;

/// The last `lines` lines (stdout and stderr) of `container`, oldest first,
/// within [`MAX_LOG_BYTES`], each clipped to [`MAX_LINE_BYTES`]. A missing
/// container is `HostError::NotFound`.
pub async fn tail(docker: &Docker, container: &str, lines: usize, bound: Duration) -> Result<Vec<String>> {
    let options = LogsOptions { stdout: true, stderr: true, tail: lines.to_string(), ..LogsOptions::default() };
    let collect = async {
        let mut kept = Kept::new(lines, MAX_LOG_BYTES);
        let mut stream = docker.logs(container, Some(options));
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| Error::docker("logs", e))?;
            for line in String::from_utf8_lossy(&chunk.into_bytes()).lines() {
                kept.push(clip(line));
            }
        }
        Ok::<_, Error>(kept.into_vec())
    };
    tokio::time::timeout(bound, collect)
        .await
        .map_err(|_| HostError::Timeout(format!("reading the logs of {container} took over {bound:?}")))?
}

/// Follows `container`'s log (see `HostGateway::follow_logs`): a task
/// reads the engine's stream and sends line by line into a small channel,
/// so a slow client slows the read instead of growing memory, and a
/// client that goes away (the receiver dropped) ends the read at once.
/// The container is looked up first (within `call_timeout`), so a
/// missing one is an error, not an empty stream.
pub async fn follow(
    docker: Docker,
    container: &str,
    lines: usize,
    bound: Duration,
    call_timeout: Duration,
) -> Result<play_model::host::LogLines> {
    tokio::time::timeout(
        call_timeout,
        docker.inspect_container(container, None::<bollard::query_parameters::InspectContainerOptions>),
    )
    .await
    .map_err(|_| HostError::Timeout(format!("looking up {container} took over {call_timeout:?}")))?
    .map_err(|e| Error::docker("inspect", e))?;
    let (tx, rx) = tokio::sync::mpsc::channel(256);
    let container = container.to_owned();
    tokio::spawn(async move {
        let options =
            LogsOptions { follow: true, stdout: true, stderr: true, tail: lines.to_string(), ..LogsOptions::default() };
        let mut stream = docker.logs(&container, Some(options));
        let deadline = tokio::time::sleep(bound);
        tokio::pin!(deadline);
        let mut sent = 0usize;
        loop {
            let chunk = tokio::select! {
                () = &mut deadline => return,
                () = tx.closed() => return,
                chunk = stream.next() => chunk,
            };
            let bytes = match chunk {
                None => return,
                Some(Err(e)) => {
                    let _ = tx.send(Err(Error::docker("logs", e).into_host_error())).await;
                    return;
                }
                Some(Ok(chunk)) => chunk.into_bytes(),
            };
            for line in String::from_utf8_lossy(&bytes).lines() {
                let line = clip(line);
                sent += line.len() + 1;
                if sent > play_model::host::FOLLOW_MAX_BYTES || tx.send(Ok(line)).await.is_err() {
                    return;
                }
            }
        }
    });
    Ok(rx)
}

/// `line` cut to at most [`MAX_LINE_BYTES`] bytes on a character boundary.
pub fn clip(line: &str) -> String {
    let mut end = line.len().min(MAX_LINE_BYTES);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    line[..end].to_owned()
}

/// The newest lines within a line count and a byte budget.
struct Kept {
    lines: VecDeque<String>,
    bytes: usize,
    max_lines: usize,
    max_bytes: usize,
}

impl Kept {
    fn new(max_lines: usize, max_bytes: usize) -> Self {
        Kept { lines: VecDeque::new(), bytes: 0, max_lines, max_bytes }
    }

    fn push(&mut self, line: String) {
        self.bytes += line.len();
        self.lines.push_back(line);
        while self.lines.len() > self.max_lines || self.bytes > self.max_bytes {
            match self.lines.pop_front() {
                Some(old) => self.bytes -= old.len(),
                None => break,
            }
        }
    }

    fn into_vec(self) -> Vec<String> {
        self.lines.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_newest_lines_within_both_bounds_are_kept() {
        let mut kept = Kept::new(3, 10);
        for line in ["aaaa", "bbbb", "cc", "d"] {
            kept.push(line.to_owned());
        }
        assert_eq!(kept.into_vec(), ["bbbb", "cc", "d"], "three lines, 7 bytes");
        let mut kept = Kept::new(100, 10);
        for line in ["aaaa", "bbbb", "cccc"] {
            kept.push(line.to_owned());
        }
        assert_eq!(kept.into_vec(), ["bbbb", "cccc"], "the byte budget drops the oldest");
        let mut kept = Kept::new(100, 10);
        kept.push("x".repeat(11));
        assert!(kept.into_vec().is_empty(), "a line over the budget alone is not kept");
    }

    #[test]
    fn clipping_respects_character_boundaries() {
        let long = "é".repeat(MAX_LINE_BYTES);
        let clipped = clip(&long);
        assert!(clipped.len() <= MAX_LINE_BYTES && clipped.len() >= MAX_LINE_BYTES - 1);
        assert_eq!(clip("short"), "short");
    }
}
