//! A reconcile lease as stored (`store::leases` holds the claim, renew
//! and fencing queries).

use crate::time::Timestamp;

/// A lease as its holder knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    pub reconciler: String,
    pub object_id: i64,
    pub owner: String,
    /// The fencing token: higher for every later claim of this object.
    pub token: i64,
    pub expires_at: Timestamp,
}
