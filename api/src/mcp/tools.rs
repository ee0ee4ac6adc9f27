//! The MCP tool table: each tool is one operation of the REST API, named
//! by method and path template exactly as routed. Its scope is that
//! route's scope (`route_scopes`), its input schema comes from that
//! operation in the OpenAPI document (`schema`), and a call runs that
//! route's handler (`dispatch`). A test checks that every entry names a
//! routed operation.

/// Where a tool's arguments that are neither path nor query parameters go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// The operation takes no body: any other argument is refused.
    None,
    /// The arguments are the body as they are (`POST /api/launch`).
    Flat,
    /// The arguments are the body's one wrapped object
    /// (`{"webhook_endpoint": {...}}`): the tool takes its fields flat,
    /// and errors name them without the wrapper.
    Wrapped(&'static str),
}

#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    pub name: &'static str,
    pub method: &'static str,
    pub path: &'static str,
    pub body: Body,
    pub description: &'static str,
}

const fn tool(
    name: &'static str,
    method: &'static str,
    path: &'static str,
    body: Body,
    description: &'static str,
) -> ToolSpec {
    ToolSpec { name, method, path, body, description }
}

use Body::{Flat, None as NoBody, Wrapped};

/// Every tool, in the order `tools/list` shows them.
pub const TOOLS: &[ToolSpec] = &[
    // --- server-side apply: the flow of POST /api/apply and `play apply` -------
    tool(
        "apply",
        "POST",
        "/api/apply",
        Flat,
        "Apply a set of manifest objects, all or nothing (docs/manifests.md): each of `objects` is `{apiVersion: \"play/v1\", kind, metadata: {name, labels}, spec}` with kind Playroom, Repository, Playzone, Playspec, ImportTemplate, WebhookEndpoint or Playground, its spec the create body with references by name (playroomRef, playspecRef, playzoneRef). Each object is answered created, configured, unchanged or pruned, with its diff and drift. `dry_run: true` answers exactly that and writes nothing (read scopes suffice). With `apply_set`, `prune: true` deletes what the set made that `objects` no longer lists. Errors name `objects[i].<field>`.",
    ),
    tool(
        "list_applied_objects",
        "GET",
        "/api/apply/objects",
        NoBody,
        "List the objects server-side apply made in the account (kind, manifest name, id, apply_set, labels, a Playspec's revision), of the kinds the key may read; narrow by `kind` or `apply_set`.",
    ),
    // --- webhook endpoints: the spec's six, and two readers -------------------
    tool(
        "list_webhook_endpoints",
        "GET",
        "/api/webhook_endpoints",
        NoBody,
        "List the account's webhook endpoints (URL, subscribed events, filters, enabled, failure_count), without their signing secrets.",
    ),
    tool(
        "get_webhook_endpoint",
        "GET",
        "/api/webhook_endpoints/{id}",
        NoBody,
        "Show one webhook endpoint, including its signing secret (the HMAC-SHA256 key of X-Webhook-Signature).",
    ),
    tool(
        "create_webhook_endpoint",
        "POST",
        "/api/webhook_endpoints",
        Wrapped("webhook_endpoint"),
        "Create a webhook endpoint: play POSTs each subscribed event to `url`, signed with `secret` (64 hex characters generated when omitted). `events` must come from list_webhook_event_types; `event_filters` narrows a type to entity ids. Answers the endpoint with its secret, enabled, failure_count 0.",
    ),
    tool(
        "update_webhook_endpoint",
        "PATCH",
        "/api/webhook_endpoints/{id}",
        Wrapped("webhook_endpoint"),
        "Update any subset of a webhook endpoint's fields. `enabled: true` re-enables a disabled endpoint and resets failure_count; delivery resumes from the undelivered backlog.",
    ),
    tool(
        "delete_webhook_endpoint",
        "DELETE",
        "/api/webhook_endpoints/{id}",
        NoBody,
        "Delete a webhook endpoint and its delivery history.",
    ),
    tool(
        "list_webhook_deliveries",
        "GET",
        "/api/webhook_endpoints/{id}/deliveries",
        NoBody,
        "An endpoint's deliveries, newest first: status (pending, succeeded, failed, abandoned), attempts, last status code, error, duration, next retry and the start of the receiver's response. Page with `before` (the last id of the previous page).",
    ),
    tool(
        "redeliver_webhook_delivery",
        "POST",
        "/api/webhook_endpoints/{id}/deliveries/{delivery_id}/redeliver",
        NoBody,
        "Send one delivery again: it becomes pending with its next attempt now (same delivery id, so receivers can dedupe).",
    ),
    tool(
        "test_webhook_endpoint",
        "POST",
        "/api/webhook_endpoints/{id}/test",
        NoBody,
        "Send a `webhook.test` event to this endpoint only. Answers once the event is recorded; its delivery and outcome appear in list_webhook_deliveries.",
    ),
    tool(
        "list_webhook_event_types",
        "GET",
        "/api/webhook_endpoints/event_types",
        NoBody,
        "The event types a webhook endpoint may subscribe to.",
    ),
    // --- Playgrounds: running environments ------------------------------------
    tool(
        "list_playgrounds",
        "GET",
        "/api/playgrounds",
        NoBody,
        "List the account's Playgrounds (running instances of Playspecs on Playrooms) with status and URLs.",
    ),
    tool(
        "get_playground",
        "GET",
        "/api/playgrounds/{id}",
        NoBody,
        "A Playground's detail view: status, creation step, errors, services with their health, URLs, expiry.",
    ),
    tool(
        "get_playground_status",
        "GET",
        "/api/playgrounds/{id}/status",
        NoBody,
        "A Playground's lightweight status for polling: status (in_progress, running, failed, destroying, ...), creation step, error step and message, per-service state. Poll this after create_playground or launch until it is running or failed.",
    ),
    tool(
        "create_playground",
        "POST",
        "/api/playgrounds",
        Wrapped("playground"),
        "Create and start a Playground from a Playspec on a Playroom. Answers at once with status in_progress; the reconciler pulls images and starts the services (poll get_playground_status).",
    ),
    tool(
        "destroy_playground",
        "DELETE",
        "/api/playgrounds/{id}",
        NoBody,
        "Destroy a Playground: it becomes `destroying` until every container, network and (unless persisted) volume is gone from the host.",
    ),
    tool(
        "extend_playground",
        "POST",
        "/api/playgrounds/{id}/extend_expiration",
        Flat,
        "Extend a Playground's lifetime: expires_at becomes max(expires_at, now) + duration_hours (default 8).",
    ),
    tool(
        "rollout_playground",
        "POST",
        "/api/playgrounds/{id}/rollout",
        Wrapped("playground"),
        "Apply a Playground's settings again, incrementally: give any of env_overrides, service_subdomains, services to replace them whole. Only services whose container changes are recreated (zero-downtime services start beside the old container).",
    ),
    tool(
        "hard_restart_playground",
        "POST",
        "/api/playgrounds/{id}/hard_restart",
        NoBody,
        "Restart a Playground from scratch: every container (and, unless the Playspec persists volumes, every named volume) is removed and made again, and images are pulled again.",
    ),
    tool(
        "sleep_playground",
        "POST",
        "/api/playgrounds/{id}/sleep",
        NoBody,
        "Put a Playground to sleep now: its containers stop (kept, with networks and volumes) and its status becomes `sleeping`; the first request to one of its URLs, or wake_playground, wakes it. Not for job-mode Playgrounds.",
    ),
    tool(
        "wake_playground",
        "POST",
        "/api/playgrounds/{id}/wake",
        NoBody,
        "Wake a sleeping Playground now: its containers start in dependency order and it is `running` again once they are healthy.",
    ),
    tool(
        "get_playground_job_result",
        "GET",
        "/api/playgrounds/{id}/job_result",
        NoBody,
        "The result of a job-mode Playground: each watched service's exit code and the tail of its logs, once the job completed.",
    ),
    tool(
        "debug_playground",
        "GET",
        "/api/playgrounds/{id}/debug",
        NoBody,
        "Diagnostics of a Playground: the generated Compose, and per service its container, config hash, networks, environment keys and route (URL, whether the edge serves it live, or why not).",
    ),
    tool(
        "get_playground_logs",
        "GET",
        "/api/playgrounds/{id}/logs/{service}",
        NoBody,
        "The last lines (`tail`, default 100, at most 1000) of one service's logs, read live from the Playroom's host.",
    ),
    tool(
        "launch",
        "POST",
        "/api/launch",
        Flat,
        "Launch Compose YAML: create a Playspec named `name` from `compose_yaml` and, with `create_playground: true` and a `playroom_id`, start a Playground from it at once. Answers the new ids and the URLs of routed services.",
    ),
    // --- Playzones: the repositories built services come from ----------------
    tool(
        "list_playzones",
        "GET",
        "/api/playzones",
        NoBody,
        "List the account's Playzones (git repositories that supply code to services built from a Dockerfile), with their sync status.",
    ),
    tool(
        "get_playzone",
        "GET",
        "/api/playzones/{id}",
        NoBody,
        "A Playzone with its sync state (status, status_message, default branch, the Compose file found); never its access token.",
    ),
    tool(
        "create_playzone",
        "POST",
        "/api/playzones",
        Wrapped("playzone"),
        "Create a Playzone from a repository's https or ssh URL; its first sync starts at once. A repository of play's Git host or of an installed app the account reaches is read through the installation; otherwise a private one needs credentials (an access token, or for an ssh URL a deploy key: or call generate_ssh_key on the Playzone over the REST API).",
    ),
    tool(
        "sync_playzone",
        "POST",
        "/api/playzones/{id}/sync",
        NoBody,
        "Ask for a sync of a Playzone's branches and Compose file; it runs in the background (watch sync_pending).",
    ),
    tool(
        "list_playzone_branches",
        "GET",
        "/api/playzones/{id}/branches",
        NoBody,
        "The branches the last sync found (default branch first); query filters by name, limit up to 50.",
    ),
    tool(
        "get_playzone_env_defaults",
        "GET",
        "/api/playzones/{id}/env_defaults",
        NoBody,
        "The default environment variables of a branch's env file (.env.example unless env_file_path names another), with the keys that are secrets.",
    ),
    // --- Playspecs: Compose definitions ---------------------------------------
    tool(
        "list_playspecs",
        "GET",
        "/api/playspecs",
        NoBody,
        "List the account's Playspecs (Compose definitions that Playgrounds run).",
    ),
    tool("get_playspec", "GET", "/api/playspecs/{id}", NoBody, "A Playspec with its Compose YAML and services."),
    tool(
        "create_playspec",
        "POST",
        "/api/playspecs",
        Wrapped("playspec"),
        "Create a Playspec from Compose YAML (`base_compose_yaml`); the Compose is validated and its services classified.",
    ),
    tool(
        "update_playspec",
        "PATCH",
        "/api/playspecs/{id}",
        Wrapped("playspec"),
        "Update a Playspec; Playgrounds running it are marked as needing recreation when their Compose changes.",
    ),
    tool("delete_playspec", "DELETE", "/api/playspecs/{id}", NoBody, "Delete a Playspec that no Playground uses."),
    tool(
        "validate_compose",
        "POST",
        "/api/playspecs/validate_compose",
        Flat,
        "Validate Compose YAML without saving anything: errors and warnings under the policy play applies.",
    ),
    // --- Playrooms: Docker hosts ----------------------------------------------
    tool(
        "list_playrooms",
        "GET",
        "/api/playrooms",
        NoBody,
        "List the account's Playrooms (Docker hosts, reached over SSH, that run Playgrounds).",
    ),
    tool("get_playroom", "GET", "/api/playrooms/{id}", NoBody, "A Playroom's detail view."),
    tool(
        "create_playroom",
        "POST",
        "/api/playrooms",
        Wrapped("playroom"),
        "Register a Playroom: a Docker host reached over SSH (`host`, `port`, user and key).",
    ),
    tool("update_playroom", "PATCH", "/api/playrooms/{id}", Wrapped("playroom"), "Update a Playroom's settings."),
    tool(
        "delete_playroom",
        "DELETE",
        "/api/playrooms/{id}",
        NoBody,
        "Delete a Playroom that has no active Playgrounds.",
    ),
    // --- repositories (play's own Git host, GitHub App installations) -------
    tool(
        "list_repositories",
        "GET",
        "/api/repos",
        NoBody,
        "List the account's repositories with their clone URLs (clone with an API key as the HTTP password).",
    ),
    tool(
        "create_repository",
        "POST",
        "/api/repos",
        Flat,
        "Create a repository: `name` (lowercase letters, digits, '-', '_', '.'), `description`, `private` (default true), `auto_init` (a README commit); `provider` (builtin or github) or `installation_id` when the account has several places to create in.",
    ),
    tool(
        "push_to_repository",
        "POST",
        "/api/repos/push",
        Flat,
        "Push files to a repository as one commit: `repo` (owner/name), `files` [{path, content}], `message`, `branch` (default the default branch). Answers commit_sha, tree_sha, files_pushed.",
    ),
    tool(
        "create_repository_and_push",
        "POST",
        "/api/repos/create_and_push",
        Flat,
        "Create a repository with `files` [{path, content}] as its first commit (`message` default 'Initial commit'); `provider` or `installation_id` as for create_repository. Answers the repository and the commit.",
    ),
    tool(
        "attach_repository",
        "POST",
        "/api/playzones/attach",
        Flat,
        "Attach a repository (`repo_full_name`: owner/name) as a Playzone that reads it through the installation, without a token; a build service links it by the Playzone's id. A GitHub repository the account's installation was given is found on GitHub. Answers the account's existing Playzone when it was attached before.",
    ),
    // --- import templates -----------------------------------------------------
    tool(
        "search_templates",
        "GET",
        "/api/import_templates/search",
        NoBody,
        "Search the import templates you can see (yours and public ones) by name and description; up to 10 results.",
    ),
    tool("list_templates", "GET", "/api/import_templates", NoBody, "List the import templates you can see."),
    tool("get_template", "GET", "/api/import_templates/{id}", NoBody, "An import template with its variables."),
    tool(
        "list_template_versions",
        "GET",
        "/api/import_templates/{id}/versions",
        NoBody,
        "An import template's immutable, sequentially numbered versions.",
    ),
    tool(
        "launch_template",
        "POST",
        "/api/import_templates/{id}/launch",
        Flat,
        "Launch an import template on a Playroom: substitute `variables`, generate `$$random__` values, validate, and create a Playspec and a Playground (status in_progress; poll get_playground_status).",
    ),
];

