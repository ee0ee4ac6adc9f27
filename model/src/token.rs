//! API tokens.
//!
//! Format: `play_` + 30 base62 characters (about 178 bits from the OS RNG) +
//! 6 base62 characters of checksum (the first 32 bits of SHA-256 over the
//! random part). The checksum lets play reject typos and truncated tokens
//! without touching the store, and lets secret scanners recognise a real
//! token with few false positives.
//!
//! Invariant: the store never holds a token, only `HMAC-SHA256(pepper,
//! token)`; the pepper is derived from the master key, which lives outside
//! the database, so a database dump alone cannot be used to check guesses.

use hmac::{Hmac, Mac};
use rand::Rng;
use rand::rngs::OsRng;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

pub const TOKEN_PREFIX: &str = "play_";
const RANDOM_LEN: usize = 30;
const CHECKSUM_LEN: usize = 6;
pub const TOKEN_LEN: usize = TOKEN_PREFIX.len() + RANDOM_LEN + CHECKSUM_LEN;
pub const CLIENT_ID_PREFIX: &str = "pk_live_";
const CLIENT_ID_RANDOM_LEN: usize = 16;

const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// `len` base62 characters from the OS RNG (about 5.95 bits each).
pub fn random_base62(len: usize) -> String {
    let mut rng = OsRng;
    (0..len).map(|_| BASE62[rng.gen_range(0..BASE62.len())] as char).collect()
}

fn checksum(random: &str) -> String {
    let digest = Sha256::digest(random.as_bytes());
    let mut n = u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]) as u64;
    let mut out = [b'0'; CHECKSUM_LEN];
    for slot in out.iter_mut().rev() {
        *slot = BASE62[(n % 62) as usize];
        n /= 62;
    }
    out.iter().map(|b| *b as char).collect()
}

/// A freshly minted token and the public client id of its key.
#[derive(Clone)]
pub struct NewToken {
    pub token: String,
    pub client_id: String,
}

impl std::fmt::Debug for NewToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewToken").field("client_id", &self.client_id).finish_non_exhaustive()
    }
}

pub fn generate() -> NewToken {
    let random = random_base62(RANDOM_LEN);
    let token = format!("{TOKEN_PREFIX}{random}{}", checksum(&random));
    NewToken { token, client_id: format!("{CLIENT_ID_PREFIX}{}", random_base62(CLIENT_ID_RANDOM_LEN)) }
}

/// Whether `token` has play's shape and a correct checksum. A `false` here is
/// answered 401 without a store lookup.
pub fn is_well_formed(token: &str) -> bool {
    has_token_shape(token) && checksum_matches(token)
}

/// Whether `token` has play's shape (prefix, length, alphabet), its
/// checksum unchecked: enough to look it up among tokens already verified,
/// which only a token with the same MAC, so the same token, can match.
pub fn has_token_shape(token: &str) -> bool {
    token
        .strip_prefix(TOKEN_PREFIX)
        .is_some_and(|rest| rest.len() == RANDOM_LEN + CHECKSUM_LEN && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// Whether a token of play's shape ([`has_token_shape`]) carries the
/// checksum of its random part.
pub fn checksum_matches(token: &str) -> bool {
    let Some(rest) = token.strip_prefix(TOKEN_PREFIX) else {
        return false;
    };
    if rest.len() != RANDOM_LEN + CHECKSUM_LEN || !rest.is_char_boundary(RANDOM_LEN) {
        return false;
    }
    let (random, check) = rest.split_at(RANDOM_LEN);
    bool::from(checksum(random).as_bytes().ct_eq(check.as_bytes()))
}

/// The server-side secret that keys token digests.
#[derive(Clone)]
pub struct TokenPepper([u8; 32]);

impl std::fmt::Debug for TokenPepper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenPepper(..)")
    }
}

impl TokenPepper {
    pub fn new(key: [u8; 32]) -> Self {
        TokenPepper(key)
    }

    /// The stored digest of a token: lowercase hex HMAC-SHA256.
    pub fn digest(&self, token: &str) -> String {
        digest_text(&self.mac(token))
    }

    /// HMAC-SHA256 of a token: [`Self::digest`] before it is written out.
    pub fn mac(&self, token: &str) -> [u8; 32] {
        // HMAC accepts keys of any length: this cannot fail.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
        mac.update(token.as_bytes());
        mac.finalize().into_bytes().into()
    }
}

/// The stored form of a token's MAC ([`TokenPepper::mac`]): lowercase hex.
pub fn digest_text(mac: &[u8; 32]) -> String {
    hex::encode(mac)
}

/// Constant-time equality of two digests, used after the indexed lookup so
/// the final decision does not depend on where two digests first differ.
pub fn digests_match(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tokens_are_well_formed_and_distinct() {
        let a = generate();
        let b = generate();
        assert_eq!(a.token.len(), TOKEN_LEN);
        assert!(is_well_formed(&a.token));
        assert_ne!(a.token, b.token);
        assert!(a.client_id.starts_with("pk_live_"));
        assert_eq!(a.client_id.len(), 8 + 16);
    }

    #[test]
    fn a_changed_character_breaks_the_checksum() {
        let token = generate().token;
        let mut bytes = token.into_bytes();
        let i = TOKEN_PREFIX.len() + 3;
        bytes[i] = if bytes[i] == b'a' { b'b' } else { b'a' };
        assert!(!is_well_formed(&String::from_utf8(bytes).unwrap()));
    }

    #[test]
    fn malformed_tokens_are_refused() {
        for bad in ["", "play_", "nope_abc", "play_!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"] {
            assert!(!is_well_formed(bad), "{bad}");
        }
        let token = generate().token;
        assert!(!is_well_formed(&token[..token.len() - 1]));
    }

    #[test]
    fn digest_depends_on_the_pepper() {
        let token = generate().token;
        let a = TokenPepper::new([1; 32]).digest(&token);
        let b = TokenPepper::new([2; 32]).digest(&token);
        assert_ne!(a, b);
        assert_eq!(a.len(), 64);
        assert!(digests_match(&a, &TokenPepper::new([1; 32]).digest(&token)));
        assert!(!digests_match(&a, &b));
    }

    #[test]
    fn debug_never_shows_the_token() {
        let t = generate();
        assert!(!format!("{t:?}").contains(&t.token));
    }
}
