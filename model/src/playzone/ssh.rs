//! Playzones on ssh URLs (issue #52, item 2): the deploy key a Playzone
//! reads its repository with, given in `credentials` or made by
//! `POST /api/playzones/{id}/generate_ssh_key`.
//!
//! The key is checked and normalised as a Playroom's is
//! ([`crate::ssh_keys::parse_private_key`]: unencrypted Ed25519, ECDSA or
//! RSA of at least 2048 bits, in OpenSSH or PEM form), sealed in the
//! store like a token, and never answered; its public half is shown, so
//! the owner can add it to the repository's deploy keys.

/// The largest deploy key accepted in `credentials`, in bytes (an RSA
/// 4096 key in PEM form is about 3.3 KiB).
pub const MAX_DEPLOY_KEY_BYTES: usize = 16 * 1024;

/// A deploy key given in `credentials`, normalised to OpenSSH form; the
/// message says what is wrong (never echoing the key).
pub fn deploy_key(text: &str) -> Result<String, String> {
    if text.len() > MAX_DEPLOY_KEY_BYTES {
        return Err(format!("a deploy key is at most {MAX_DEPLOY_KEY_BYTES} bytes"));
    }
    crate::ssh_keys::parse_private_key(text).map(|k| k.private_openssh).map_err(|e| {
        format!(
            "for an ssh scm_url, credentials is the deploy key's private half ({e}); or leave it out and call \
             POST /api/playzones/{{id}}/generate_ssh_key"
        )
    })
}

/// The public half of a normalised deploy key, as an `authorized_keys`
/// line (what the view shows).
pub fn public_half(private_openssh: &str) -> Option<String> {
    crate::ssh_keys::parse_private_key(private_openssh).ok().map(|k| k.public_openssh)
}

/// A host key to pin, as `PATCH` takes it: an OpenSSH public key line, a
/// `known_hosts` / `ssh-keyscan` line or a `SHA256:` fingerprint,
/// normalised (a key line without its comment, or the fingerprint).
pub fn host_key_pin(text: &str) -> Result<String, String> {
    if text.len() > MAX_DEPLOY_KEY_BYTES {
        return Err(format!("must be at most {MAX_DEPLOY_KEY_BYTES} bytes"));
    }
    match crate::ssh_keys::HostKeyPin::parse(text).map_err(|e| e.to_string())? {
        crate::ssh_keys::HostKeyPin::Key(key) => Ok(crate::ssh_keys::public_key_line(&key)),
        pin @ crate::ssh_keys::HostKeyPin::Fingerprint(_) => Ok(pin.fingerprint()),
    }
}

/// The `SHA256:` fingerprint of a stored pin (what the view shows).
pub fn pin_fingerprint(pin: &str) -> Option<String> {
    crate::ssh_keys::HostKeyPin::parse(pin).ok().map(|p| p.fingerprint())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deploy_key_is_checked_and_never_echoed() {
        let pair = crate::ssh_keys::generate_ed25519("t").unwrap();
        let key = deploy_key(&pair.private_openssh).unwrap();
        assert_eq!(public_half(&key).unwrap().split_whitespace().nth(1), pair.public_openssh.split_whitespace().nth(1));
        let err = deploy_key("glpat-not-a-key").unwrap_err();
        assert!(err.contains("generate_ssh_key") && !err.contains("glpat"), "{err}");
        assert!(deploy_key(&pair.public_openssh).unwrap_err().contains("public key"));
        assert!(deploy_key(&"a".repeat(MAX_DEPLOY_KEY_BYTES + 1)).is_err());
    }

    #[test]
    fn a_host_key_pin_is_normalised() {
        let key = crate::ssh_keys::generate_ed25519("host").unwrap().public_openssh;
        let body = key.split_whitespace().nth(1).unwrap();
        let line = host_key_pin(&format!("[git.example.org]:22 {key}")).unwrap();
        assert_eq!(line, format!("ssh-ed25519 {body}"), "the known_hosts host and the comment dropped");
        let fingerprint = pin_fingerprint(&line).unwrap();
        assert_eq!(host_key_pin(&fingerprint).unwrap(), fingerprint);
        assert!(host_key_pin("not a key").is_err());
    }
}
