//! SSH key material for Playrooms: validating a user's private key, generating
//! Ed25519 pairs, and host key fingerprints and pins.
//!
//! The `ssh-key` crate used here is the exact build russh 0.54 uses
//! (`internal-russh-forked-ssh-key`, re-exported by russh as
//! `russh::keys::ssh_key`), so a key parsed here is the same Rust type the
//! host gateway hands to russh, and nothing is compiled twice.
//!
//! Every private key accepted is normalised to the OpenSSH format
//! (`-----BEGIN OPENSSH PRIVATE KEY-----`), the one format the host gateway
//! reads. Legacy PEM keys are converted: PKCS#1 RSA (`BEGIN RSA PRIVATE KEY`)
//! and unencrypted PKCS#8 (`BEGIN PRIVATE KEY`) with an RSA or Ed25519 key.
//! Passphrase-protected keys are refused: play must use the key unattended,
//! and the key is encrypted at rest by play itself.

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rand::RngCore as _;
use ssh_key::private::{Ed25519Keypair, KeypairData, RsaKeypair, RsaPrivateKey};
use ssh_key::public::RsaPublicKey;
use ssh_key::{Algorithm, Fingerprint, HashAlg, LineEnding, Mpint, PrivateKey, PublicKey};

pub use ssh_key;

/// Smallest RSA modulus accepted, in bits (OpenSSH's own floor is 1024; 2048
/// is what every current guideline asks for).
pub const MIN_RSA_BITS: usize = 2048;

/// Why a key was refused. Each message tells the user what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("not a private key: {0}")]
    NotAPrivateKey(String),
    #[error(
        "the private key is protected by a passphrase, which play cannot use unattended; \
         remove it with `ssh-keygen -p -N \"\" -f <file>` (play encrypts the key at rest)"
    )]
    Encrypted,
    #[error("unsupported key type: {0}")]
    UnsupportedType(String),
    #[error("malformed key: {0}")]
    Malformed(String),
}

/// A validated private key, normalised to OpenSSH format. `Debug` redacts
/// the private half.
#[derive(Clone)]
pub struct ParsedPrivateKey {
    /// The private key in OpenSSH format: what to encrypt and store.
    pub private_openssh: String,
    /// The public half as an `authorized_keys` line (`ssh-ed25519 AAAA... comment`).
    pub public_openssh: String,
    /// `SHA256:...` fingerprint of the public half.
    pub fingerprint: String,
    /// SSH algorithm name, e.g. `ssh-ed25519`, `ssh-rsa`.
    pub algorithm: String,
}

impl fmt::Debug for ParsedPrivateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParsedPrivateKey")
            .field("private_openssh", &"<redacted>")
            .field("public_openssh", &self.public_openssh)
            .field("fingerprint", &self.fingerprint)
            .field("algorithm", &self.algorithm)
            .finish()
    }
}

