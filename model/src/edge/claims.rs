//! Who gets a host name that several Playgrounds on one Playroom route.
//!
//! The oldest claim wins: a Playground claims a host when the edge first
//! sees one of its services routed under it, and keeps the claim (and its
//! time) for as long as it keeps routing that host. Every other
//! Playground's routes for the host are held back, and say which
//! Playground holds it. Ties (claims made in one pass) go to the lower
//! Playground id. The edge reconciler is the only writer of claims and
//! decides all of a Playroom's hosts in one pass, so two Playgrounds cannot
//! take a host from each other back and forth.

use std::collections::BTreeMap;

use crate::time::Timestamp;

/// A route that wants a host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wanted {
    pub playground_id: i64,
    pub service: String,
    pub host: String,
}

/// A claim as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    pub playground_id: i64,
    pub service: String,
    pub host: String,
    pub claimed_at: Timestamp,
}

/// The outcome for one wanted route.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub claim: Claim,
    /// `None`: the route is served. `Some(id)`: Playground `id` holds the
    /// host, and this route is held back.
    pub lost_to: Option<i64>,
}

/// Decides every wanted route of a Playroom against the stored claims, in
/// the order of `wanted`. A route keeps its stored claim time while its
/// host is unchanged; a new or changed host is claimed at `now`.
pub fn decide(wanted: &[Wanted], stored: &[Claim], now: Timestamp) -> Vec<Decision> {
    let previous: BTreeMap<(i64, &str), &Claim> =
        stored.iter().map(|c| ((c.playground_id, c.service.as_str()), c)).collect();
    let claims: Vec<Claim> = wanted
        .iter()
        .map(|w| {
            let claimed_at = previous
                .get(&(w.playground_id, w.service.as_str()))
                .filter(|c| c.host == w.host)
                .map_or(now, |c| c.claimed_at);
            Claim { playground_id: w.playground_id, service: w.service.clone(), host: w.host.clone(), claimed_at }
        })
        .collect();
    // The holder of each host: the Playground whose earliest claim on it is
    // the oldest, then the lowest id.
    let mut holders: BTreeMap<&str, (Timestamp, i64)> = BTreeMap::new();
    for claim in &claims {
        let key = (claim.claimed_at, claim.playground_id);
        holders.entry(claim.host.as_str()).and_modify(|h| *h = (*h).min(key)).or_insert(key);
    }
    claims
        .iter()
        .map(|claim| {
            let holder = holders.get(claim.host.as_str()).map_or(claim.playground_id, |h| h.1);
            Decision { claim: claim.clone(), lost_to: (holder != claim.playground_id).then_some(holder) }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        chrono::DateTime::from_timestamp(1_700_000_000 + secs, 0).unwrap()
    }

    fn want(playground_id: i64, service: &str, host: &str) -> Wanted {
        Wanted { playground_id, service: service.into(), host: host.into() }
    }

    fn claim(playground_id: i64, service: &str, host: &str, secs: i64) -> Claim {
        Claim { playground_id, service: service.into(), host: host.into(), claimed_at: at(secs) }
    }

    fn losers(decisions: &[Decision]) -> Vec<(i64, &str, Option<i64>)> {
        decisions.iter().map(|d| (d.claim.playground_id, d.claim.service.as_str(), d.lost_to)).collect()
    }

    #[test]
    fn the_oldest_claim_keeps_the_host_whatever_the_ids() {
        let wanted = [want(1, "web", "app.example.com"), want(2, "web", "app.example.com")];
        // Playground 2 claimed first: it keeps the host, though 1 is older.
        let stored = [claim(2, "web", "app.example.com", 10)];
        let d = decide(&wanted, &stored, at(100));
        assert_eq!(losers(&d), [(1, "web", Some(2)), (2, "web", None)]);
        assert_eq!(d[0].claim.claimed_at, at(100));
        assert_eq!(d[1].claim.claimed_at, at(10));
        // Deciding again with what was stored gives the same answer: no flapping.
        let stored: Vec<Claim> = d.iter().map(|x| x.claim.clone()).collect();
        let again = decide(&wanted, &stored, at(200));
        assert_eq!(losers(&again), losers(&d));
    }

    #[test]
    fn simultaneous_claims_go_to_the_lower_id_and_one_playground_may_share_its_host() {
        let wanted =
            [want(8, "web", "a.example.com"), want(5, "api", "a.example.com"), want(5, "web", "a.example.com")];
        let d = decide(&wanted, &[], at(0));
        assert_eq!(losers(&d), [(8, "web", Some(5)), (5, "api", None), (5, "web", None)]);
    }

    #[test]
    fn a_changed_host_is_a_new_claim_and_a_released_host_passes_on() {
        let stored = [claim(1, "web", "old.example.com", 0), claim(2, "web", "new.example.com", 5)];
        // 1 moves to the host 2 holds: 2's claim is older.
        let d = decide(&[want(1, "web", "new.example.com"), want(2, "web", "new.example.com")], &stored, at(50));
        assert_eq!(losers(&d), [(1, "web", Some(2)), (2, "web", None)]);
        // 2 is gone: 1 gets the host.
        let d = decide(&[want(1, "web", "new.example.com")], &stored, at(60));
        assert_eq!(losers(&d), [(1, "web", None)]);
    }
}
