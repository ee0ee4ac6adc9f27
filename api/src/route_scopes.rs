//! The route -> scope table: the one place that says which scope each API
//! route needs. The auth middleware enforces it; the OpenAPI document shows
//! it; a test checks that every routed operation has exactly one entry and
//! that every entry is routed.

use play_model::scopes::Scope;

/// `(method, path template, scope)`. Path templates are axum's
/// (`/api/keys/{id}`), exactly as routed.
pub const ROUTE_SCOPES: &[(&str, &str, Scope)] = &[
    ("GET", "/api/keys", Scope::KeysManage),
    ("POST", "/api/keys", Scope::KeysManage),
    ("DELETE", "/api/keys/{id}", Scope::KeysManage),
    ("GET", "/api/playrooms", Scope::PlayroomsRead),
    ("POST", "/api/playrooms", Scope::PlayroomsWrite),
    ("GET", "/api/playrooms/{id}", Scope::PlayroomsRead),
    ("PATCH", "/api/playrooms/{id}", Scope::PlayroomsWrite),
    ("DELETE", "/api/playrooms/{id}", Scope::PlayroomsDelete),
    ("POST", "/api/playrooms/{id}/generate_ssh_key", Scope::PlayroomsManage),
    // The spec names playrooms:read, but the check connects to the host
    // (outbound traffic on a reader's request) and writes the pinned host
    // key and the check's outcome: a write (docs/decisions/hosts.md, "Playrooms").
    ("POST", "/api/playrooms/{id}/test_connection", Scope::PlayroomsWrite),
    ("GET", "/api/playspecs", Scope::PlayspecsRead),
    ("POST", "/api/playspecs", Scope::PlayspecsWrite),
    ("GET", "/api/playspecs/{id}", Scope::PlayspecsRead),
    ("PATCH", "/api/playspecs/{id}", Scope::PlayspecsWrite),
    ("DELETE", "/api/playspecs/{id}", Scope::PlayspecsDelete),
    ("GET", "/api/playspecs/{id}/services", Scope::PlayspecsRead),
    ("POST", "/api/playspecs/validate_compose", Scope::PlayspecsRead),
    ("POST", "/api/playspecs/{id}/add_mounted_file", Scope::PlayspecsWrite),
    ("PATCH", "/api/playspecs/{id}/update_mounted_file", Scope::PlayspecsWrite),
    ("DELETE", "/api/playspecs/{id}/remove_mounted_file", Scope::PlayspecsWrite),
    ("POST", "/api/playspecs/{id}/add_registry_credential", Scope::PlayspecsWrite),
    ("DELETE", "/api/playspecs/{id}/remove_registry_credential", Scope::PlayspecsWrite),
    ("GET", "/api/repos", Scope::ReposRead),
    ("POST", "/api/repos", Scope::ReposWrite),
    ("POST", "/api/repos/push", Scope::ReposWrite),
    ("POST", "/api/repos/create_and_push", Scope::ReposWrite),
    ("GET", "/api/repos/{owner}/{name}", Scope::ReposRead),
    ("DELETE", "/api/repos/{owner}/{name}", Scope::ReposWrite),
    ("GET", "/api/launch_defaults", Scope::ImportTemplatesRead),
    ("PUT", "/api/launch_defaults", Scope::ImportTemplatesWrite),
    ("GET", "/api/schedules", Scope::ImportTemplatesRead),
    ("GET", "/api/schedules/{id}", Scope::ImportTemplatesRead),
    ("PATCH", "/api/schedules/{id}", Scope::ImportTemplatesWrite),
    ("GET", "/api/schedules/{id}/runs", Scope::ImportTemplatesRead),
    ("GET", "/api/triggers", Scope::ImportTemplatesRead),
    ("GET", "/api/triggers/{id}", Scope::ImportTemplatesRead),
    ("PATCH", "/api/triggers/{id}", Scope::ImportTemplatesWrite),
    ("GET", "/api/triggers/{id}/targets", Scope::ImportTemplatesRead),
    ("GET", "/api/scm_installations", Scope::ReposRead),
    ("GET", "/api/scm_installations/{id}", Scope::ReposRead),
    ("POST", "/api/scm_installations/github", Scope::ReposWrite),
    ("DELETE", "/api/scm_installations/{id}", Scope::ReposWrite),
    ("GET", "/api/playgrounds", Scope::PlaygroundsRead),
    ("POST", "/api/playgrounds", Scope::PlaygroundsWrite),
    ("GET", "/api/playgrounds/{id}", Scope::PlaygroundsRead),
    ("DELETE", "/api/playgrounds/{id}", Scope::PlaygroundsDelete),
    ("GET", "/api/playgrounds/{id}/status", Scope::PlaygroundsRead),
    ("POST", "/api/playgrounds/{id}/extend_expiration", Scope::PlaygroundsWrite),
    ("POST", "/api/playgrounds/{id}/rollout", Scope::PlaygroundsWrite),
    ("POST", "/api/playgrounds/{id}/hard_restart", Scope::PlaygroundsWrite),
    ("POST", "/api/playgrounds/{id}/recreate", Scope::PlaygroundsWrite),
    ("POST", "/api/playgrounds/{id}/sleep", Scope::PlaygroundsWrite),
    ("POST", "/api/playgrounds/{id}/wake", Scope::PlaygroundsWrite),
    ("GET", "/api/playgrounds/{id}/logs/{service}", Scope::PlaygroundsRead),
    // play's addition: a Playground's recent events (`play describe`).
    ("GET", "/api/playgrounds/{id}/events", Scope::PlaygroundsRead),
    // The spec leaves the scope open ("see note"): reading a result is
    // viewing the Playground, like its logs.
    ("GET", "/api/playgrounds/{id}/job_result", Scope::PlaygroundsRead),
    ("GET", "/api/playgrounds/{id}/compose", Scope::PlaygroundsRead),
    ("GET", "/api/playgrounds/{id}/env_metadata", Scope::PlaygroundsRead),
    ("GET", "/api/playgrounds/{id}/debug", Scope::PlaygroundsRead),
    ("POST", "/api/launch", Scope::LaunchWrite),
    ("GET", "/api/import_templates", Scope::ImportTemplatesRead),
    ("POST", "/api/import_templates", Scope::ImportTemplatesWrite),
    ("GET", "/api/import_templates/search", Scope::ImportTemplatesRead),
    ("GET", "/api/import_templates/{id}", Scope::ImportTemplatesRead),
    ("PATCH", "/api/import_templates/{id}", Scope::ImportTemplatesWrite),
    ("DELETE", "/api/import_templates/{id}", Scope::ImportTemplatesWrite),
    ("GET", "/api/import_templates/{id}/versions", Scope::ImportTemplatesRead),
    ("POST", "/api/import_templates/{id}/create_version", Scope::ImportTemplatesWrite),
    ("DELETE", "/api/import_templates/{id}/destroy_version", Scope::ImportTemplatesWrite),
    ("PATCH", "/api/import_templates/{id}/toggle_public", Scope::ImportTemplatesWrite),
    ("POST", "/api/import_templates/{id}/launch", Scope::ImportTemplatesRead),
    ("GET", "/api/template_categories", Scope::ImportTemplatesRead),
    ("GET", "/api/playzones", Scope::PlayzonesRead),
    ("GET", "/api/playzones/with_docker_compose", Scope::PlayzonesRead),
    ("GET", "/api/playzones/{id}", Scope::PlayzonesRead),
    ("POST", "/api/playzones", Scope::PlayzonesWrite),
    ("POST", "/api/playzones/attach", Scope::PlayzonesWrite),
    ("PATCH", "/api/playzones/{id}", Scope::PlayzonesWrite),
    ("DELETE", "/api/playzones/{id}", Scope::PlayzonesDelete),
    ("POST", "/api/playzones/{id}/sync", Scope::PlayzonesWrite),
    // A new deploy key replaces the one the repository knows: a write.
    ("POST", "/api/playzones/{id}/generate_ssh_key", Scope::PlayzonesWrite),
    ("GET", "/api/playzones/{id}/branches", Scope::PlayzonesRead),
    // Reads the repository on the reader's request (like the spec says:
    // playzones:read); bounded in time and bytes.
    ("GET", "/api/playzones/{id}/env_defaults", Scope::PlayzonesRead),
    ("GET", "/api/webhook_endpoints", Scope::WebhooksRead),
    ("POST", "/api/webhook_endpoints", Scope::WebhooksWrite),
    ("GET", "/api/webhook_endpoints/{id}", Scope::WebhooksRead),
    ("PATCH", "/api/webhook_endpoints/{id}", Scope::WebhooksWrite),
    ("DELETE", "/api/webhook_endpoints/{id}", Scope::WebhooksDelete),
    ("POST", "/api/webhook_endpoints/{id}/test", Scope::WebhooksWrite),
    ("GET", "/api/webhook_endpoints/event_types", Scope::WebhooksRead),
    ("GET", "/api/webhook_endpoints/{id}/deliveries", Scope::WebhooksRead),
    // Not in the spec's table: making a delivery due again is control of
    // the endpoint, like `test` (docs/decisions/webhooks.md, "Webhooks").
    ("POST", "/api/webhook_endpoints/{id}/deliveries/{delivery_id}/redeliver", Scope::WebhooksWrite),
];