/// Validates a user-supplied private key and normalises it to OpenSSH format.
pub fn parse_private_key(input: &str) -> Result<ParsedPrivateKey, KeyError> {
    let text = input.trim();
    let Some(label) = pem_label(text) else {
        if PublicKey::from_openssh(text).is_ok() {
            return Err(KeyError::NotAPrivateKey(
                "this is a public key; paste the private half (the file without .pub)".into(),
            ));
        }
        if text.starts_with("PuTTY-User-Key-File") {
            return Err(KeyError::UnsupportedType("PuTTY keys; export it in OpenSSH format with PuTTYgen".into()));
        }
        return Err(KeyError::NotAPrivateKey(
            "expected a PEM block such as -----BEGIN OPENSSH PRIVATE KEY-----".into(),
        ));
    };
    let key = match label {
        "OPENSSH PRIVATE KEY" => {
            let key = PrivateKey::from_openssh(text).map_err(|e| match e {
                ssh_key::Error::AlgorithmUnknown | ssh_key::Error::AlgorithmUnsupported { .. } => {
                    KeyError::UnsupportedType(e.to_string())
                }
                other => KeyError::Malformed(other.to_string()),
            })?;
            if key.is_encrypted() {
                return Err(KeyError::Encrypted);
            }
            key
        }
        "RSA PRIVATE KEY" => {
            if text.contains("Proc-Type: 4,ENCRYPTED") {
                return Err(KeyError::Encrypted);
            }
            rsa_from_pkcs1(&pem_body(text)?)?
        }
        "PRIVATE KEY" => from_pkcs8(&pem_body(text)?)?,
        "ENCRYPTED PRIVATE KEY" => return Err(KeyError::Encrypted),
        "EC PRIVATE KEY" | "DSA PRIVATE KEY" => {
            return Err(KeyError::UnsupportedType(format!(
                "{label} in PEM format; convert it with `ssh-keygen -p -f <file>`, \
                 which rewrites it in OpenSSH format"
            )));
        }
        "PUBLIC KEY" | "RSA PUBLIC KEY" | "CERTIFICATE" => {
            return Err(KeyError::NotAPrivateKey(format!("found a {label}")));
        }
        other => {
            return Err(KeyError::NotAPrivateKey(format!("unexpected PEM block {other}")));
        }
    };
    check_algorithm(&key)?;
    describe(&key)
}

/// A freshly generated Ed25519 pair. `Debug` redacts the private half.
#[derive(Clone)]
pub struct GeneratedKeyPair {
    /// OpenSSH-format private key, to encrypt and store.
    pub private_openssh: String,
    /// `ssh-ed25519 AAAA... <comment>`, for the host's `authorized_keys`.
    pub public_openssh: String,
    pub fingerprint: String,
}

impl fmt::Debug for GeneratedKeyPair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GeneratedKeyPair")
            .field("private_openssh", &"<redacted>")
            .field("public_openssh", &self.public_openssh)
            .field("fingerprint", &self.fingerprint)
            .finish()
    }
}

/// Generates an Ed25519 key pair from the operating system's RNG; `comment`
/// ends the public line (`play` unless the caller has a better name).
pub fn generate_ed25519(comment: &str) -> Result<GeneratedKeyPair, KeyError> {
    let mut seed = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut seed);
    let keypair = Ed25519Keypair::from_seed(&seed);
    seed.fill(0);
    let key =
        PrivateKey::new(KeypairData::Ed25519(keypair), comment).map_err(|e| KeyError::Malformed(e.to_string()))?;
    let parsed = describe(&key)?;
    Ok(GeneratedKeyPair {
        private_openssh: parsed.private_openssh,
        public_openssh: parsed.public_openssh,
        fingerprint: parsed.fingerprint,
    })
}

/// `SHA256:...` fingerprint of a public key given as an OpenSSH line
/// (`ssh-ed25519 AAAA... [comment]`), as `ssh-keygen -lf` prints it.
pub fn public_key_fingerprint(public_openssh: &str) -> Result<String, KeyError> {
    let key = PublicKey::from_openssh(public_openssh.trim())
        .map_err(|e| KeyError::Malformed(format!("not an OpenSSH public key: {e}")))?;
    Ok(key.fingerprint(HashAlg::Sha256).to_string())
}

/// A pinned host key, in either form a Playroom may store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostKeyPin {
    /// The whole public key: matches exactly that key, and tells the client
    /// which host key algorithm to ask for.
    Key(PublicKey),
    /// Only its SHA-256 fingerprint.
    Fingerprint(Fingerprint),
}

