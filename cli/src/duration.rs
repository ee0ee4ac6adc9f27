//! A duration as the command line reads and shows it (`8h`, `30s`), so
//! that a flag's default can be taken from the configuration type that
//! owns it and still be shown by `--help` in the same words. The client's
//! flags (`--timeout`) and the server's (`play serve`, in the binary) use
//! it, so that both spell durations alike.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// See the [module documentation](self).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HumanDuration(pub Duration);

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", humantime::format_duration(self.0))
    }
}

impl FromStr for HumanDuration {
    type Err = humantime::DurationError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        humantime::parse_duration(text).map(HumanDuration)
    }
}

impl From<HumanDuration> for Duration {
    fn from(value: HumanDuration) -> Duration {
        value.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_in_the_words_help_shows() {
        for text in ["8h", "30s", "10m", "1h 30m"] {
            let parsed: HumanDuration = text.parse().unwrap_or(HumanDuration(Duration::ZERO));
            assert_eq!(parsed.to_string(), text);
        }
        assert!("soon".parse::<HumanDuration>().is_err());
    }
}
