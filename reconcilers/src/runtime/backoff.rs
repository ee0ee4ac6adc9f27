//! Retry delays after failed passes.

use std::time::Duration;

use rand::Rng;

/// Exponential backoff with full jitter above a floor: after the `n`th
/// consecutive failure of an object the next pass waits a uniformly random
/// delay between `initial` and `min(max, initial * 2^n)`.
///
/// The ceiling doubles with every failure and is capped at `max`; the floor
/// keeps a hot loop from forming when the draw is near zero. The randomness
/// spreads the retries of many objects that failed together (a host went
/// away) instead of retrying them in lockstep. A successful pass resets the
/// count, so the next failure starts from `initial` again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    pub initial: Duration,
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff { initial: Duration::from_secs(1), max: Duration::from_secs(300) }
    }
}

impl Backoff {
    /// The largest delay after `attempt` consecutive failures (1 = the first).
    pub fn ceiling(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.min(31));
        self.initial.saturating_mul(factor).min(self.max).max(self.initial)
    }

    /// A delay after `attempt` consecutive failures, drawn at random.
    pub fn delay(&self, attempt: u32) -> Duration {
        self.delay_with(attempt, rand::thread_rng().r#gen::<f64>())
    }

    /// The delay for a draw `unit` in `[0, 1]`: `initial` at 0, the ceiling
    /// at 1.
    pub fn delay_with(&self, attempt: u32, unit: f64) -> Duration {
        let floor = self.initial.min(self.max);
        let span = self.ceiling(attempt).saturating_sub(floor);
        floor + span.mul_f64(unit.clamp(0.0, 1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceiling_doubles_from_initial_and_stops_at_max() {
        let b = Backoff::default();
        assert_eq!(b.ceiling(1), Duration::from_secs(2));
        assert_eq!(b.ceiling(2), Duration::from_secs(4));
        assert_eq!(b.ceiling(8), Duration::from_secs(256));
        assert_eq!(b.ceiling(9), Duration::from_secs(300));
        assert_eq!(b.ceiling(u32::MAX), Duration::from_secs(300));
    }

    #[test]
    fn draws_stay_between_initial_and_the_ceiling() {
        let b = Backoff::default();
        assert_eq!(b.delay_with(5, 0.0), Duration::from_secs(1));
        assert_eq!(b.delay_with(5, 1.0), Duration::from_secs(32));
        assert_eq!(b.delay_with(40, 1.0), Duration::from_secs(300));
        for attempt in 1..50 {
            let d = b.delay(attempt);
            assert!(d >= b.initial && d <= b.ceiling(attempt), "{attempt}: {d:?}");
        }
    }
}