impl HostKeyPin {
    /// Accepts a `SHA256:...` fingerprint, an OpenSSH public key line, or a
    /// `known_hosts` / `ssh-keyscan` line (`host ssh-ed25519 AAAA...`).
    pub fn parse(input: &str) -> Result<Self, KeyError> {
        let text = input.trim();
        if text.starts_with("SHA256:") {
            return Fingerprint::from_str(text)
                .map(HostKeyPin::Fingerprint)
                .map_err(|e| KeyError::Malformed(format!("bad SHA256 fingerprint: {e}")));
        }
        if let Ok(key) = PublicKey::from_openssh(text) {
            return Ok(HostKeyPin::Key(key));
        }
        // known_hosts: drop the host field(s) and retry.
        if let Some((_, rest)) = text.split_once(char::is_whitespace)
            && let Ok(key) = PublicKey::from_openssh(rest.trim())
        {
            return Ok(HostKeyPin::Key(key));
        }
        Err(KeyError::Malformed("a host key is a SHA256:... fingerprint or an OpenSSH public key line".into()))
    }

    /// Whether `presented` is the pinned key. Comments never matter.
    pub fn matches(&self, presented: &PublicKey) -> bool {
        match self {
            HostKeyPin::Key(key) => key.key_data() == presented.key_data(),
            HostKeyPin::Fingerprint(fp) => presented.fingerprint(HashAlg::Sha256) == *fp,
        }
    }

    /// The algorithm to request in the key exchange, when the pin knows it.
    pub fn algorithm(&self) -> Option<Algorithm> {
        match self {
            HostKeyPin::Key(key) => Some(key.algorithm()),
            HostKeyPin::Fingerprint(_) => None,
        }
    }

    /// The pin as `SHA256:...`.
    pub fn fingerprint(&self) -> String {
        match self {
            HostKeyPin::Key(key) => key.fingerprint(HashAlg::Sha256).to_string(),
            HostKeyPin::Fingerprint(fp) => fp.to_string(),
        }
    }
}

/// The OpenSSH line of a public key, without its comment (host keys carry
/// none worth keeping).
pub fn public_key_line(key: &PublicKey) -> String {
    let mut key = key.clone();
    key.set_comment("");
    key.to_openssh().unwrap_or_else(|_| key.fingerprint(HashAlg::Sha256).to_string())
}

fn check_algorithm(key: &PrivateKey) -> Result<(), KeyError> {
    match key.key_data() {
        KeypairData::Ed25519(_) | KeypairData::Ecdsa(_) => Ok(()),
        KeypairData::Rsa(rsa) => {
            let bits = rsa.public.n.as_positive_bytes().map(|n| n.len() * 8).unwrap_or(0);
            if bits < MIN_RSA_BITS {
                Err(KeyError::UnsupportedType(format!(
                    "RSA keys shorter than {MIN_RSA_BITS} bits (this one has about {bits})"
                )))
            } else {
                Ok(())
            }
        }
        _ => Err(KeyError::UnsupportedType(format!(
            "{}; use Ed25519, ECDSA or RSA (at least {MIN_RSA_BITS} bits)",
            key.algorithm()
        ))),
    }
}

fn describe(key: &PrivateKey) -> Result<ParsedPrivateKey, KeyError> {
    let private_openssh = key.to_openssh(LineEnding::LF).map_err(|e| KeyError::Malformed(e.to_string()))?.to_string();
    let public = key.public_key();
    let public_openssh = public.to_openssh().map_err(|e| KeyError::Malformed(e.to_string()))?;
    Ok(ParsedPrivateKey {
        private_openssh,
        public_openssh,
        fingerprint: public.fingerprint(HashAlg::Sha256).to_string(),
        algorithm: key.algorithm().as_str().to_owned(),
    })
}

/// The label of the first PEM block, if the text starts with one.
fn pem_label(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("-----BEGIN ")?;
    let end = rest.find("-----")?;
    Some(&rest[..end])
}

/// The base64 body of a PEM block, headers (`Proc-Type: ...`) skipped.
fn pem_body(text: &str) -> Result<Vec<u8>, KeyError> {
    let body: String =
        text.lines().filter(|line| !line.starts_with("-----") && !line.contains(':')).map(str::trim).collect();
    STANDARD.decode(body).map_err(|e| KeyError::Malformed(format!("PEM body is not base64: {e}")))
}

