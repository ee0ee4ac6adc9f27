//! The one error type of `play-model`: what a rule of the domain refuses.
//!
//! `play_store::Error` has these variants and the store's own (the
//! database, the migrations); every variant maps to exactly one API error
//! code in `play-api`'s envelope (see `api/src/error.rs`); keep the three in
//! step.

use std::collections::BTreeMap;

/// Field-addressed validation messages: `"services.web.labels.svc/expose"`
/// -> `["must be an integer from 1 to 65535"]`. Ordered so responses are
/// stable and snapshot-testable.
pub type FieldErrors = BTreeMap<String, Vec<String>>;

/// Adds `message` under `field`, keeping earlier messages for that field.
pub fn push_field_error(errors: &mut FieldErrors, field: impl Into<String>, message: impl Into<String>) {
    errors.entry(field.into()).or_default().push(message.into());
}

/// Field errors in one line (`field: message; message, field: message`):
/// the reason a refused launch is recorded with, an offline command's
/// error.
pub fn in_one_line(errors: &FieldErrors) -> String {
    errors.iter().map(|(field, messages)| format!("{field}: {}", messages.join("; "))).collect::<Vec<_>>().join(", ")
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The object does not exist, or belongs to another account (never
    /// distinguished, so ids of other accounts cannot be probed).
    #[error("{0} not found")]
    NotFound(&'static str),
    /// The input failed validation; nothing was written.
    #[error("validation failed")]
    Validation(FieldErrors),
    /// The object is referenced and cannot be changed (a Playspec in use).
    #[error("{0}")]
    Locked(String),
    /// The operation does not fit the object's current state.
    #[error("{0}")]
    InvalidState(String),
    /// The account's limit for a resource is reached.
    #[error("quota exceeded: at most {limit} {resource} per account")]
    QuotaExceeded { resource: String, limit: i64 },
    /// A conflicting object exists (a name taken, dependants present).
    #[error("{0}")]
    Conflict(String),
    /// The caller may not do this: its key lacks a scope, or the change
    /// would give more than the key holds (`details` names the field).
    #[error("{message}")]
    Forbidden { message: String, details: FieldErrors },
    /// The repository endpoints need the source-hosting app installed on
    /// the account (the spec's `SCM_APP_REQUIRED`).
    #[error("{0}")]
    ScmAppRequired(String),
    /// Secrets could not be sealed or opened (wrong master key, corrupt data).
    #[error("secret store: {0}")]
    Crypto(String),
    /// A stored value does not read as what play wrote there: a JSON
    /// column that does not parse, an enum column with an unknown value.
    /// Never read as a default: an empty spec read from a corrupt row would
    /// have the reconcilers converge a host to nothing.
    #[error("stored data is corrupt: {table}.{column} of row {id}: {reason}")]
    Corrupt { table: &'static str, id: i64, column: &'static str, reason: String },
    #[error("{0}")]
    Internal(String),
}

impl Error {
    /// A validation error with a single field message.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        let mut errors = FieldErrors::new();
        push_field_error(&mut errors, field, message);
        Error::Validation(errors)
    }

    /// A short, stable label for metrics (`reconcile_errors{error=...}`).
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::NotFound(_) => "not_found",
            Error::Validation(_) => "validation",
            Error::Locked(_) => "locked",
            Error::InvalidState(_) => "invalid_state",
            Error::QuotaExceeded { .. } => "quota_exceeded",
            Error::Conflict(_) => "conflict",
            Error::ScmAppRequired(_) => "scm_app_required",
            Error::Forbidden { .. } => "forbidden",
            Error::Crypto(_) => "crypto",
            Error::Corrupt { .. } => "corrupt",
            Error::Internal(_) => "internal",
        }
    }
}
