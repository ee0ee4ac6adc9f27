//! Import templates as stored: categories, templates, their versions, the
//! fields a write takes and a list's filter.

use serde::Serialize;

use crate::time::Timestamp;

/// A template category (seeded by the migration, read-only over the API).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Category {
    pub id: i64,
    pub name: String,
    pub slug: String,
}

/// A template as one viewer sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Template {
    pub id: i64,
    pub account_id: i64,
    pub name: String,
    pub description: String,
    pub category_id: i64,
    /// The highest version number the viewer can see.
    pub latest_version: Option<i64>,
    /// Whether any version is public (in the catalog).
    pub public: bool,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// An immutable version; only `public` changes.
#[derive(Clone, Debug, PartialEq)]
pub struct Version {
    pub id: i64,
    pub template_id: i64,
    pub version: i64,
    pub public: bool,
    pub template_body: String,
    /// The declared variables (`svc.variables`) as validated at creation.
    pub variables: serde_json::Value,
    pub created_at: Timestamp,
}

/// Desired fields; on update `None` leaves a field as it is.
#[derive(Clone, Debug, Default)]
pub struct TemplateFields {
    pub name: Option<String>,
    pub description: Option<String>,
    pub category_id: Option<i64>,
}

/// Narrowing of `list`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ListFilter {
    pub category_id: Option<i64>,
    /// `Some(true)`: only the viewer's templates; `Some(false)`: only other
    /// accounts' (the catalog without the viewer's own).
    pub mine: Option<bool>,
}

/// A version's body and settings, as `store::templates::create_version` records them.
#[derive(Clone, Copy, Debug)]
pub struct NewVersion<'a> {
    /// Already validated by the caller (`compose::svc::validate_template`).
    pub template_body: &'a str,
    pub public: bool,
    /// What the body declares.
    pub variables: &'a serde_json::Value,
    /// Whether the key that writes it holds `playzones:read`: a version
    /// by a key without it that changes what a trigger builds takes back
    /// the trigger's reading through the installation (issue #49, item
    /// 3).
    pub author_may_read_playzones: bool,
}
