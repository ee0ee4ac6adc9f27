//! What `/api/import_templates` answers: its response bodies, built from
//! core's records.

use chrono::{DateTime, Utc};
use play_model::model::schedule::Schedule;
use play_model::model::template::{Category, Template};
use play_model::model::trigger::Trigger;
use serde::Serialize;
use utoipa::ToSchema;

/// A template as the caller sees it.
#[derive(Debug, Serialize, ToSchema)]
pub struct TemplateRecord {
    pub id: i64,
    pub name: String,
    pub description: String,
    pub category_id: i64,
    /// Whether the caller owns it (and may change it).
    pub owner: bool,
    /// The highest version number the caller can see (all versions for the
    /// owner, public ones for others); null without versions.
    pub latest_version: Option<i64>,
    /// Whether any version is public, that is, in the catalog.
    pub public: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl TemplateRecord {
    pub fn new(template: Template, viewer: i64) -> Self {
        TemplateRecord {
            owner: template.account_id == viewer,
            id: template.id,
            name: template.name,
            description: template.description,
            category_id: template.category_id,
            latest_version: template.latest_version,
            public: template.public,
            created_at: template.created_at,
            updated_at: template.updated_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CategoryRecord {
    pub id: i64,
    pub name: String,
    pub slug: String,
}

impl From<Category> for CategoryRecord {
    fn from(c: Category) -> Self {
        CategoryRecord { id: c.id, name: c.name, slug: c.slug }
    }
}

pub(crate) fn records(all: Vec<Template>, viewer: i64) -> Vec<TemplateRecord> {
    all.into_iter().map(|t| TemplateRecord::new(t, viewer)).collect()
}

/// A template's schedule or trigger, as the template's detail shows it
/// (issue #52, item 6).
#[derive(Debug, Serialize, ToSchema)]
pub struct LaunchSettingState {
    pub id: i64,
    /// Why it launches nothing (`needs a Playroom: PATCH
    /// /api/schedules/7 with playroom_id`, `paused`, ...); `null` when it
    /// acts.
    pub condition: Option<String>,
}

/// The detail view of a template: its record and, for its owner, the state
/// of its schedule and trigger (`null` when its versions never had one).
#[derive(Debug, Serialize, ToSchema)]
pub struct TemplateDetail {
    #[serde(flatten)]
    pub record: TemplateRecord,
    pub schedule: Option<LaunchSettingState>,
    pub trigger: Option<LaunchSettingState>,
}

/// The schedule and trigger of `account`'s template `template_id`, if it
/// has them.
pub(crate) async fn launch_settings(
    store: &play_store::Store,
    account: i64,
    template_id: i64,
) -> play_core::Result<(Option<LaunchSettingState>, Option<LaunchSettingState>)> {
    let state = |id: i64, condition: Option<&str>| LaunchSettingState {
        id,
        condition: condition.map(|c| c.replace("{id}", &id.to_string())),
    };
    let schedule = match play_store::launch_settings::of_template::<Schedule>(store, template_id).await? {
        Some(id) => play_store::launch_settings::find::<Schedule>(store, id)
            .await?
            .filter(|s| s.account_id == account)
            .map(|s| state(s.id, s.condition())),
        None => None,
    };
    let trigger = match play_store::launch_settings::of_template::<Trigger>(store, template_id).await? {
        Some(id) => play_store::launch_settings::find::<Trigger>(store, id)
            .await?
            .filter(|t| t.account_id == account)
            .map(|t| state(t.id, t.condition())),
        None => None,
    };
    Ok((schedule, trigger))
}

/// Whether it is on but has no Playroom (its condition says so).
fn needs_playroom(s: &LaunchSettingState) -> bool {
    s.condition.as_deref().is_some_and(|c| c.starts_with("needs a Playroom"))
}

/// A warning for each of the template's schedule and trigger that is on in
/// its latest version but has no Playroom, so launches nothing yet: which
/// call gives it one.
pub(crate) fn idle_warnings(
    schedule: Option<&LaunchSettingState>,
    trigger: Option<&LaunchSettingState>,
) -> Vec<play_model::compose::Issue> {
    let settings = [("schedule", "schedules", schedule), ("trigger", "triggers", trigger)];
    settings
        .into_iter()
        .filter_map(|(kind, path, state)| state.filter(|s| needs_playroom(s)).map(|s| (kind, path, s.id)))
        .map(|(kind, path, id)| play_model::compose::Issue {
            path: format!("svc.{kind}_config"),
            message: format!(
                "the {kind} launches nothing until it has a Playroom: PATCH /api/{path}/{id} with \
                 {{\"{kind}\": {{\"playroom_id\": <id>}}}}, by a key that may create Playgrounds; or PUT \
                 /api/launch_defaults with {{\"playroom_id\": <id>}} once, and every new schedule and trigger \
                 of the account launches there"
            ),
            line: None,
        })
        .collect()
}
