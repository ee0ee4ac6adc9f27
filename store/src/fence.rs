//! Fenced writes: the lease a reconciler's write is fenced by ([`Fence`])
//! and what such a write returns ([`Fenced`]).
//!
//! A fenced write runs in one transaction that first checks the caller's
//! reconcile lease (`leases::begin_fenced`). A replica that lost its lease
//! writes nothing and gets [`Fenced::Lost`]; that answer is `#[must_use]`
//! and is not a `bool`, so a caller cannot read it as "nothing to do" by
//! accident: it either matches on it or turns it into an error with
//! [`Fenced::held`] (`write(..).await?.held()?`, the reconcilers' error
//! converts [`LeaseLost`]).
//!
//! Owns these two types only; which writes are fenced, and what they write,
//! is the business of `playground_status` and `job_results`. Imports no
//! other store module.

/// The lease a write is fenced by: the reconciler's name, this replica and
/// the token of its current claim.
#[derive(Clone, Copy, Debug)]
pub struct Fence<'a> {
    pub reconciler: &'a str,
    pub owner: &'a str,
    pub token: i64,
}

/// The outcome of a fenced write: the lease still held (the write's own
/// answer `T`), or it was lost and nothing was written.
#[must_use = "a lost lease must stop the pass: match on it or call `.held()?`"]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fenced<T = ()> {
    /// The lease held; the write's answer.
    Held(T),
    /// The lease was lost: nothing was written.
    Lost,
}

/// A fenced write found the lease lost (see [`Fenced::held`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the reconcile lease was lost")]
pub struct LeaseLost;

impl<T> Fenced<T> {
    /// The write's answer, or [`LeaseLost`] for `?`.
    pub fn held(self) -> Result<T, LeaseLost> {
        match self {
            Fenced::Held(value) => Ok(value),
            Fenced::Lost => Err(LeaseLost),
        }
    }

    /// The write's answer turned by `f`; [`Fenced::Lost`] stays lost.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Fenced<U> {
        match self {
            Fenced::Held(value) => Fenced::Held(f(value)),
            Fenced::Lost => Fenced::Lost,
        }
    }

    pub fn is_held(&self) -> bool {
        matches!(self, Fenced::Held(_))
    }

    pub fn is_lost(&self) -> bool {
        matches!(self, Fenced::Lost)
    }
}
