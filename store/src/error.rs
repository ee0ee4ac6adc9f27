//! The one error type of `play-store`, which `play-core` speaks too: the
//! model's refusals ([`play_model::Error`], the same variants) and the
//! store's own failures (the database, the migrations).
//!
//! Every variant maps to exactly one API error code in `play-api`'s envelope
//! (see `api/src/error.rs`); keep them in step.

use play_model::FieldErrors;
use play_model::scm::ScmError;

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
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migration: {0}")]
    Migration(#[from] sqlx::migrate::MigrateError),
    /// The database's schema is newer than this binary's migrations
    /// (`schema`): nothing was run.
    #[error(
        "the database's schema is at migration {database}, newer than this play binary knows (its last migration is \
         {binary}): a newer play has run on this database. Run that version or a newer one; to go back to this \
         version, restore the backup of the database taken before the upgrade (docs/operations.md, \"Upgrades\")"
    )]
    SchemaNewer { database: i64, binary: i64 },
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
        play_model::Error::field(field, message).into()
    }

    /// A short, stable label for metrics (`reconcile_errors{error=...}`).
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Database(_) => "database",
            Error::Migration(_) | Error::SchemaNewer { .. } => "migration",
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

/// The model's refusals, variant for variant.
impl From<play_model::Error> for Error {
    fn from(error: play_model::Error) -> Self {
        use play_model::Error as M;
        match error {
            M::NotFound(what) => Error::NotFound(what),
            M::Validation(errors) => Error::Validation(errors),
            M::Locked(m) => Error::Locked(m),
            M::InvalidState(m) => Error::InvalidState(m),
            M::QuotaExceeded { resource, limit } => Error::QuotaExceeded { resource, limit },
            M::Conflict(m) => Error::Conflict(m),
            M::ScmAppRequired(m) => Error::ScmAppRequired(m),
            M::Forbidden { message, details } => Error::Forbidden { message, details },
            M::Crypto(m) => Error::Crypto(m),
            M::Corrupt { table, id, column, reason } => Error::Corrupt { table, id, column, reason },
            M::Internal(m) => Error::Internal(m),
        }
    }
}

/// A source host's failure, as the model reads it.
impl From<ScmError> for Error {
    fn from(error: ScmError) -> Self {
        play_model::Error::from(error).into()
    }
}
