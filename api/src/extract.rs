//! Extractors whose rejections speak the error envelope.
//!
//! `Json<T>` splits serde failures the way clients need them: a body that is
//! not JSON is 400 BAD_REQUEST; JSON of the wrong shape (wrong type, missing
//! or unknown field) is 422 VALIDATION_FAILED with `details` keyed by the
//! field's path (`api_key.scopes[1]`). A body over the configured limit is
//! 413. Nothing has been written when any of these fire: extraction runs
//! before the handler body.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{FromRef, FromRequest, FromRequestParts, OptionalFromRequest, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use play_model::FieldErrors;
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::state::ApiConfig;

/// A JSON request body.
#[derive(Debug, Clone, Copy, Default)]
pub struct Json<T>(pub T);

fn is_json(headers: &HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).and_then(|v| v.split(';').next()).is_some_and(
        |mime| {
            let mime = mime.trim().to_ascii_lowercase();
            mime == "application/json" || (mime.starts_with("application/") && mime.ends_with("+json"))
        },
    )
}

/// Parses a JSON body into `T`, classifying failures as described above.
/// The body is read as the OpenAPI document describes it (`json::Strict`):
/// structs from objects only, `8.0` as the integer 8.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let json: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| classify(e, String::new()))?;
    serde_path_to_error::deserialize(play_model::json::Strict(&json)).map_err(|error| {
        let path = error.path().to_string();
        classify(error.into_inner(), path)
    })
}

fn classify(error: serde_json::Error, path: String) -> ApiError {
    match error.classify() {
        serde_json::error::Category::Data => {
            let mut details = FieldErrors::new();
            let field = if path.is_empty() || path == "." { "body".to_owned() } else { path };
            details.insert(field, vec![play_model::json::strip_position(&error.to_string())]);
            ApiError::validation(details)
        }
        _ => ApiError::BadRequest(format!("request body is not valid JSON: {error}")),
    }
}

impl<S, T> FromRequest<S> for Json<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
    ApiConfig: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        if !is_json(req.headers()) {
            return Err(ApiError::BadRequest("expected a JSON body with Content-Type: application/json".into()));
        }
        let limit = ApiConfig::from_ref(state).body_limit;
        let bytes = Bytes::from_request(req, state).await.map_err(|e| body_rejection(e, limit))?;
        parse_json(&bytes).map(Json)
    }
}

/// An optional JSON body: an empty body or a JSON `null` is `None` (defaults
/// apply); any other body must be valid JSON of the right shape.
impl<S, T> OptionalFromRequest<S> for Json<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
    ApiConfig: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Option<Self>, ApiError> {
        let json = is_json(req.headers());
        let limit = ApiConfig::from_ref(state).body_limit;
        let bytes = Bytes::from_request(req, state).await.map_err(|e| body_rejection(e, limit))?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        if !json {
            return Err(ApiError::BadRequest("expected a JSON body with Content-Type: application/json".into()));
        }
        parse_json::<Option<T>>(&bytes).map(|v| v.map(Json))
    }
}

/// A `multipart/form-data` body whose rejections (no boundary, not
/// multipart) speak the envelope: 400 BAD_REQUEST.
#[derive(Debug)]
pub struct Multipart(pub axum::extract::Multipart);

impl<S: Send + Sync> FromRequest<S> for Multipart {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        <axum::extract::Multipart as FromRequest<S>>::from_request(req, state)
            .await
            .map(Multipart)
            .map_err(|e| ApiError::BadRequest(format!("expected a multipart/form-data body: {}", e.body_text())))
    }
}

/// Maps a failure to read the body; the only expected one is the size limit.
pub fn body_rejection(rejection: BytesRejection, limit: usize) -> ApiError {
    match rejection {
        BytesRejection::FailedToBufferBody(_) if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE => {
            ApiError::PayloadTooLarge(limit)
        }
        other => ApiError::BadRequest(other.body_text()),
    }
}

/// The numeric `{id}` of a resource path. A non-numeric id cannot name any
/// resource, so it is answered like a missing one: 404.
#[derive(Debug, Clone, Copy)]
pub struct Id(pub i64);

impl<S: Send + Sync> FromRequestParts<S> for Id {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let axum::extract::Path(raw) = axum::extract::Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|e: PathRejection| ApiError::BadRequest(e.body_text()))?;
        match raw.parse::<i64>() {
            Ok(id) if id > 0 => Ok(Id(id)),
            _ => Err(ApiError::RouteNotFound(parts.uri.path().to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Body {
        inner: Inner,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        n: u8,
        #[expect(dead_code, reason = "a field exists to be deserialised")]
        tags: Vec<String>,
    }

    fn details(err: ApiError) -> FieldErrors {
        match err {
            ApiError::Core(play_core::Error::Validation(d)) => d,
            other => panic!("expected validation error, got {other:?}"),
        }
    }

    #[test]
    fn syntax_errors_are_bad_requests() {
        assert!(matches!(parse_json::<Body>(b"{\"inner\": "), Err(ApiError::BadRequest(_))));
        assert!(matches!(
            parse_json::<Body>(br#"{"inner": {"n": 1, "tags": []}} trailing"#),
            Err(ApiError::BadRequest(_))
        ));
    }

    #[test]
    fn arrays_are_not_structs() {
        let d = details(parse_json::<Body>(br#"{"inner": [1, []]}"#).unwrap_err());
        assert!(d.contains_key("inner"), "{d:?}");
    }

    #[test]
    fn integral_floats_fit_integer_fields() {
        let body = parse_json::<Body>(br#"{"inner": {"n": 8.0, "tags": []}}"#).unwrap();
        assert_eq!(body.inner.n, 8);
        let d = details(parse_json::<Body>(br#"{"inner": {"n": 8.5, "tags": []}}"#).unwrap_err());
        assert!(d.contains_key("inner.n"), "{d:?}");
    }

    #[test]
    fn type_errors_name_the_field_path() {
        let d = details(parse_json::<Body>(br#"{"inner": {"n": 1, "tags": ["a", 2]}}"#).unwrap_err());
        assert_eq!(d.keys().collect::<Vec<_>>(), ["inner.tags[1]"]);
        let d = details(parse_json::<Body>(br#"{"inner": {"n": 300, "tags": []}}"#).unwrap_err());
        assert!(d["inner.n"][0].contains("300"), "{d:?}");
    }

    #[test]
    fn unknown_and_missing_fields_are_validation_errors() {
        let d = details(parse_json::<Body>(br#"{"inner": {"n": 1, "tags": [], "x": 1}}"#).unwrap_err());
        assert!(d["inner.x"][0].contains("unknown field `x`"), "{d:?}");
        let d = details(parse_json::<Body>(br#"{"inner": {"n": 1}}"#).unwrap_err());
        assert!(d["inner"][0].contains("missing field `tags`"), "{d:?}");
        let d = details(parse_json::<Body>(b"[]").unwrap_err());
        assert!(d.contains_key("body"), "{d:?}");
    }
}

/// Query parameters, with failures answered as 422 naming the parameter.
#[derive(Debug, Clone, Copy, Default)]
pub struct Query<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        serde_urlencoded::from_str(query).map(Query).map_err(|e| {
            let mut details = FieldErrors::new();
            details.insert("query".into(), vec![e.to_string()]);
            ApiError::validation(details)
        })
    }
}
