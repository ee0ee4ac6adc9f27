//! One attempt of one delivery: the signed request, the answer judged,
//! the outcome recorded.

use std::time::{Duration, Instant};

use play_core::metrics::{ControllerLabels, Metrics, PassResult};
use play_model::webhook::DeliveryStatus;
use play_model::webhook::delivery::{retry_delay, spec_signature, standard_signature};
use play_model::webhook::model::Attempt;
use play_model::webhook::model::{Claimed, EndpointEffect};
use play_store::Store;
use play_store::webhook_dispatch;
use rand::Rng;

use super::client::{Answer, DeliveryClient, SendError};

/// The headers of a delivery: the spec's, then the Standard Webhooks ones.
/// `body` is the exact bytes sent; `timestamp` (unix seconds) is this
/// attempt's, so a retry is signed afresh while its id stays.
pub fn headers(
    delivery_id: i64,
    event_type: &str,
    secret: &str,
    timestamp: i64,
    body: &[u8],
) -> Vec<(&'static str, String)> {
    let id = delivery_id.to_string();
    vec![
        ("content-type", "application/json".to_owned()),
        ("x-webhook-signature", spec_signature(secret, body)),
        ("x-webhook-event", event_type.to_owned()),
        ("x-webhook-delivery", id.clone()),
        ("webhook-signature", standard_signature(secret.as_bytes(), &id, timestamp, body)),
        ("webhook-timestamp", timestamp.to_string()),
        ("webhook-id", id),
    ]
}

/// What an attempt's result means: the delivery's new state and the
/// effect on its endpoint. `attempts` counts this attempt; `jitter` is a
/// draw in `0..1`.
pub fn outcome(
    result: Result<Answer, SendError>,
    attempts: i64,
    schedule: &[Duration],
    jitter: f64,
    duration_ms: i64,
) -> (Attempt, EndpointEffect) {
    let (status_code, error, snippet, gone) = match result {
        Ok(Answer { status, snippet }) if (200..300).contains(&status) => {
            let attempt = Attempt {
                status: DeliveryStatus::Succeeded,
                next_attempt_at: None,
                status_code: Some(i64::from(status)),
                error: None,
                duration_ms,
                response_snippet: snippet,
            };
            return (attempt, EndpointEffect::Succeeded);
        }
        Ok(Answer { status, snippet }) => {
            let error = match status {
                300..400 => format!("HTTP {status}: redirects are not followed"),
                _ => format!("HTTP {status}"),
            };
            (Some(i64::from(status)), error, snippet, status == 410)
        }
        Err(e) => (None, e.to_string(), None, false),
    };
    let (status, next_attempt_at) = match retry_delay(schedule, attempts, jitter) {
        Some(delay) => (DeliveryStatus::Failed, Some(webhook_dispatch::due_after(delay))),
        None => (DeliveryStatus::Abandoned, None),
    };
    let attempt =
        Attempt { status, next_attempt_at, status_code, error: Some(error), duration_ms, response_snippet: snippet };
    (attempt, EndpointEffect::Failed { gone })
}

/// What one attempt came to, for the recorder ([`record`]).
pub(super) type Outcome = (Claimed, Attempt, EndpointEffect);

/// Sends `delivery` once: its outcome, or `None` when it could not be sent
/// at all (its payload does not serialise: logged; the claim expires).
pub(super) async fn attempt(client: &DeliveryClient, schedule: &[Duration], delivery: Claimed) -> Option<Outcome> {
    let body = match serde_json::to_vec(&delivery.event) {
        Ok(body) => body,
        Err(e) => {
            tracing::error!(%delivery, error = %e, "cannot serialise a webhook payload");
            return None;
        }
    };
    let timestamp = play_model::time::now().timestamp();
    let headers = headers(delivery.id, &delivery.event.event_type, &delivery.secret, timestamp, &body);
    let started = Instant::now();
    let result = client.post(&delivery.url, &headers, body).await;
    let duration_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
    let jitter = rand::thread_rng().r#gen::<f64>();
    let (attempt, effect) = outcome(result, delivery.attempts + 1, schedule, jitter, duration_ms);
    tracing::debug!(%delivery, status = attempt.status.as_str(), code = ?attempt.status_code, error = ?attempt.error, duration_ms, "webhook attempt");
    Some((delivery, attempt, effect))
}

