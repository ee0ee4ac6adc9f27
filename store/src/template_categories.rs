//! Template categories, managed by the operator (`play categories`, issue
//! #52, item 8): the API only reads them (`GET /api/template_categories`).
//! A category holding templates is never removed: its templates would lose
//! the category the contract says each has.

use sqlx::Row;

use super::Store;
use super::write_shapes::write_locked;
use crate::{Error, Result};
use play_model::model::template::Category;

/// A category's name: 1 to 64 characters, no control characters.
fn check_name(name: &str) -> Result<()> {
    let chars = name.chars().count();
    if chars == 0 || chars > 64 || name.trim() != name || name.chars().any(char::is_control) {
        return Err(Error::field("name", "must be 1 to 64 characters, without control characters or outer spaces"));
    }
    Ok(())
}

/// A category's slug: 1 to 40 of `a-z`, `0-9` and `-`, not starting or
/// ending with `-`.
fn check_slug(slug: &str) -> Result<()> {
    let allowed = slug.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if slug.is_empty() || slug.len() > 40 || !allowed || slug.starts_with('-') || slug.ends_with('-') {
        return Err(Error::field("slug", "must be 1 to 40 of a-z, 0-9 and '-', not starting or ending with '-'"));
    }
    Ok(())
}

/// The slug a name gives: lowercase letters and digits, other runs as `-`.
pub fn slug_of(name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
    }
    slug.trim_end_matches('-').chars().take(40).collect::<String>().trim_end_matches('-').to_owned()
}

/// The category `key` names: its id (digits) or its slug.
pub async fn find(store: &Store, key: &str) -> Result<Category> {
    let all = super::templates::categories(store).await?;
    let by_id = key.parse::<i64>().ok();
    all.into_iter().find(|c| Some(c.id) == by_id || c.slug == key).ok_or(Error::NotFound("category"))
}

/// Adds a category; its id is the next after the highest.
pub async fn add(store: &Store, name: &str, slug: &str) -> Result<Category> {
    check_name(name)?;
    check_slug(slug)?;
    store
        .in_write(async |conn| {
            let taken = sqlx::query("SELECT id FROM template_categories WHERE slug = $1").bind(slug);
            if taken.fetch_optional(&mut *conn).await?.is_some() {
                return Err(Error::field("slug", format!("a category with the slug {slug:?} exists")));
            }
            let next: i64 = sqlx::query("SELECT COALESCE(MAX(id), 0) + 1 AS next FROM template_categories")
                .fetch_one(&mut *conn)
                .await?
                .try_get("next")?;
            sqlx::query("INSERT INTO template_categories (id, name, slug) VALUES ($1, $2, $3)")
                .bind(next)
                .bind(name)
                .bind(slug)
                .execute(&mut *conn)
                .await?;
            Ok(Category { id: next, name: name.to_owned(), slug: slug.to_owned() })
        })
        .await
}

/// Renames category `id` (its slug stays: clients may have saved it).
pub async fn rename(store: &Store, id: i64, name: &str) -> Result<Category> {
    check_name(name)?;
    write_locked(store, "template_categories", id, async |conn| {
        let done = sqlx::query("UPDATE template_categories SET name = $1 WHERE id = $2")
            .bind(name)
            .bind(id)
            .execute(&mut *conn)
            .await?;
        if done.rows_affected() == 0 {
            return Err(Error::NotFound("category"));
        }
        let row = sqlx::query("SELECT slug FROM template_categories WHERE id = $1").bind(id);
        let slug: String = row.fetch_one(&mut *conn).await?.try_get("slug")?;
        Ok(Category { id, name: name.to_owned(), slug })
    })
    .await
}

/// Removes category `id`; refused (a conflict naming how many) while
/// templates are in it.
pub async fn remove(store: &Store, id: i64) -> Result<()> {
    write_locked(store, "template_categories", id, async |conn| {
        let row = sqlx::query("SELECT COUNT(*) AS n FROM import_templates WHERE category_id = $1").bind(id);
        let used: i64 = row.fetch_one(&mut *conn).await?.try_get("n")?;
        if used > 0 {
            return Err(Error::Conflict(format!(
                "{used} template(s) are in this category: move them to another (PATCH \
                     /api/import_templates/ID with category_id) before removing it"
            )));
        }
        let done = sqlx::query("DELETE FROM template_categories WHERE id = $1").bind(id).execute(&mut *conn).await?;
        if done.rows_affected() == 0 {
            return Err(Error::NotFound("category"));
        }
        Ok(())
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_made_from_names_and_checked() {
        for (name, slug) in [("Developer tools", "developer-tools"), ("  AI / ML!! ", "ai-ml"), ("Données", "donn-es")]
        {
            assert_eq!(slug_of(name), slug, "{name:?}");
        }
        assert!(check_slug("ai-ml").is_ok());
        for bad in ["", "-ai", "ai-", "AI", "a_b", &"a".repeat(41)] {
            assert!(check_slug(bad).is_err(), "{bad:?}");
        }
        for bad in ["", " x", "x\n", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