const OID_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
const OID_ED25519: &[u8] = &[0x2b, 0x65, 0x70];
const OID_EC: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];

/// PKCS#8 `PrivateKeyInfo`: version, algorithm identifier, key octets.
fn from_pkcs8(der: &[u8]) -> Result<PrivateKey, KeyError> {
    let mut info = Der::new(der).sequence()?;
    info.integer()?;
    let mut algorithm = info.sequence()?;
    let oid = algorithm.take(0x06)?;
    let key = info.take(0x04)?;
    if oid == OID_RSA {
        rsa_from_pkcs1(key)
    } else if oid == OID_ED25519 {
        let seed = Der::new(key).take(0x04)?;
        let seed: &[u8; 32] =
            seed.try_into().map_err(|_| KeyError::Malformed("Ed25519 seed is not 32 bytes".into()))?;
        PrivateKey::new(KeypairData::Ed25519(Ed25519Keypair::from_seed(seed)), "")
            .map_err(|e| KeyError::Malformed(e.to_string()))
    } else if oid == OID_EC {
        Err(KeyError::UnsupportedType(
            "ECDSA in PKCS#8 PEM format; convert it with `ssh-keygen -p -f <file>`, \
             which rewrites it in OpenSSH format"
                .into(),
        ))
    } else {
        Err(KeyError::UnsupportedType("PKCS#8 key of an algorithm other than RSA, Ed25519 or ECDSA".into()))
    }
}

/// PKCS#1 `RSAPrivateKey`: version, n, e, d, p, q, dP, dQ, qInv.
fn rsa_from_pkcs1(der: &[u8]) -> Result<PrivateKey, KeyError> {
    let mut seq = Der::new(der).sequence()?;
    seq.integer()?;
    let mut next = || -> Result<Mpint, KeyError> {
        Mpint::from_positive_bytes(strip_zeros(seq.integer()?))
            .map_err(|e| KeyError::Malformed(format!("RSA component: {e}")))
    };
    let (n, e, d, p, q) = (next()?, next()?, next()?, next()?, next()?);
    let (_dp, _dq, iqmp) = (next()?, next()?, next()?);
    let keypair = RsaKeypair { public: RsaPublicKey { e, n }, private: RsaPrivateKey { d, iqmp, p, q } };
    PrivateKey::new(KeypairData::Rsa(keypair), "").map_err(|e| KeyError::Malformed(e.to_string()))
}

fn strip_zeros(mut bytes: &[u8]) -> &[u8] {
    while let [0, rest @ ..] = bytes {
        bytes = rest;
    }
    bytes
}

/// Just enough DER to read the key structures above: definite lengths,
/// one-byte tags.
struct Der<'a> {
    rest: &'a [u8],
}

impl<'a> Der<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Der { rest: bytes }
    }

    fn take(&mut self, tag: u8) -> Result<&'a [u8], KeyError> {
        let malformed = || KeyError::Malformed("truncated or invalid DER".into());
        let [found, first, rest @ ..] = self.rest else {
            return Err(malformed());
        };
        if *found != tag {
            return Err(KeyError::Malformed(format!("DER tag {found:#04x} where {tag:#04x} was expected")));
        }
        let (len, rest) = if first & 0x80 == 0 {
            (usize::from(*first), rest)
        } else {
            let count = usize::from(first & 0x7f);
            if count == 0 || count > 4 || rest.len() < count {
                return Err(malformed());
            }
            let len = rest[..count].iter().fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
            (len, &rest[count..])
        };
        if rest.len() < len {
            return Err(malformed());
        }
        let (value, after) = rest.split_at(len);
        self.rest = after;
        Ok(value)
    }

    fn sequence(&mut self) -> Result<Der<'a>, KeyError> {
        self.take(0x30).map(Der::new)
    }

    fn integer(&mut self) -> Result<&'a [u8], KeyError> {
        self.take(0x02)
    }
}

#[cfg(test)]
mod tests;
