//! What a delivery is made of, as pure functions: who receives an event,
//! how a request is signed, and when a failed one is tried again. The
//! dispatcher (`play_reconcilers::webhooks`) sends; the store records.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::{Subscription, TEST_EVENT};

/// The `User-Agent` of every delivery (the spec's).
pub const USER_AGENT: &str = "Service-Webhook/1.0";

/// Consecutive failed attempts after which an endpoint is disabled (the
/// spec's limit).
pub const DISABLE_AFTER_FAILURES: i64 = 10;

/// The event recorded when the dispatcher disables an endpoint, offered to
/// the account's other endpoints (the disabled one gets nothing more).
pub const DISABLED_EVENT: &str = "webhook_endpoint.disabled";

/// Whether endpoint `endpoint_id` with `subscription` receives an event of
/// `event_type` about `entity_id`. A `webhook.test` event goes to the
/// endpoint it was recorded for (its entity id, also its
/// `metadata.webhook_endpoint_id`) and to no other, subscribed or not.
pub fn delivers_to(endpoint_id: i64, subscription: &Subscription, event_type: &str, entity_id: i64) -> bool {
    if event_type == TEST_EVENT {
        return entity_id == endpoint_id;
    }
    subscription.matches(event_type, entity_id)
}

/// HMAC-SHA256 of `parts`, concatenated, keyed with `key`.
pub(crate) fn hmac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    // HMAC accepts keys of any length; `new_from_slice` cannot fail for it.
    let mut mac = match Hmac::<Sha256>::new_from_slice(key) {
        Ok(mac) => mac,
        Err(_) => unreachable!("HMAC takes keys of any length"),
    };
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// The spec's `X-Webhook-Signature` value: `sha256=` and the hex HMAC-SHA256
/// of the exact body bytes, keyed with the secret's UTF-8 bytes.
pub fn spec_signature(secret: &str, body: &[u8]) -> String {
    format!("sha256={}", hex::encode(hmac(secret.as_bytes(), &[body])))
}

/// The Standard Webhooks `webhook-signature` value: `v1,` and the base64
/// HMAC-SHA256 of `{id}.{timestamp}.{body}` keyed with `key`.
///
/// The standard's key is the base64 part of a `whsec_...` secret, decoded.
/// play's secrets are plain text (64 hex characters when generated), so
/// play keys this signature with the secret's UTF-8 bytes, the same key as
/// `X-Webhook-Signature`: a receiver using a Standard Webhooks library
/// passes it `whsec_` + base64(secret) (`docs/webhooks.md`).
pub fn standard_signature(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let signed = hmac(key, &[id.as_bytes(), b".", timestamp.to_string().as_bytes(), b".", body]);
    format!("v1,{}", STANDARD.encode(signed))
}

/// The default retry schedule: the delay before the 2nd, 3rd, ... attempt.
/// Ten attempts over about 22.7 hours, then the delivery is abandoned.
pub fn default_retry_schedule() -> Vec<Duration> {
    [10, 30, 120, 600, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600].into_iter().map(Duration::from_secs).collect()
}

/// A retry schedule as the operator writes it (`PLAY_WEBHOOK_RETRY_SCHEDULE`):
/// durations, comma-separated (`10s,30s,2m`).
pub fn retry_schedule_text(schedule: &[Duration]) -> String {
    schedule.iter().map(|d| humantime::format_duration(*d).to_string()).collect::<Vec<_>>().join(",")
}

/// Parses [`retry_schedule_text`]'s form (blanks around a duration and
/// empty entries are skipped); the error names the duration that is wrong.
pub fn parse_retry_schedule(text: &str) -> Result<Vec<Duration>, String> {
    let durations = text.split(',').map(str::trim).filter(|s| !s.is_empty());
    durations.map(|s| humantime::parse_duration(s).map_err(|e| format!("{s:?}: {e}"))).collect()
}

