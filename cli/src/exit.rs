//! How a client command ends. Scripts rely on the exit codes, so they are
//! fixed here and documented in `docs/cli.md`:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success; `diff` found no difference |
//! | 1 | `diff` found differences; any other failure (a manifest that does not validate, a Playground that failed while waited for, a file that cannot be read) |
//! | 2 | usage error (clap) |
//! | 3 | the API refused the request (4xx), or a NAME matched nothing |
//! | 4 | the server failed (5xx) or could not be reached (transport, request timeout) |
//! | 5 | `wait` (or `--wait`) timed out |
//!
//! Commands return `anyhow::Error`s that carry one of the typed errors of
//! this module (or [`ApiError`]) somewhere in their chain; [`code`] finds it.

use std::fmt;

use super::api_error::ApiError;

pub const FAILURE: u8 = 1;
pub const API_REFUSED: u8 = 3;
pub const SERVER_OR_TRANSPORT: u8 = 4;
pub const TIMEOUT: u8 = 5;

/// `diff` found differences: exit 1, with nothing more to say (the diff
/// was the output).
#[derive(Debug)]
pub struct Differences;

impl fmt::Display for Differences {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("differences found")
    }
}

impl std::error::Error for Differences {}

/// A wait ran out of time (exit 5).
#[derive(Debug)]
pub struct Timeout(pub String);

impl fmt::Display for Timeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Timeout {}

/// The server could not be reached, or the request timed out (exit 4).
#[derive(Debug)]
pub struct Transport(pub String);

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Transport {}

/// A NAME that matched no object (exit 3, like the API's 404).
#[derive(Debug)]
pub struct NotFound(pub String);

impl fmt::Display for NotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotFound {}

/// A failure already reported in parts (say, one line per object), with
/// the exit code of the worst part.
#[derive(Debug)]
pub struct Coded(pub u8, pub String);

impl fmt::Display for Coded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.1)
    }
}

impl std::error::Error for Coded {}

/// The exit code for `err`: the first typed error found in its chain
/// decides; anything else is a generic failure.
pub fn code(err: &anyhow::Error) -> u8 {
    for cause in err.chain() {
        if let Some(api) = cause.downcast_ref::<ApiError>() {
            return if api.status >= 500 { SERVER_OR_TRANSPORT } else { API_REFUSED };
        }
        if cause.is::<Timeout>() {
            return TIMEOUT;
        }
        if cause.is::<Transport>() {
            return SERVER_OR_TRANSPORT;
        }
        if cause.is::<NotFound>() {
            return API_REFUSED;
        }
        if cause.is::<Differences>() {
            return FAILURE;
        }
        if let Some(Coded(code, _)) = cause.downcast_ref::<Coded>() {
            return *code;
        }
    }
    FAILURE
}

/// Prints `err` for a person on stderr (never Rust debug output) and
/// returns its exit code. `Differences` prints nothing: the diff said it.
pub fn report(err: &anyhow::Error) -> u8 {
    if !err.is::<Differences>() {
        eprintln!("play: {err:#}");
    }
    code(err)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn api(status: u16) -> anyhow::Error {
        anyhow::Error::new(ApiError { status, code: "X".into(), message: "m".into(), details: BTreeMap::new() })
    }

    #[test]
    fn typed_errors_decide_the_exit_code_even_under_context() {
        assert_eq!(code(&api(404).context("get playroom x")), API_REFUSED);
        assert_eq!(code(&api(422)), API_REFUSED);
        assert_eq!(code(&api(500)), SERVER_OR_TRANSPORT);
        assert_eq!(code(&api(503).context("a").context("b")), SERVER_OR_TRANSPORT);
        assert_eq!(code(&anyhow::Error::new(Timeout("t".into()))), TIMEOUT);
        assert_eq!(code(&anyhow::Error::new(Transport("t".into())).context("x")), SERVER_OR_TRANSPORT);
        assert_eq!(code(&anyhow::Error::new(NotFound("n".into()))), API_REFUSED);
        assert_eq!(code(&anyhow::Error::new(Differences)), FAILURE);
        assert_eq!(code(&anyhow::Error::new(Coded(4, "x".into()))), 4);
        assert_eq!(code(&anyhow::anyhow!("anything else")), FAILURE);
    }
}