/// The tool of this name.
pub fn find(name: &str) -> Option<&'static ToolSpec> {
    TOOLS.iter().find(|t| t.name == name)
}

/// The `{name}` parameters of a path template, in order.
pub fn path_params(path: &str) -> Vec<&str> {
    path.split('/').filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}')).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route_scopes::required_scope;

    #[test]
    fn every_tool_is_a_routed_operation_with_a_scope() {
        for t in TOOLS {
            let per_object = crate::route_scopes::PER_OBJECT_ROUTES.contains(&(t.method, t.path));
            let scoped = per_object || required_scope(t.method, t.path).is_some();
            assert!(scoped, "{} names no route: {} {}", t.name, t.method, t.path);
        }
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = TOOLS.iter().map(|t| t.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TOOLS.len());
    }

    #[test]
    fn the_specs_webhook_tools_exist() {
        for name in [
            "list_webhook_endpoints",
            "create_webhook_endpoint",
            "update_webhook_endpoint",
            "delete_webhook_endpoint",
            "list_webhook_deliveries",
            "test_webhook_endpoint",
        ] {
            assert!(find(name).is_some(), "{name}");
        }
    }

    #[test]
    fn path_params_are_read_from_the_template() {
        assert_eq!(path_params("/api/playgrounds/{id}/logs/{service}"), ["id", "service"]);
        assert!(path_params("/api/launch").is_empty());
    }
}
