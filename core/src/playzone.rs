//! Playzones, the flows: linking a Compose file's build services to the
//! account's Playzones ([`link`]), pinning an ssh host key ([`host_keys`]). What a Playzone is and its rules are
//! `play_model::playzone`; its rows are `play_store`.

pub mod host_keys;
pub mod link;
