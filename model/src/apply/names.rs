//! Names apply accepts: manifest names, apply sets, and the names of the
//! Playspec revisions it creates.

/// Most objects in one apply: every one is validated (Compose parsed)
/// before anything is written, so the set is bounded first.
pub const MAX_OBJECTS: usize = 500;

/// Longest apply-set identity.
pub const MAX_APPLY_SET_CHARS: usize = 200;

/// A manifest name: lowercase letters, digits, `-` and `.`, starting and
/// ending with a letter or digit, at most 63 characters (a DNS label, with
/// dots), so it is safe in a command line, a URL path and a Compose
/// project name.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let valid = !name.is_empty()
        && name.len() <= 63
        && name.chars().all(|c| ok_char(c) || c == '-' || c == '.')
        && name.chars().next().is_some_and(ok_char)
        && name.chars().last().is_some_and(ok_char);
    if valid {
        Ok(())
    } else {
        Err("must be 1 to 63 lowercase letters, digits, '-' or '.', starting and ending with a letter or digit".into())
    }
}

/// An apply set: 1 to [`MAX_APPLY_SET_CHARS`] of letters, digits and
/// `. _ : / @ - = ,` (a repository path such as `git:infra/envs/staging`,
/// with a label selection such as `@tier=web,env=staging`).
pub fn check_apply_set(set: &str) -> Result<(), String> {
    let valid = !set.is_empty()
        && set.chars().count() <= MAX_APPLY_SET_CHARS
        && set.chars().all(|c| c.is_ascii_alphanumeric() || "._:/@-=,".contains(c));
    if valid {
        Ok(())
    } else {
        Err(format!("must be 1 to {MAX_APPLY_SET_CHARS} letters, digits or any of . _ : / @ - = ,"))
    }
}

/// The Playspec revision of manifest `name` whose canonical spec has
/// `digest` (hex): `<name>-<first 8 hex digits>`. Revisions are
/// immutable: a changed spec is a new revision.
pub fn revision_name(name: &str, digest: &str) -> String {
    let short: String = digest.chars().take(8).collect();
    format!("{name}-{short}")
}
