//! The operator's rules for a Playground's life, as one value: how long a
//! new Playground lives ([`Lifetimes`]) and how long one that inherits its
//! `sleep_after` may stay idle.
//!
//! `play serve` builds one [`LifePolicy`] from its settings and hands the
//! same value to the API (the `expires_at` of what it creates, the
//! effective `sleep_after` it shows) and to the loops (the Playground
//! reconciler's sleep decision, the edge's choice of whose requests to
//! log, the launches of schedules and triggers), so no two parts of play
//! can disagree about when a Playground expires or sleeps.

use std::time::Duration;

use super::model::Playground;
use super::ttl::{DEFAULT_JOB_TTL, DEFAULT_TTL};

/// How long new Playgrounds live, from configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lifetimes {
    /// A Playground's `expires_at` is its creation plus this.
    pub playground: Duration,
    /// The same for a job-mode Playground.
    pub job: Duration,
}

impl Default for Lifetimes {
    fn default() -> Self {
        Lifetimes { playground: DEFAULT_TTL, job: DEFAULT_JOB_TTL }
    }
}

impl Lifetimes {
    /// The lifetime of a new Playground: the configured TTL, the job TTL
    /// for a job. A TTL too large for a date is the default
    /// ([`super::ttl::offset`]).
    pub fn ttl(&self, job_mode: bool) -> chrono::Duration {
        super::ttl::offset(if job_mode { self.job } else { self.playground })
    }
}

/// See the [module documentation](self).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LifePolicy {
    pub lifetimes: Lifetimes,
    /// The installation's default `sleep_after` (`PLAY_SLEEP_AFTER`): how
    /// long a Playground whose own setting and Playspec's both inherit may
    /// stay idle before it sleeps. `None`: such Playgrounds never sleep.
    pub sleep_after: Option<Duration>,
}

impl LifePolicy {
    /// How long `p` may stay idle before it sleeps under this policy:
    /// its own setting, else its Playspec's, else the installation's;
    /// `None` when it never sleeps (a job never does).
    pub fn sleep_after(&self, p: &Playground) -> Option<Duration> {
        p.sleep.after(p.job_mode, self.sleep_after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_get_the_job_lifetime() {
        let hour = Duration::from_secs(3600);
        let lifetimes = Lifetimes { playground: 8 * hour, job: hour };
        assert_eq!(lifetimes.ttl(false), chrono::Duration::hours(8));
        assert_eq!(lifetimes.ttl(true), chrono::Duration::hours(1));
        let forever = Lifetimes { playground: Duration::MAX, job: hour };
        assert_eq!(forever.ttl(false), chrono::Duration::hours(8), "a TTL too large for a date");
    }

    #[test]
    fn the_default_policy_has_the_default_lifetimes_and_no_sleep() {
        let policy = LifePolicy::default();
        assert_eq!(policy.lifetimes.playground, DEFAULT_TTL);
        assert_eq!(policy.lifetimes.job, DEFAULT_JOB_TTL);
        assert_eq!(policy.sleep_after, None);
    }
}