/// Routes whose scopes depend on the body: the middleware only
/// authenticates, and the handler checks a scope per object kind it
/// touches (`POST /api/apply` needs `playspecs:write` for a Playspec,
/// `playgrounds:delete` to prune a Playground, ...). Tested by the apply
/// tests, kind by kind.
pub const PER_OBJECT_ROUTES: &[(&str, &str)] = &[("POST", "/api/apply"), ("GET", "/api/apply/objects")];

/// Routes any valid key may call: they act on the calling key itself and
/// grant nothing it does not hold (a sign-in link opens a session of that
/// key, with its scopes; the same as pasting the key into the sign-in
/// form).
pub const ANY_KEY_ROUTES: &[(&str, &str)] = &[("POST", "/api/sign_in_links")];

/// Whether the route needs no scope of the table: its handler checks
/// scopes per object ([`PER_OBJECT_ROUTES`]), or any key may call it
/// ([`ANY_KEY_ROUTES`]).
pub fn checks_per_object(method: &str, path: &str) -> bool {
    PER_OBJECT_ROUTES.iter().chain(ANY_KEY_ROUTES).any(|(m, p)| *m == method && *p == path)
}

/// The scope a routed operation needs, if the table names it.
pub fn required_scope(method: &str, path: &str) -> Option<Scope> {
    ROUTE_SCOPES.iter().find(|(m, p, _)| *m == method && *p == path).map(|(_, _, scope)| *scope)
}
