//! The steps a plan is made of, with the creation step each belongs to
//! and how events and logs describe it.

use play_model::compose::model::DependencyCondition;
use play_model::playground::CreationStep;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    CreateNetwork(String),
    /// Create the shared edge network (labelled for the installation, not
    /// for a Playground) unless it exists.
    CreateSharedNetwork(String),
    /// Remove a duplicate of a shared network by id.
    RemoveSharedNetwork {
        name: String,
        id: String,
    },
    CreateVolume(String),
    PullImage(String),
    /// Build the service's image from its pinned commit (its
    /// `play-build:<key>` image is not on the host).
    BuildImage(String),
    /// The service is built from source but has no pinned build (terminal).
    BuildUnavailable(String),
    /// Fill the service's source volume with its commit's files.
    FillSource(String),
    RemoveContainer {
        id: String,
        service: Option<String>,
    },
    /// Create and start the service's container.
    RunContainer(String),
    /// Zero-downtime rollout: create and start the service's new container
    /// as `name`, beside the one serving.
    RunBeside {
        service: String,
        name: String,
    },
    /// Zero-downtime rollout: once the new container `new` answers its
    /// health path, make it the one the edge serves, drain and remove the
    /// `old` ones.
    SwitchOver {
        service: String,
        new: String,
        new_name: String,
        old: Vec<String>,
    },
    StartContainer {
        service: String,
        id: String,
    },
    /// `service` waits for `on` to satisfy `condition`.
    Wait {
        service: String,
        on: String,
        condition: DependencyCondition,
    },
    RemoveNetwork(String),
    RemoveVolume(String),
}

impl Step {
    /// The creation step this step belongs to.
    pub fn creation_step(&self) -> CreationStep {
        match self {
            Step::CreateNetwork(_)
            | Step::RemoveNetwork(_)
            | Step::CreateSharedNetwork(_)
            | Step::RemoveSharedNetwork { .. } => CreationStep::Network,
            Step::CreateVolume(_) | Step::RemoveVolume(_) => CreationStep::Volumes,
            Step::PullImage(_) => CreationStep::ImagePull,
            Step::BuildImage(_) | Step::BuildUnavailable(_) | Step::FillSource(_) => CreationStep::ImageBuild,
            Step::Wait { condition: DependencyCondition::ServiceHealthy, .. } => CreationStep::Healthcheck,
            Step::RemoveContainer { .. }
            | Step::RunContainer(_)
            | Step::RunBeside { .. }
            | Step::StartContainer { .. }
            | Step::Wait { .. } => CreationStep::Containers,
            Step::SwitchOver { .. } => CreationStep::Healthcheck,
        }
    }

    /// A short description for events and logs (`run web`, `start db`).
    pub fn describe(&self) -> String {
        match self {
            Step::CreateNetwork(n) | Step::CreateSharedNetwork(n) => format!("create network {n}"),
            Step::RemoveSharedNetwork { name, .. } => format!("remove a duplicate of network {name}"),
            Step::CreateVolume(v) => format!("create volume {v}"),
            Step::PullImage(i) => format!("pull {i}"),
            Step::BuildImage(s) => format!("build the image of {s}"),
            Step::BuildUnavailable(s) => format!("build {s}"),
            Step::FillSource(s) => format!("fill the source volume of {s}"),
            Step::RemoveContainer { service: Some(s), .. } => format!("remove a container of {s}"),
            Step::RemoveContainer { id, service: None } => format!("remove container {id}"),
            Step::RunContainer(s) => format!("run {s}"),
            Step::RunBeside { service, name } => format!("run {service} beside the serving one, as {name}"),
            Step::SwitchOver { service, new_name, .. } => format!("switch {service} over to {new_name}"),
            Step::StartContainer { service, .. } => format!("start {service}"),
            Step::Wait { service, on, .. } => format!("{service} waits for {on}"),
            Step::RemoveNetwork(n) => format!("remove network {n}"),
            Step::RemoveVolume(v) => format!("remove volume {v}"),
        }
    }

    pub fn is_wait(&self) -> bool {
        matches!(self, Step::Wait { .. })
    }
}
