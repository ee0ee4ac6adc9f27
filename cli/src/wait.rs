//! `wait`, and the waiting `apply --wait`, `delete --wait` and
//! `launch --wait` do: poll until a condition holds, fail at once when it
//! can no longer hold (a failed Playground), and end with [`Timeout`]
//! (exit 5) at the deadline.

use std::time::{Duration, Instant};

use anyhow::bail;
use play_states::PlaygroundStatus;
use serde_json::Value;

use super::args::WaitArgs;
use super::client::{Client, is_status};
use super::exit::{NotFound, Timeout};
use super::kinds::{self, Kind};
use super::lookup;
use crate::duration::HumanDuration;

/// How often a condition is polled.
pub const POLL: Duration = Duration::from_secs(1);

/// What `--for` asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    Status(String),
    Deleted,
}

impl std::str::FromStr for Condition {
    type Err = String;

    fn from_str(text: &str) -> Result<Condition, String> {
        match text.split_once('=') {
            None if text == "delete" => Ok(Condition::Deleted),
            Some(("status", word)) if !word.is_empty() => Ok(Condition::Status(word.to_owned())),
            _ => Err(format!("--for={text}: use --for=status=WORD (e.g. status=running) or --for=delete")),
        }
    }
}

/// Sleeps until the next poll, or fails with `Timeout` when the deadline
/// has passed. `what` says what was awaited and what was last seen.
pub(crate) async fn tick(
    deadline: Instant,
    timeout: HumanDuration,
    what: impl FnOnce() -> String,
) -> anyhow::Result<()> {
    let now = Instant::now();
    if now >= deadline {
        return Err(Timeout(format!("timed out after {timeout} waiting for {}", what())).into());
    }
    tokio::time::sleep(POLL.min(deadline - now)).await;
    Ok(())
}

/// A Playground's status view; `None` once it is gone.
async fn playground_status(client: &Client, id: i64) -> anyhow::Result<Option<Value>> {
    match client.get(&format!("/api/playgrounds/{id}/status")).await {
        Ok(status) => Ok(Some(status)),
        Err(e) if is_status(&e, 404) => Ok(None),
        Err(e) => Err(e),
    }
}

fn field<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("-")
}

/// Why a failed Playground failed: its step and message.
pub fn failure(status: &Value) -> String {
    let step = status
        .get("error_step_label")
        .and_then(Value::as_str)
        .or_else(|| status.get("error_step").and_then(Value::as_str));
    let message = status.get("error_message").and_then(Value::as_str).unwrap_or("no error message");
    match step {
        Some(step) => format!("{step}: {message}"),
        None => message.to_owned(),
    }
}

/// What a Playground's status view says about a wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The awaited status.
    Reached(PlaygroundStatus),
    /// Failed while something else was awaited: step and message.
    Failed(String),
    /// Not yet: the status word (a word this client does not know, from a
    /// newer server, is waited past too).
    Pending(String),
}

/// Judges the status view `view` of a wait for `want`; without one, for
/// `running` (or `complete`, for a job).
pub fn judge(view: &Value, want: Option<PlaygroundStatus>) -> Verdict {
    let word = field(view, "status");
    let Ok(status) = word.parse::<PlaygroundStatus>() else { return Verdict::Pending(word.to_owned()) };
    let job = view.get("job_mode").and_then(Value::as_bool).unwrap_or(false);
    let reached = match want {
        Some(want) => status == want,
        None => status == PlaygroundStatus::Running || (job && status == PlaygroundStatus::Complete),
    };
    if reached {
        Verdict::Reached(status)
    } else if status == PlaygroundStatus::Failed {
        Verdict::Failed(failure(view))
    } else {
        Verdict::Pending(word.to_owned())
    }
}

/// The status a wait without `--for` awaits, as words for messages.
pub fn goal(view: &Value, want: Option<PlaygroundStatus>) -> &'static str {
    let job = view.get("job_mode").and_then(Value::as_bool).unwrap_or(false);
    match want {
        Some(want) => want.as_str(),
        None if job => PlaygroundStatus::Complete.as_str(),
        None => PlaygroundStatus::Running.as_str(),
    }
}

/// Waits until the Playground runs (or, in job mode, is complete); a
/// failed one is an error with its message.
pub async fn playground_ready(
    client: &Client,
    id: i64,
    label: &str,
    deadline: Instant,
    timeout: HumanDuration,
) -> anyhow::Result<()> {
    playground_status_is(client, id, label, None, deadline, timeout).await
}

