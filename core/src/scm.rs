//! The repositories facility, the flows: create and push ([`flows`]),
//! attach through an installation ([`attach`]), which host serves what
//! ([`hosts`]) and the repository writes of an apply ([`staged`]). The
//! records, names and the `SourceHost` seam are `play_model::scm`; the rows
//! are `play_store`.

pub mod attach;
pub mod flows;
pub mod hosts;
pub mod staged;
