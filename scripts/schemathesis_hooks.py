"""schemathesis hooks of scripts/schemathesis: positive data acceptance that
knows which rules the OpenAPI document states in prose only.

The built-in `positive_data_acceptance` check fails when the server refuses
a request that matches the document's schemas. Some of play's rules cannot
be written as JSON Schema: Compose YAML that must parse and pass the policy,
SSH keys that must parse, names unique in the account, ids that must name
existing objects of another kind, an expiry in the future, a service that
must exist in the Playspec. The document states these in the fields'
descriptions and lists 422 on those operations.

This check runs the built-in one and forgives a 422 only when the server
blames such a rule:
- VALIDATION_FAILED whose `details` name only fields listed for the
  operation in SEMANTIC_FIELDS below (or fields under them), or
- LOCKED, INVALID_STATE, QUOTA_EXCEEDED or SCM_APP_REQUIRED: the state of
  the account or the object, not the request (a Playspec in use, a
  Playground being destroyed, no source-hosting app installed).
Any other refusal of schema-valid input is still a failure, so a schema that
forgets a constraint the server enforces is caught.
"""

import os

import schemathesis
from schemathesis.core.failures import Failure
from schemathesis.specs.openapi import checks as builtin

# The key the run authenticates with (scripts/schemathesis sets it).
OWN_KEY_ID = os.environ.get("PLAY_ST_OWN_KEY_ID", "")
# An id no key has.
NO_SUCH_KEY = 9223372036854775807

STATE_CODES = {"LOCKED", "INVALID_STATE", "QUOTA_EXCEEDED", "SCM_APP_REQUIRED"}

# Operation -> fields whose rules the schema can only describe.
SEMANTIC_FIELDS = {
    # Must be in the future.
    "POST /api/keys": ["api_key.expires_at"],
    # Names are unique per account; keys must parse; `local` only where enabled;
    # the edge's two ports must differ (on update, from the stored other one).
    "POST /api/playrooms": [
        "playroom.name",
        "playroom.ssh_private_key",
        "playroom.host_key",
        "playroom.connection",
        "playroom.edge.http_port",
        "playroom.edge.https_port",
    ],
    "PATCH /api/playrooms/{id}": [
        "playroom.name",
        "playroom.ssh_private_key",
        "playroom.host_key",
        "playroom.connection",
        "playroom.edge.http_port",
        "playroom.edge.https_port",
    ],
    # Compose must be valid; service overrides must name its services; names
    # unique; the Playspec's Playzone must be one of the account's.
    "POST /api/playspecs": ["playspec.name", "playspec.base_compose_yaml", "playspec.services", "playspec.playzone_id"],
    "PATCH /api/playspecs/{id}": [
        "playspec.name",
        "playspec.base_compose_yaml",
        "playspec.services",
        "playspec.playzone_id",
    ],
    # Mount paths unique per Playspec and not under /proc, /sys, /dev; target
    # services must exist; the file part needs a file name.
    # A project path is relative, normalised, without `..`, `~`, `\` or
    # control characters, and no other file's path may contain it.
    "POST /api/playspecs/{id}/add_mounted_file": ["mount_path", "target_services", "file", "path"],
    "PATCH /api/playspecs/{id}/update_mounted_file": ["mount_path", "target_services", "path"],
    # A registry address, one credential per registry.
    "POST /api/playspecs/{id}/add_registry_credential": ["registry_url"],
    # Settings must fit the Playspec's services and the Playroom's policy.
    "POST /api/playgrounds": [
        "playground.watched_services",
        "playground.service_subdomains",
        "playground.services",
        "playspec.base_compose_yaml",
    ],
    "POST /api/playgrounds/{id}/rollout": [
        "playground.service_subdomains",
        "playground.services",
        "playspec.base_compose_yaml",
    ],
    # The service must run in the Playground.
    "GET /api/playgrounds/{id}/env_metadata": ["service"],
    # Compose must be valid; playroom_id is required with create_playground; names unique;
    # agent is recorded on the Playground, so it needs create_playground (its description).
    "POST /api/launch": ["compose_yaml", "playroom_id", "playspec.name", "agent"],
    # The Playroom must be one of the account's.
    "PUT /api/launch_defaults": ["playroom_id"],
    # The category must exist; names unique.
    "POST /api/import_templates": ["import_template.category_id", "import_template.name"],
    "PATCH /api/import_templates/{id}": ["import_template.category_id", "import_template.name"],
    # Template validation (declared and used variables, the svc namespace...).
    "POST /api/import_templates/{id}/create_version": ["template_body", "svc", "services", "variables"],
    # version_id comes from the query or the body, and they must agree.
    "DELETE /api/import_templates/{id}/destroy_version": ["version_id", "public"],
    "PATCH /api/import_templates/{id}/toggle_public": ["version_id", "public"],
    # Variables are checked against the version's declarations; names unique.
    "POST /api/import_templates/{id}/launch": ["variables", "name", "compose_yaml"],
    # Hosts must be public (or allowlisted) and http needs the operator's
    # flag; filters must name types that are also in events.
    "POST /api/webhook_endpoints": ["webhook_endpoint.url", "webhook_endpoint.event_filters"],
    "PATCH /api/webhook_endpoints/{id}": ["webhook_endpoint.url", "webhook_endpoint.event_filters"],
    # Repository hosts must be public (or allowlisted), http needs the
    # operator's flag; branch names follow git's rules beyond the pattern;
    # a private repository needs a token; names unique.
    "POST /api/playzones": ["playzone.name", "playzone.scm_url", "playzone.default_branch", "playzone.credentials"],
    "PATCH /api/playzones/{id}": [
        "playzone.name",
        "playzone.scm_url",
        "playzone.default_branch",
        "playzone.credentials",
        "playzone.ssh_host_key",
    ],
    # Repository names must not end in .git or .lock and are unique per
    # account; a push's paths follow rules stated in prose (no '..', no
    # '.git' segment, each path once, no file over a folder of the branch),
    # its content is bounded in all, a message must not be blank, a branch
    # follows git's rules beyond the pattern.
    "POST /api/repos": ["name"],
    "POST /api/repos/push": ["files", "message", "branch", "repo"],
    "POST /api/repos/create_and_push": ["name", "files", "message"],
    # The owner must be an account name ('.' and '..' are not) and the
    # name must not end in .git or .lock: beyond the pattern.
    "POST /api/playzones/attach": ["repo_full_name"],
    # Letters or digits to look for.
    "GET /api/import_templates/search": ["query"],
    # Each manifest object's spec is a kind's create body (checked by that
    # kind's rules), its references must resolve, names unique in the set;
    # a prune needs an apply set.
    "POST /api/apply": ["objects", "apply_set"],
    # A kind must be one apply knows.
    "GET /api/apply/objects": ["kind"],
}


