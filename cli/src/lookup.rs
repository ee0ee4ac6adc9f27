//! NAME arguments: a numeric id, a manifest name (through the apply index,
//! `GET /api/apply/objects`), or the API object's own `name`, tried in that
//! order. The apply index is optional: a server without it (404/405) is
//! asked by name only.

use anyhow::bail;
use serde::Deserialize;
use serde_json::Value;

use super::client::{Client, is_status, query_value};
use super::exit::NotFound;
use super::kinds::Kind;

/// One row of the apply index (the fields NAME resolution needs).
#[derive(Debug, Clone, Deserialize)]
pub struct Applied {
    pub name: String,
    pub id: Option<i64>,
}

/// The apply index for `kind`, or empty where the server has none.
pub async fn applied(client: &Client, kind: Kind) -> anyhow::Result<Vec<Applied>> {
    let path = format!("/api/apply/objects?kind={}", query_value(kind.names().manifest));
    match client.get_as::<Vec<Applied>>(&path).await {
        Ok(rows) => Ok(rows),
        Err(e) if is_status(&e, 404) || is_status(&e, 405) => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// The id of the object of `kind` that `name` stands for.
pub async fn resolve(client: &Client, kind: Kind, name: &str) -> anyhow::Result<i64> {
    if let Ok(id) = name.parse::<i64>()
        && id > 0
    {
        return Ok(id);
    }
    if kind.of_template() {
        return of_template(client, kind, name).await;
    }
    if let Some(id) = applied(client, kind).await?.into_iter().find(|a| a.name == name).and_then(|a| a.id) {
        return Ok(id);
    }
    let list = client.get(kind.names().api).await?;
    let ids = matching_ids(&list, name);
    match ids.as_slice() {
        [id] => Ok(*id),
        [] => Err(NotFound(format!("no {kind} named {name:?}")).into()),
        several => bail!(
            "{} {kind}s are named {name:?} (ids {}); name one by its id",
            several.len(),
            several.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// The schedule (a run's too) or trigger of the template named `name`.
async fn of_template(client: &Client, kind: Kind, name: &str) -> anyhow::Result<i64> {
    let template = Box::pin(resolve(client, Kind::ImportTemplate, name)).await?;
    let list = client.get(kind.names().api).await?;
    list.as_array()
        .into_iter()
        .flatten()
        .find(|item| item.get("template_id").and_then(Value::as_i64) == Some(template))
        .and_then(|item| item.get("id").and_then(Value::as_i64))
        .ok_or_else(|| {
            let what = if kind == Kind::Trigger { "trigger" } else { "schedule" };
            NotFound(format!("template {name:?} has no {what}")).into()
        })
}

/// The ids of the items of a list answer whose `name` is `name`.
pub fn matching_ids(list: &Value, name: &str) -> Vec<i64> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter(|item| item.get("name").and_then(Value::as_str) == Some(name))
        .filter_map(|item| item.get("id").and_then(Value::as_i64))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn list_items_match_by_their_name() {
        let list = json!([{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "name": "a"}, {"id": 4}]);
        assert_eq!(matching_ids(&list, "a"), [1, 3]);
        assert_eq!(matching_ids(&list, "b"), [2]);
        assert!(matching_ids(&list, "c").is_empty());
        assert!(matching_ids(&json!({"not": "a list"}), "a").is_empty());
    }
}
