//! The one error type of `play-backup`.

/// What a backup or a restore can fail with. Messages name the file, the
/// versions or the key involved and what to do; they never hold a secret
/// (a database URL is shown redacted).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] play_store::Error),
    /// The archive cannot be read whole or does not match its manifest.
    #[error("the archive is damaged: {0}")]
    Damaged(String),
    /// The restore refuses to run: the target, the key or the versions
    /// do not allow it.
    #[error("{0}")]
    Refused(String),
    /// `pg_dump` or `pg_restore` failed or could not run.
    #[error("{0}")]
    Tool(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An I/O error with what was being done.
    pub fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let context = context.into();
        move |source| Error::Io { context, source }
    }
}