def _under(field, prefix):
    return field == prefix or field.startswith(prefix + ".") or field.startswith(prefix + "[")


def _explained(case, response):
    if response.status_code != 422:
        return False
    try:
        error = response.json()["error"]
    except (ValueError, KeyError, TypeError):
        return False
    if error.get("code") in STATE_CODES:
        return True
    if error.get("code") != "VALIDATION_FAILED":
        return False
    allowed = SEMANTIC_FIELDS.get(f"{case.method.upper()} {case.operation.path}", [])
    fields = list(error.get("details") or {})
    return bool(fields) and all(any(_under(f, p) for p in allowed) for f in fields)


@schemathesis.hook
def before_call(context, case, kwargs):
    """The run never deletes its own key (every later request would be 401)
    or the seeded Playzone and webhook endpoint: a DELETE aimed at one goes
    to an id that does not exist."""
    parameters = case.path_parameters or {}
    if (
        case.method.upper() == "DELETE"
        and case.operation.path == "/api/keys/{id}"
        and str(parameters.get("id")) == OWN_KEY_ID
    ):
        parameters["id"] = NO_SUCH_KEY
    # Every other operation on a Playzone or a webhook endpoint is pinned to
    # the seeded one (id 1); a DELETE of it would turn them all into 404s.
    if (
        case.method.upper() == "DELETE"
        and case.operation.path in ("/api/playzones/{id}", "/api/webhook_endpoints/{id}")
        and str(parameters.get("id")) == "1"
    ):
        parameters["id"] = NO_SUCH_KEY


@schemathesis.check
def positive_data_acceptance_with_semantics(ctx, response, case):
    """positive_data_acceptance, forgiving the refusals explained above."""
    try:
        return builtin.positive_data_acceptance(ctx, response, case)
    except Failure:
        if _explained(case, response):
            return None
        raise
