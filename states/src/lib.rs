//! The states of a Playground, as typed values: its status, its desired
//! state, the creation step it is at, and the state of each of its
//! services.
//!
//! Each is stored and shown as a fixed lowercase word (`in_progress`,
//! `image_pull`, ...): [`as_str`](PlaygroundStatus::as_str) is that word,
//! serde writes and reads exactly it, and [`FromStr`] refuses any other
//! word. The store reads a column with a word play never writes as
//! `Error::Corrupt` (see `store::text_column`), never as a default.
//!
//! This crate owns the words and the order of the creation steps; it must
//! not know how they are stored or rendered beyond that. It is its own
//! crate, without the store, so that the command-line client (`play-cli`)
//! judges the API's status words with these types and depends on no
//! server crate; `play-core` re-exports them as `playground::state`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A word that names no value of a state type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownValue {
    /// What the word should have named (`playground status`).
    pub kind: &'static str,
    pub value: String,
}

impl fmt::Display for UnknownValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown {} {:?}", self.kind, self.value)
    }
}

impl std::error::Error for UnknownValue {}

/// An enum whose values are fixed words: `ALL` (in declaration order),
/// `as_str`, a strict `FromStr`, `Display`, and serde as the word.
macro_rules! word_enum {
    (
        $(#[$meta:meta])*
        $name:ident ($kind:literal) {
            $( $(#[$vmeta:meta])* $variant:ident => $word:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The word stored and shown for this value.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $word,)+
                }
            }
        }

        impl FromStr for $name {
            type Err = UnknownValue;

            fn from_str(text: &str) -> Result<Self, UnknownValue> {
                match text {
                    $($word => Ok($name::$variant),)+
                    _ => Err(UnknownValue { kind: $kind, value: text.to_owned() }),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

word_enum! {
    /// Where a Playground is: the API records `in_progress` (create,
    /// rollout, hard restart) and `destroying` (destroy, expiry); the
    /// reconciler moves it on to `running`, `failed` or `complete`.
    PlaygroundStatus ("playground status") {
        InProgress => "in_progress",
        Running => "running",
        Failed => "failed",
        Destroying => "destroying",
        /// Never stored today (a destroyed Playground's row is deleted),
        /// but a word the status has always had.
        Destroyed => "destroyed",
        /// A job-mode Playground whose watched services have all exited.
        Complete => "complete",
        /// Asleep: its containers stopped (not removed), networks, volumes
        /// and pinned commits kept, its URLs answered by the edge's waking
        /// route (an addition to the contract's statuses, issue #32).
        Sleeping => "sleeping",
    }
}

word_enum! {
    /// Whether a running Playground should be awake or asleep (its
    /// desired power; the status says which it is).
    Power ("power") {
        Awake => "awake",
        /// Containers stopped, kept; the edge wakes it on a request.
        Asleep => "asleep",
    }
}

word_enum! {
    /// Why a Playground last went to sleep or woke up: the `reason` of
    /// `playground.slept` and `playground.woke`.
    PowerReason ("power reason") {
        /// No activity at its edge for `sleep_after`.
        Idle => "idle",
        /// A request reached its URL while it slept.
        Request => "request",
        /// `POST /api/playgrounds/{id}/sleep` or `/wake`.
        Api => "api",
    }
}

word_enum! {
    /// What the API (or the job's completion) asks of a Playground.
    DesiredState ("desired state") {
        /// Provisioned and kept converged.
        Running => "running",
        /// Everything removed from the host, then the row deleted.
        Destroyed => "destroyed",
        /// A finished job: everything removed from the host, the row (and
        /// its result) kept until `expires_at`.
        Complete => "complete",
    }
}

word_enum! {
    /// The creation steps, in the order a Playground passes them.
    CreationStep ("creation step") {
        Queued => "queued",
        Network => "network",
        Volumes => "volumes",
        ImagePull => "image_pull",
        ImageBuild => "image_build",
        Containers => "containers",
        Healthcheck => "healthcheck",
        Ready => "ready",
    }
}

impl CreationStep {
    /// The label of the step, as the status endpoint shows it.
    pub const fn label(self) -> &'static str {
        match self {
            CreationStep::Queued => "Queued",
            CreationStep::Network => "Creating Networks",
            CreationStep::Volumes => "Creating Volumes",
            CreationStep::ImagePull => "Pulling Images",
            CreationStep::ImageBuild => "Building Images",
            CreationStep::Containers => "Starting Containers",
            CreationStep::Healthcheck => "Waiting for Health Checks",
            CreationStep::Ready => "Ready",
        }
    }
}

word_enum! {
    /// A service's container as last observed on the host.
    ServiceState ("service state") {
        Running => "running",
        /// Missing, exited, or not yet started.
        Stopped => "stopped",
    }
}

impl Default for Power {
    /// A Playground is made awake.
    fn default() -> Self {
        Power::Awake
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trips<T>(all: &[T], as_str: fn(T) -> &'static str)
    where
        T: Copy + fmt::Debug + PartialEq + FromStr<Err = UnknownValue> + Serialize + for<'de> Deserialize<'de>,
    {
        for value in all {
            let word = as_str(*value);
            assert_eq!(word.parse::<T>().unwrap(), *value);
            assert_eq!(serde_json::to_value(value).unwrap(), serde_json::Value::from(word));
            assert_eq!(serde_json::from_value::<T>(word.into()).unwrap(), *value);
        }
        assert!("Running".parse::<T>().is_err(), "words are matched exactly");
        assert!(serde_json::from_str::<T>("\"paused\"").is_err());
    }

    #[test]
    fn every_value_round_trips_through_its_word_and_only_it() {
        round_trips(PlaygroundStatus::ALL, PlaygroundStatus::as_str);
        round_trips(DesiredState::ALL, DesiredState::as_str);
        round_trips(CreationStep::ALL, CreationStep::as_str);
        round_trips(ServiceState::ALL, ServiceState::as_str);
        round_trips(Power::ALL, Power::as_str);
        round_trips(PowerReason::ALL, PowerReason::as_str);
        let error = "paused".parse::<PlaygroundStatus>().unwrap_err();
        assert_eq!(error.to_string(), "unknown playground status \"paused\"");
    }

    #[test]
    fn the_words_are_the_ones_play_has_always_stored() {
        let words = |all: &[&'static str]| all.join(",");
        assert_eq!(
            words(&PlaygroundStatus::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>()),
            "in_progress,running,failed,destroying,destroyed,complete,sleeping"
        );
        assert_eq!(
            words(&CreationStep::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>()),
            "queued,network,volumes,image_pull,image_build,containers,healthcheck,ready"
        );
    }

    #[test]
    fn every_step_has_a_label() {
        assert_eq!(CreationStep::ImageBuild.label(), "Building Images");
        assert!(CreationStep::ALL.iter().all(|s| !s.label().is_empty()));
    }
}
