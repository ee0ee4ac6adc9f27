//! The files of one push, checked whole before any object is written.
//!
//! A path is relative, `/`-separated UTF-8: no empty, `.` or `..`
//! segment, no segment that git reserves (`.git`, also as `.GIT`, `.git.`
//! or `git~1`, the spellings that reach the `.git` folder on a
//! case-insensitive or Windows file system), no backslash, no control
//! character, at most [`MAX_PATH_BYTES`] with segments of at most
//! [`MAX_SEGMENT_BYTES`]. A push names each path once, and never both a
//! file and a folder above another of its files. Every file is written as a
//! regular, non-executable file: a push cannot make a symlink or a
//! submodule.
//!
//! Bounds (checked before anything is read into a repository):
//! [`MAX_PUSH_FILES`] files, [`MAX_PUSH_BYTES`] of content in all, a
//! message of at most [`MAX_MESSAGE_BYTES`].

use std::collections::BTreeSet;

use crate::error::push_field_error;
use crate::{Error, FieldErrors, Result};

/// Files in one push (and in `create_and_push`).
pub const MAX_PUSH_FILES: usize = 1_000;
/// Content bytes in one push, all files together.
pub const MAX_PUSH_BYTES: usize = 10 * 1024 * 1024;
/// A path's length in bytes.
pub const MAX_PATH_BYTES: usize = 1_024;
/// One segment of a path, in bytes (most file systems' limit).
pub const MAX_SEGMENT_BYTES: usize = 255;
/// A commit message's length in bytes.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// One file of a push as the request gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushFile {
    pub path: String,
    pub content: Vec<u8>,
}

/// The files and message of a push, checked (see the module doc); only
/// [`PushFiles::check`] makes one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushFiles {
    files: Vec<PushFile>,
    message: String,
}

impl PushFiles {
    /// Checks `files` (request field `files`) and `message` (field
    /// `message`), field by field: `files[3].path`. Counts and total size
    /// are checked first, so an oversized request is refused before its
    /// paths are looked at.
    pub fn check(files: Vec<PushFile>, message: &str) -> Result<PushFiles> {
        let mut errors = FieldErrors::new();
        if message.trim().is_empty() {
            push_field_error(&mut errors, "message", "must not be empty");
        } else if message.len() > MAX_MESSAGE_BYTES {
            push_field_error(&mut errors, "message", format!("must be at most {MAX_MESSAGE_BYTES} bytes"));
        }
        if files.is_empty() {
            push_field_error(&mut errors, "files", "must name at least one file");
        } else if files.len() > MAX_PUSH_FILES {
            push_field_error(&mut errors, "files", format!("at most {MAX_PUSH_FILES} files per push"));
        }
        let total: usize = files.iter().map(|f| f.content.len()).fold(0, usize::saturating_add);
        if total > MAX_PUSH_BYTES {
            push_field_error(&mut errors, "files", format!("at most {MAX_PUSH_BYTES} bytes of content per push"));
        }
        if !errors.is_empty() {
            return Err(Error::Validation(errors));
        }
        let mut seen = BTreeSet::new();
        for (i, file) in files.iter().enumerate() {
            let field = format!("files[{i}].path");
            if let Err(message) = check_path(&file.path) {
                push_field_error(&mut errors, field, message);
            } else if !seen.insert(file.path.as_str()) {
                push_field_error(&mut errors, field, format!("{:?} is named twice", file.path));
            }
        }
        for (i, file) in files.iter().enumerate() {
            if let Some(folder) = folders_of(&file.path).find(|f| seen.contains(f)) {
                let message = format!("{folder:?} is a file of this push and cannot also be a folder");
                push_field_error(&mut errors, format!("files[{i}].path"), message);
            }
        }
        if !errors.is_empty() {
            return Err(Error::Validation(errors));
        }
        Ok(PushFiles { files, message: message.to_owned() })
    }

    pub fn files(&self) -> &[PushFile] {
        &self.files
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Never true: a push names at least one file.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// The folders above `path`, nearest last: `a/b/c` gives `a`, `a/b`.
pub fn folders_of(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/').map(move |(at, _)| &path[..at])
}

/// Why `path` is not a path a push may write (see the module doc).
pub fn check_path(path: &str) -> std::result::Result<(), String> {
    if path.is_empty() {
        return Err("must not be empty".into());
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(format!("must be at most {MAX_PATH_BYTES} bytes"));
    }
    if path.starts_with('/') {
        return Err("must be relative (no leading '/')".into());
    }
    if path.contains('\\') {
        return Err("uses '/' between folders, never '\\'".into());
    }
    if path.chars().any(char::is_control) {
        return Err("must not contain control characters".into());
    }
    for segment in path.split('/') {
        if segment.is_empty() {
            return Err("must not have an empty segment (\"//\" or a trailing '/')".into());
        }
        if segment == "." || segment == ".." {
            return Err("must not contain \".\" or \"..\" segments".into());
        }
        if segment.len() > MAX_SEGMENT_BYTES {
            return Err(format!("each segment must be at most {MAX_SEGMENT_BYTES} bytes"));
        }
        if reserved(segment) {
            return Err(format!("{segment:?} is reserved by git"));
        }
    }
    Ok(())
}

/// Whether a segment reaches git's own folder on some file system: `.git`
/// in any case, with trailing dots or spaces (Windows drops them), or its
/// 8.3 short name `git~1`.
fn reserved(segment: &str) -> bool {
    let folded = segment.to_ascii_lowercase();
    let trimmed = folded.trim_end_matches(['.', ' ']);
    trimmed == ".git" || trimmed == "git~1"
}
