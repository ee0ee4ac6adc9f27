//! Secrets at rest and the master key.
//!
//! The master key is 32 random bytes in a file outside the database (mode
//! 0600, created on first start). Everything else is derived from it with
//! HMAC-SHA256 under a purpose label, so the token pepper and the secret-box
//! key are independent even though one file holds the root.
//!
//! `SecretBox` seals values play must use later (SSH private keys, repository
//! tokens, registry and webhook secrets) with XChaCha20-Poly1305: a fresh
//! 24-byte random nonce per value (safe to draw at random at this size), and
//! the owning row's identity as associated data, so a sealed value copied
//! into another row or column does not open.

use std::io::Write;
use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use hmac::{Hmac, Mac};
use rand::RngCore;
use rand::rngs::OsRng;
use sha2::Sha256;

use crate::token::TokenPepper;
use crate::{Error, Result};

const SEALED_PREFIX: &str = "v1:";

#[derive(Clone)]
pub struct MasterKey([u8; 32]);

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey(..)")
    }
}

impl MasterKey {
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        MasterKey(bytes)
    }

    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        OsRng.fill_bytes(&mut bytes);
        MasterKey(bytes)
    }

    /// Reads the key file (64 hex characters), or creates it with mode 0600
    /// when it does not exist. Returns whether it was created.
    ///
    /// Processes starting at once with one key file (replicas on one host)
    /// must end up with one key: the new key is written to a file of its
    /// own (a random name) and linked into place, which fails if another process
    /// linked its key first; that key is then read. The file is never seen
    /// half written.
    pub fn load_or_create(path: &Path) -> Result<(Self, bool)> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse(text.trim()).map(|k| (k, false)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = Self::generate();
                let mut own = path.as_os_str().to_owned();
                own.push(format!(".{:016x}.new", OsRng.next_u64()));
                let own = std::path::PathBuf::from(own);
                write_private_file(&own, hex::encode(key.0).as_bytes())?;
                let linked = std::fs::hard_link(&own, path);
                let _ = std::fs::remove_file(&own);
                match linked {
                    Ok(()) => Ok((key, true)),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Self::load_or_create(path),
                    Err(e) => Err(Error::Crypto(format!("cannot create master key {}: {e}", path.display()))),
                }
            }
            Err(e) => Err(Error::Crypto(format!("cannot read master key {}: {e}", path.display()))),
        }
    }

    /// The key in `path`; `None` when there is no such file (never
    /// creates one: a restore checks the key the backup was sealed with).
    pub fn load(path: &Path) -> Result<Option<Self>> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse(text.trim()).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::Crypto(format!("cannot read master key {}: {e}", path.display()))),
        }
    }

    fn parse(text: &str) -> Result<Self> {
        let bytes = hex::decode(text).map_err(|_| Error::Crypto("master key file is not hex".into()))?;
        let bytes: [u8; 32] =
            bytes.try_into().map_err(|_| Error::Crypto("master key must be 32 bytes (64 hex characters)".into()))?;
        Ok(MasterKey(bytes))
    }

    fn derive(&self, purpose: &str) -> [u8; 32] {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
        mac.update(purpose.as_bytes());
        mac.finalize().into_bytes().into()
    }

    /// Names this key without revealing it (a one-way derivation under its
    /// own label): the store records it so that replicas started with
    /// different key files are caught at start (`store::master_key`).
    pub fn fingerprint(&self) -> String {
        hex::encode(&self.derive("play/master-key-fingerprint/v1")[..8])
    }

    pub fn token_pepper(&self) -> TokenPepper {
        TokenPepper::new(self.derive("play/api-token-pepper/v1"))
    }

    pub fn secret_box(&self) -> SecretBox {
        SecretBox {
            cipher: XChaCha20Poly1305::new(&self.derive("play/secret-box/v1").into()),
            image_key: ImageKey(self.derive("play/build-image-key/v1")),
        }
    }
}

/// The key that names built images (`crate::build`): the tag of
/// `play-build:<key>` is an HMAC under it, so nobody without the
/// installation's master key can compute the name of an image built from a
/// repository, even a public one. Never printed.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ImageKey([u8; 32]);

impl std::fmt::Debug for ImageKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ImageKey(..)")
    }
}

impl ImageKey {
    /// HMAC-SHA256 of `parts`, each followed by its length, as hex.
    pub fn mac_hex<'a>(&self, parts: impl IntoIterator<Item = &'a [u8]>) -> String {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
        for part in parts {
            mac.update(part);
            mac.update(&(part.len() as u64).to_le_bytes());
        }
        hex::encode(mac.finalize().into_bytes())
    }
}