/// Counts one attempt that took `elapsed` as a pass of `controller`:
/// `success` when the endpoint answered 2xx; `error` otherwise (retried
/// later or abandoned), or when it could not be sent (`None`).
pub(super) fn count(metrics: &Metrics, controller: &'static str, outcome: Option<&Outcome>, elapsed: Duration) {
    let result = match outcome {
        Some((_, attempt, _)) if attempt.status == DeliveryStatus::Succeeded => PassResult::Success,
        _ => PassResult::Error,
    };
    metrics.controllers.reconciled(controller, result);
    let labels = ControllerLabels { controller };
    metrics.controllers.reconcile_time.get_or_create(&labels).observe(elapsed.as_secs_f64());
}

/// Records `outcomes` in one transaction. A failure to record is logged:
/// the claims then expire and the attempts are made again.
pub(super) async fn record(store: &Store, outcomes: Vec<Outcome>) {
    let ids: Vec<i64> = outcomes.iter().map(|(claimed, ..)| claimed.id).collect();
    let endpoints: Vec<i64> = outcomes.iter().map(|(claimed, ..)| claimed.endpoint_id).collect();
    match webhook_dispatch::record_all(store, outcomes).await {
        Ok(recorded) => {
            for (endpoint, recorded) in endpoints.iter().zip(recorded) {
                if let Some(reason) = recorded.disabled {
                    tracing::warn!(endpoint, %reason, "webhook endpoint disabled");
                }
            }
        }
        Err(e) => tracing::warn!(deliveries = ?ids, error = %e, "cannot record webhook attempts; they are made again"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEDULE: &[Duration] = &[Duration::from_secs(10), Duration::from_secs(30)];

    #[test]
    fn only_2xx_succeeds_and_410_disables() {
        let ok = Ok(Answer { status: 204, snippet: None });
        let (attempt, effect) = outcome(ok, 1, SCHEDULE, 0.0, 5);
        assert_eq!((attempt.status, effect), (DeliveryStatus::Succeeded, EndpointEffect::Succeeded));
        assert_eq!(attempt.next_attempt_at, None);

        let moved = Ok(Answer { status: 302, snippet: None });
        let (attempt, effect) = outcome(moved, 1, SCHEDULE, 0.0, 5);
        assert_eq!((attempt.status, effect), (DeliveryStatus::Failed, EndpointEffect::Failed { gone: false }));
        assert!(attempt.error.unwrap().contains("not followed"));
        assert!(attempt.next_attempt_at.is_some());

        let gone = Ok(Answer { status: 410, snippet: Some("bye".into()) });
        let (attempt, effect) = outcome(gone, 2, SCHEDULE, 0.0, 5);
        assert_eq!(effect, EndpointEffect::Failed { gone: true });
        assert_eq!(attempt.response_snippet.as_deref(), Some("bye"));

        let (attempt, _) = outcome(Err(SendError::Timeout(Duration::from_secs(1))), 3, SCHEDULE, 0.0, 1000);
        assert_eq!((attempt.status, attempt.next_attempt_at), (DeliveryStatus::Abandoned, None));
        assert_eq!(attempt.status_code, None);
    }

    #[test]
    fn headers_carry_both_signatures_and_the_stable_id() {
        let h = headers(42, "playground.created", "key", 1_700_000_000, b"{}");
        let get = |name: &str| h.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone()).unwrap();
        assert_eq!(get("x-webhook-delivery"), "42");
        assert_eq!(get("webhook-id"), "42");
        assert_eq!(get("x-webhook-signature"), spec_signature("key", b"{}"));
        assert!(get("webhook-signature").starts_with("v1,"));
        assert_eq!(get("webhook-timestamp"), "1700000000");
    }
}
