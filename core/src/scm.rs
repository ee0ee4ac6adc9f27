//! The repositories facility, the flows: create and push ([`flows`]),
//! attach through an installation ([`attach`]), a Playzone created by the
//! URL of a repository an installation reaches ([`by_url`]), which host serves what
//! ([`hosts`]) and the repository writes of an apply ([`staged`]). The
//! records, names and the `SourceHost` seam are `play_model::scm`; the rows
//! are `play_store`.

pub mod attach;
pub mod by_url;
pub mod flows;
pub mod hosts;
pub mod staged;
