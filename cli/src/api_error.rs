//! An error answer of the API: the envelope `{error: {code, message,
//! details}}` as a typed error. Its own module so that `exit`, which maps
//! it to an exit code, and `client`, which makes it and reports transport
//! failures with `exit`'s types, do not import each other.

use std::collections::BTreeMap;
use std::fmt;

use reqwest::StatusCode;
use serde::Deserialize;

/// An error answer of the API: its status and envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: u16,
    pub code: String,
    pub message: String,
    /// Field -> messages, as the envelope's `details`.
    pub details: BTreeMap<String, Vec<String>>,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)?;
        for (field, messages) in &self.details {
            for message in messages {
                write!(f, "\n  {field}: {message}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for ApiError {}

#[derive(Deserialize)]
struct Envelope {
    error: EnvelopeBody,
}

#[derive(Deserialize)]
struct EnvelopeBody {
    code: String,
    message: String,
    #[serde(default)]
    details: BTreeMap<String, Vec<String>>,
}

impl ApiError {
    /// The error of an answer with `status` and `body`: its envelope, or,
    /// when a proxy or an older server answered something else, the status
    /// and the start of the body.
    pub fn from_body(status: StatusCode, body: &str) -> ApiError {
        match serde_json::from_str::<Envelope>(body) {
            Ok(Envelope { error }) => {
                ApiError { status: status.as_u16(), code: error.code, message: error.message, details: error.details }
            }
            Err(_) => {
                let snippet: String = body.trim().chars().take(200).collect();
                let reason = status.canonical_reason().unwrap_or("error");
                let message = if snippet.is_empty() { reason.to_owned() } else { format!("{reason}: {snippet}") };
                ApiError {
                    status: status.as_u16(),
                    code: format!("HTTP_{}", status.as_u16()),
                    message,
                    details: BTreeMap::new(),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_envelope_prints_its_message_and_every_field_detail() {
        let body = r#"{"error":{"code":"VALIDATION_FAILED","message":"invalid request",
            "details":{"playroom.port":["must be from 1 to 65535"],"playroom.name":["is required","is too long"]}}}"#;
        let err = ApiError::from_body(StatusCode::UNPROCESSABLE_ENTITY, body);
        assert_eq!(err.status, 422);
        assert_eq!(
            err.to_string(),
            "invalid request (VALIDATION_FAILED)\n  playroom.name: is required\n  playroom.name: is too long\n  \
             playroom.port: must be from 1 to 65535"
        );
    }

    #[test]
    fn a_body_that_is_no_envelope_keeps_the_status_and_a_bounded_snippet() {
        let err = ApiError::from_body(StatusCode::BAD_GATEWAY, &format!("<html>{}</html>", "x".repeat(500)));
        assert_eq!(err.code, "HTTP_502");
        assert!(err.message.starts_with("Bad Gateway: <html>"), "{}", err.message);
        assert!(err.message.len() < 230);
        assert_eq!(ApiError::from_body(StatusCode::NOT_FOUND, "").message, "Not Found");
    }
}