/// Writes `contents` to a new file readable only by its owner. Refuses to
/// overwrite: these files hold secrets created once.
pub fn write_private_file(path: &Path, contents: &[u8]) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::Internal(format!("cannot create {}: {e}", dir.display())))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| Error::Internal(format!("cannot create {}: {e}", path.display())))?;
    file.write_all(contents).map_err(|e| Error::Internal(format!("cannot write {}: {e}", path.display())))?;
    Ok(())
}

/// Seals and opens secrets stored in the database.
#[derive(Clone)]
pub struct SecretBox {
    cipher: XChaCha20Poly1305,
    image_key: ImageKey,
}

impl std::fmt::Debug for SecretBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretBox(..)")
    }
}

impl SecretBox {
    /// The key that names built images ([`ImageKey`]).
    pub fn image_key(&self) -> ImageKey {
        self.image_key.clone()
    }

    /// Seals `plaintext`, bound to `context` (e.g. `"playroom:12:ssh_private_key"`).
    pub fn seal(&self, plaintext: &str, context: &str) -> Result<String> {
        let mut nonce = [0u8; 24];
        OsRng.fill_bytes(&mut nonce);
        let ciphertext = self
            .cipher
            .encrypt(XNonce::from_slice(&nonce), Payload { msg: plaintext.as_bytes(), aad: context.as_bytes() })
            .map_err(|_| Error::Crypto("encryption failed".into()))?;
        let mut blob = nonce.to_vec();
        blob.extend_from_slice(&ciphertext);
        Ok(format!("{SEALED_PREFIX}{}", STANDARD_NO_PAD.encode(blob)))
    }

    /// Opens a value sealed by `seal` with the same `context`.
    pub fn open(&self, sealed: &str, context: &str) -> Result<String> {
        let encoded =
            sealed.strip_prefix(SEALED_PREFIX).ok_or_else(|| Error::Crypto("unknown sealed format".into()))?;
        let blob = STANDARD_NO_PAD.decode(encoded).map_err(|_| Error::Crypto("sealed value is not base64".into()))?;
        if blob.len() < 24 + 16 {
            return Err(Error::Crypto("sealed value is truncated".into()));
        }
        let (nonce, ciphertext) = blob.split_at(24);
        let plaintext = self
            .cipher
            .decrypt(XNonce::from_slice(nonce), Payload { msg: ciphertext, aad: context.as_bytes() })
            .map_err(|_| Error::Crypto("secret does not open: wrong master key or wrong owner".into()))?;
        String::from_utf8(plaintext).map_err(|_| Error::Crypto("secret is not UTF-8".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_values_open_only_in_their_context_and_with_their_key() {
        let key = MasterKey::generate();
        let sealed = key.secret_box().seal("-----BEGIN OPENSSH PRIVATE KEY-----", "playroom:1:ssh").unwrap();
        assert!(!sealed.contains("OPENSSH"));
        assert_eq!(key.secret_box().open(&sealed, "playroom:1:ssh").unwrap(), "-----BEGIN OPENSSH PRIVATE KEY-----");
        assert!(key.secret_box().open(&sealed, "playroom:2:ssh").is_err());
        assert!(MasterKey::generate().secret_box().open(&sealed, "playroom:1:ssh").is_err());
    }

    #[test]
    fn sealing_twice_gives_different_ciphertexts() {
        let b = MasterKey::generate().secret_box();
        assert_ne!(b.seal("x", "c").unwrap(), b.seal("x", "c").unwrap());
    }

    #[test]
    fn key_file_is_created_once_with_mode_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/master.key");
        let (a, created) = MasterKey::load_or_create(&path).unwrap();
        assert!(created);
        let (b, created) = MasterKey::load_or_create(&path).unwrap();
        assert!(!created);
        assert_eq!(a.0, b.0);
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }

    /// Replicas on one host starting at once with one key file: before,
    /// the losers failed (the file existed) or read it half written.
    #[test]
    fn processes_creating_the_key_at_once_end_up_with_one() {
        for _ in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("master.key");
            let barrier = std::sync::Barrier::new(8);
            let results: Vec<(MasterKey, bool)> = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..8)
                    .map(|_| {
                        scope.spawn(|| {
                            barrier.wait();
                            MasterKey::load_or_create(&path).unwrap()
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            assert_eq!(results.iter().filter(|(_, created)| *created).count(), 1);
            assert!(results.iter().all(|(k, _)| k.0 == results[0].0.0));
            let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
            assert_eq!(left, ["master.key"], "no key file of a loser is left");
        }
    }

    #[test]
    fn a_damaged_key_file_is_an_error_not_a_new_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("master.key");
        std::fs::write(&path, "zz").unwrap();
        assert!(MasterKey::load_or_create(&path).is_err());
    }
}
