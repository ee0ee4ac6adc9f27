//! What `/api/import_templates` answers: its response bodies, built from
//! core's records.

use chrono::{DateTime, Utc};
use play_model::model::template::{Category, Template};
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
