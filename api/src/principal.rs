//! Who is calling, after authentication: what `auth` resolves a credential
//! to and hands to handlers. Its own module so that the key cache, which
//! stores principals, and `auth`, which fills the cache, do not import each
//! other.

use play_model::model::event::{Acting, Actor};
use play_model::scopes::ScopeSet;
use play_model::time;

/// Who is calling, after authentication.
#[derive(Clone, Debug)]
pub struct Principal {
    pub account_id: i64,
    pub user_id: i64,
    /// The API key used (a session acts with the key it was signed in with).
    pub key_id: i64,
    pub scopes: ScopeSet,
    /// When the key used stops working: keys it creates may not outlive it.
    pub expires_at: Option<time::Timestamp>,
    /// The browser session the request came with, if it did (not a bearer
    /// key): the GitHub install flow binds its state to it.
    pub session_id: Option<i64>,
}

impl Principal {
    /// The principal of a browser session: its key's account and scopes.
    pub fn of_session(session: &play_model::model::session::Session) -> Principal {
        Principal {
            account_id: session.account_id,
            user_id: session.user_id,
            key_id: session.key_id,
            scopes: session.scopes,
            expires_at: session.key_expires_at,
            session_id: Some(session.id),
        }
    }

    /// The actor recorded on events this request causes.
    pub fn actor(&self) -> Actor {
        Actor::ApiKey(self.key_id)
    }

    /// The account this request acts in, with [`Principal::actor`].
    pub fn acting(&self) -> Acting {
        Acting::new(self.account_id, self.actor())
    }

    /// Whom server-side apply runs for: this key, its account and scopes.
    pub fn for_apply(&self) -> play_core::apply::Principal {
        play_core::apply::Principal { account_id: self.account_id, key_id: self.key_id, scopes: self.scopes }
    }
}
