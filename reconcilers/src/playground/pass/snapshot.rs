//! What a pass reads, once: the Playground's row (with, for a completed
//! job, whether its host is released) before it decides, then for an arm
//! that reaches the host its Playroom, Playspec revision and mounted files
//! and the Docker engine. Nothing is read again in the same pass: an arm
//! that changes the row ends the pass ("requeue now").

use play_model::host::HostTarget;
use play_model::model::playroom::Playroom;
use play_model::model::playspec::{MountedFile, Playspec};
use play_model::playground::{DesiredState, Playground};
use play_store::{job_results, playground_status as status_store};
use play_store::{playrooms, playspec_files, playspecs};

use super::Pass;
use crate::Result;

/// The row and what [`super::lifecycle::classify`] needs beside it.
pub(super) struct Row {
    pub p: Playground,
    /// A completed job's host objects are gone (`job_results`).
    pub host_released: bool,
}

impl Row {
    /// The Playground `id`, `None` once its row is gone.
    pub async fn read(pass: &Pass<'_>) -> Result<Option<Row>> {
        let store = &pass.r.store;
        let Some(p) = status_store::load(store, pass.id).await? else { return Ok(None) };
        let host_released = p.job_mode
            && p.desired_state != DesiredState::Running
            && job_results::get(store, pass.id).await?.is_some_and(|r| r.host_released_at.is_some());
        Ok(Some(Row { p, host_released }))
    }
}

/// The inputs of an arm that reaches the host.
pub(super) struct Host {
    pub room: Playroom,
    pub target: HostTarget,
    pub playspec: Option<Playspec>,
    /// The Playspec revision's mounted files (none without a Playspec).
    pub files: Vec<MountedFile>,
    pub docker: bollard::Docker,
}

impl Host {
    /// Reads them for `p`, and asks the Playroom's event stream to be
    /// followed. A Playroom without a key is a setting to fix, shown on the
    /// Playground (`Error::InvalidTarget`).
    pub async fn read(pass: &Pass<'_>, p: &Playground) -> Result<Host> {
        let r = pass.r;
        if let Some(watch) = &r.watch {
            watch.ensure(p.playroom_id);
        }
        let (room, target) =
            playrooms::target(&r.store, &r.secrets, p.account_id, p.playroom_id).await.map_err(|e| match e {
                play_core::Error::InvalidState(message) => crate::Error::InvalidTarget(message),
                other => other.into(),
            })?;
        let playspec = match p.playspec_id {
            Some(spec_id) => Some(playspecs::get(&r.store, p.account_id, spec_id).await?),
            None => None,
        };
        let files = match &playspec {
            Some(spec) => playspec_files::list_files(&r.store, spec.id).await?,
            None => Vec::new(),
        };
        let docker = r.gateway.docker(&target).await?;
        Ok(Host { room, target, playspec, files, docker })
    }
}
