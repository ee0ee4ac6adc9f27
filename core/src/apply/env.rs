//! What server-side apply runs with: the replica's store, secrets, CPU
//! pool and settings ([`Env`]), and whom it runs for
//! ([`Principal`]). The API builds both from its state and the request's
//! key; apply never sees HTTP.

use std::time::Duration;

use play_model::model::event::{Acting, Actor};
use play_model::scopes::ScopeSet;
use play_model::secrets::SecretBox;
use play_model::token::TokenPepper;
use play_model::webhook::url::UrlPolicy;
use play_store::Store;

use crate::cpu::CpuPool;
use crate::playground::launch::Limits;

/// The replica's side of an apply.
#[derive(Clone, Copy, Debug)]
pub struct Env<'a> {
    pub store: &'a Store,
    pub secrets: &'a SecretBox,
    /// Digests secret values for the diff (`Cx::redact`).
    pub pepper: &'a TokenPepper,
    /// Where Compose and template checks run, off the async threads.
    pub cpu: &'a CpuPool,
    /// Quotas, lifetimes, the repository policy and the source hosts.
    pub limits: Limits<'a>,
    /// Whether a Playroom may name a loopback or private host.
    pub allow_local_playrooms: bool,
    /// The shortest interval a template's schedule may run at.
    pub schedule_min_interval: Duration,
    /// Where webhook endpoints may point.
    pub webhook_urls: &'a UrlPolicy,
}

/// Whom an apply runs for: the account, the key that acts (recorded on
/// every event) and the scopes it holds (checked per kind, and for
/// operator-only settings such as a Playroom's trust).
#[derive(Clone, Debug)]
pub struct Principal {
    pub account_id: i64,
    pub key_id: i64,
    pub scopes: ScopeSet,
}

impl Principal {
    pub fn actor(&self) -> Actor {
        Actor::ApiKey(self.key_id)
    }

    pub fn acting(&self) -> Acting {
        Acting::new(self.account_id, self.actor())
    }
}
