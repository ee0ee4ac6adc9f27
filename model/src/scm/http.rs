//! Git's smart HTTP protocol for a host's repositories, as a seam: the API
//! authenticates and authorises a request, the host (play's own Git host:
//! `play_git::smart_http`) speaks the protocol. Bodies stream both ways:
//! a clone of a large repository never sits in memory.

use std::fmt;

use async_trait::async_trait;

use super::{FullName, ScmError};

/// A body as a stream of bytes.
pub type ByteReader = Box<dyn tokio::io::AsyncRead + Send + Unpin>;

/// Which of the protocol's services a request is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Service {
    /// Fetch and clone.
    UploadPack,
    /// Push.
    ReceivePack,
}

impl Service {
    pub fn as_str(self) -> &'static str {
        match self {
            Service::UploadPack => "git-upload-pack",
            Service::ReceivePack => "git-receive-pack",
        }
    }

    pub fn parse(text: &str) -> Option<Service> {
        match text {
            "git-upload-pack" => Some(Service::UploadPack),
            "git-receive-pack" => Some(Service::ReceivePack),
            _ => None,
        }
    }
}

/// One request of the protocol, already authorised: `GET info/refs` (the
/// advertisement) or `POST <service>` (the exchange).
pub struct GitHttpRequest {
    pub service: Service,
    /// `true` for `GET info/refs?service=...`, `false` for the `POST`.
    pub advertisement: bool,
    pub content_type: Option<String>,
    /// `gzip` when the client compressed the request.
    pub content_encoding: Option<String>,
    pub body: ByteReader,
    /// Who pushes (the account's name): the protocol refuses a push
    /// without one.
    pub remote_user: Option<String>,
    /// The caller refuses this push (the account's switch for the host is
    /// off), for this reason: the host answers with Git's own error line
    /// (`ERR` to the advertisement, a rejected report to the push itself)
    /// and runs nothing. Ignored for fetches.
    pub refusal: Option<String>,
}

impl fmt::Debug for GitHttpRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GitHttpRequest")
            .field("service", &self.service)
            .field("advertisement", &self.advertisement)
            .field("remote_user", &self.remote_user)
            .field("refusal", &self.refusal)
            .finish_non_exhaustive()
    }
}

/// A branch a push moved: `old` `None` when created, `new` `None` when
/// deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BranchMove {
    pub branch: String,
    pub old: Option<String>,
    pub new: Option<String>,
}

/// The protocol's answer.
pub struct GitHttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// Ends only once the host's work for the request is over (its Git
    /// process has exited), so a client that read the whole answer may
    /// rely on the host being free again.
    pub body: ByteReader,
    /// For a push the host ran: the branches it moved, once the host has
    /// taken the pack in and its process has exited; sent whether or not
    /// the body is read. `None` for a fetch or a push the host refused.
    pub moved: Option<tokio::sync::oneshot::Receiver<Vec<BranchMove>>>,
}

impl fmt::Debug for GitHttpResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GitHttpResponse").field("status", &self.status).field("headers", &self.headers).finish()
    }
}

/// A host that serves its repositories over Git's smart HTTP.
#[async_trait]
pub trait GitHttp: Send + Sync {
    async fn serve(&self, full: &FullName, request: GitHttpRequest) -> Result<GitHttpResponse, ScmError>;
}
