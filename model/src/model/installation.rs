//! Facts about this installation as a whole.

/// What [`check`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyCheck {
    /// No key was recorded: this one now is.
    Recorded,
    /// The recorded key is this one.
    Matches,
    /// Another key is recorded (its fingerprint).
    Differs { recorded: String },
}