/// When a delivery that has now failed `attempts` times (at least 1) is
/// tried again: `schedule[attempts - 1]` stretched by `jitter` (a fraction
/// in `0..1`, drawn per retry, times [`JITTER`]), or `None` when the
/// schedule is spent and the delivery is abandoned.
pub fn retry_delay(schedule: &[Duration], attempts: i64, jitter: f64) -> Option<Duration> {
    let index = usize::try_from(attempts.checked_sub(1)?).ok()?;
    let base = *schedule.get(index)?;
    Some(base.mul_f64(1.0 + JITTER * jitter.clamp(0.0, 1.0)))
}

/// Largest stretch jitter adds to a scheduled delay: +20%. Only ever
/// later, so the gaps keep growing and receivers that failed are never
/// hit sooner than the schedule says; the spread keeps many deliveries
/// that failed together from retrying in one burst.
pub const JITTER: f64 = 0.2;

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn spec_signature_is_the_hex_hmac_of_the_body() {
        // RFC 2104 / Wikipedia's HMAC-SHA256 example.
        assert_eq!(
            spec_signature("key", b"The quick brown fox jumps over the lazy dog"),
            "sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
        );
    }

    #[test]
    fn standard_signature_matches_the_standard_webhooks_vector() {
        // The example of the Standard Webhooks specification.
        let key = STANDARD.decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        assert_eq!(
            standard_signature(&key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, br#"{"test": 2432232314}"#),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn the_schedule_spans_about_a_day_and_then_gives_up() {
        let schedule = default_retry_schedule();
        assert_eq!(schedule.len() + 1, DISABLE_AFTER_FAILURES as usize, "ten attempts in all");
        let total: Duration = schedule.iter().sum();
        assert!((Duration::from_secs(20 * 3600)..Duration::from_secs(26 * 3600)).contains(&total), "{total:?}");
        assert!(schedule.windows(2).all(|w| w[0] < w[1]), "gaps grow");
        assert_eq!(retry_delay(&schedule, 1, 0.0), Some(Duration::from_secs(10)));
        assert_eq!(retry_delay(&schedule, 1, 1.0), Some(Duration::from_secs(12)));
        assert_eq!(retry_delay(&schedule, 9, 0.5), Some(Duration::from_secs(12 * 3600).mul_f64(1.1)));
        assert_eq!(retry_delay(&schedule, 10, 0.0), None);
        assert_eq!(retry_delay(&schedule, 0, 0.0), None);
        assert_eq!(retry_schedule_text(&schedule), "10s,30s,2m,10m,30m,1h,3h,6h,12h");
        assert_eq!(parse_retry_schedule(&retry_schedule_text(&schedule)), Ok(schedule));
        assert_eq!(parse_retry_schedule(" 1s, ,2m"), Ok(vec![Duration::from_secs(1), Duration::from_secs(120)]));
        assert!(parse_retry_schedule("1s,soon").is_err_and(|e| e.starts_with("\"soon\": ")));
        assert_eq!(retry_delay(&[], 1, 0.0), None);
    }

    #[test]
    fn test_events_go_to_their_endpoint_only_and_filters_narrow_the_rest() {
        let sub = Subscription {
            events: vec!["playground.created".into(), "playroom.updated".into()],
            event_filters: BTreeMap::from([("playground.created".into(), vec![7])]),
        };
        assert!(delivers_to(3, &sub, "playground.created", 7));
        assert!(!delivers_to(3, &sub, "playground.created", 8));
        assert!(delivers_to(3, &sub, "playroom.updated", 8));
        assert!(!delivers_to(3, &sub, "playspec.created", 7));
        assert!(delivers_to(3, &Subscription::default(), TEST_EVENT, 3), "unsubscribed, still tested");
        assert!(!delivers_to(4, &sub, TEST_EVENT, 3));
        assert!(!delivers_to(3, &sub, DISABLED_EVENT, 3), "not subscribed");
        let watcher = Subscription { events: vec![DISABLED_EVENT.into()], event_filters: BTreeMap::new() };
        assert!(delivers_to(4, &watcher, DISABLED_EVENT, 3), "subscribed: another endpoint's disable");
    }
}