/// Waits for `want` (else running, or complete for a job).
pub(crate) async fn playground_status_is(
    client: &Client,
    id: i64,
    label: &str,
    want: Option<PlaygroundStatus>,
    deadline: Instant,
    timeout: HumanDuration,
) -> anyhow::Result<()> {
    loop {
        let Some(view) = playground_status(client, id).await? else {
            bail!("{label} is gone");
        };
        match judge(&view, want) {
            Verdict::Reached(_) => return Ok(()),
            Verdict::Failed(why) => bail!("{label} failed at {why}"),
            Verdict::Pending(now) => {
                let goal = goal(&view, want);
                let step = field(&view, "creation_step_label").to_owned();
                tick(deadline, timeout, || format!("{label} to be {goal} (status {now}, step {step})")).await?;
            }
        }
    }
}

/// Waits until `GET path` answers 404.
pub async fn gone(
    client: &Client,
    path: &str,
    label: &str,
    deadline: Instant,
    timeout: HumanDuration,
) -> anyhow::Result<()> {
    loop {
        let last = match client.get(path).await {
            Err(e) if is_status(&e, 404) => return Ok(()),
            Err(e) => return Err(e),
            Ok(object) => field(&object, "status").to_owned(),
        };
        tick(deadline, timeout, || format!("{label} to be deleted (status {last})")).await?;
    }
}

pub async fn wait(client: &Client, args: WaitArgs) -> anyhow::Result<()> {
    let (kind, name) = kinds::split_ref(&args.target).map_err(anyhow::Error::msg)?;
    let condition: Condition = args.condition.parse().map_err(anyhow::Error::msg)?;
    let deadline = Instant::now() + args.timeout.0;
    let label = format!("{kind}/{name}");
    let id = match lookup::resolve(client, kind, &name).await {
        Ok(id) => id,
        // Already gone is what --for=delete waits for.
        Err(e) if condition == Condition::Deleted && e.is::<NotFound>() => return Ok(()),
        Err(e) => return Err(e),
    };
    match condition {
        Condition::Deleted => gone(client, &kind.path(id), &label, deadline, args.timeout).await,
        Condition::Status(want) if kind == Kind::Playground => {
            let want: PlaygroundStatus = want.parse().map_err(|e| anyhow::anyhow!("--for: {e}"))?;
            playground_status_is(client, id, &label, Some(want), deadline, args.timeout).await
        }
        Condition::Status(want) => loop {
            let object = client.get(&kind.path(id)).await?;
            let now = field(&object, "status").to_owned();
            if now == want {
                return Ok(());
            }
            tick(deadline, args.timeout, || format!("{label} to be {want} (status {now})")).await?;
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn conditions_read_status_words_and_delete() {
        assert_eq!("status=running".parse(), Ok(Condition::Status("running".into())));
        assert_eq!("delete".parse(), Ok(Condition::Deleted));
        assert!("status=".parse::<Condition>().is_err());
        assert!("ready".parse::<Condition>().is_err());
    }

    #[test]
    fn failures_say_where_and_why() {
        let status =
            json!({"status": "failed", "error_step_label": "Pulling Images", "error_message": "no such image"});
        assert_eq!(failure(&status), "Pulling Images: no such image");
        assert_eq!(failure(&json!({"status": "failed"})), "no error message");
    }

    #[test]
    fn verdicts_follow_the_typed_status_and_job_mode() {
        let view = |status: &str, job: bool| json!({"status": status, "job_mode": job, "error_message": "boom"});
        assert_eq!(judge(&view("running", false), None), Verdict::Reached(PlaygroundStatus::Running));
        assert_eq!(judge(&view("complete", true), None), Verdict::Reached(PlaygroundStatus::Complete));
        assert_eq!(judge(&view("running", true), None), Verdict::Reached(PlaygroundStatus::Running));
        assert_eq!(judge(&view("in_progress", false), None), Verdict::Pending("in_progress".into()));
        assert_eq!(judge(&view("failed", false), None), Verdict::Failed("boom".into()));
        assert_eq!(
            judge(&view("failed", false), Some(PlaygroundStatus::Failed)),
            Verdict::Reached(PlaygroundStatus::Failed)
        );
        assert_eq!(
            judge(&view("running", false), Some(PlaygroundStatus::Destroying)),
            Verdict::Pending("running".into())
        );
        assert_eq!(judge(&view("hibernating", false), None), Verdict::Pending("hibernating".into()));
        assert_eq!(goal(&view("x", true), None), "complete");
    }

    #[tokio::test]
    async fn a_tick_past_the_deadline_is_a_timeout_naming_what_was_awaited() {
        let deadline = Instant::now();
        let err =
            tick(deadline, HumanDuration(Duration::from_secs(2)), || "pg/x to be running".into()).await.unwrap_err();
        assert_eq!(err.to_string(), "timed out after 2s waiting for pg/x to be running");
        assert_eq!(super::super::exit::code(&err), super::super::exit::TIMEOUT);
    }
}
