"""The official MCP Python client against a running `play serve` (called by
scripts/mcp-check, which starts the server; see there).

    python mcp_check.py BASE_URL ADMIN_TOKEN

Over Streamable HTTP at BASE_URL/mcp: lists the tools, creates a webhook
endpoint, launches a Playground and reads its status; a key without the
webhooks:write scope gets a tool error carrying the envelope's FORBIDDEN;
no key at all is HTTP 401. Exits non-zero on the first failed check.
"""

import asyncio
import json
import sys
import urllib.error
import urllib.request

import httpx2
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

SPEC_TOOLS = {
    "list_webhook_endpoints",
    "create_webhook_endpoint",
    "update_webhook_endpoint",
    "delete_webhook_endpoint",
    "list_webhook_deliveries",
    "test_webhook_endpoint",
}
COMPOSE = "services:\n  web:\n    image: nginx:alpine\n"

passed = 0


def check(condition, what, detail=""):
    global passed
    if not condition:
        print(f"FAILED: {what} {detail}", file=sys.stderr)
        print(f"{passed} passed, 1 failed")
        sys.exit(1)
    passed += 1
    print(f"ok: {what}")


def rest(base, token, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        f"{base}{path}",
        data,
        method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    return json.load(urllib.request.urlopen(request))


def client(base, token):
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    return Client(streamable_http_client(f"{base}/mcp", http_client=http))


async def main(base, admin):
    # What the Playground needs: a Playroom whose host nothing answers on
    # (the status read is what matters), and a key without webhooks:write.
    playroom = rest(base, admin, "POST", "/api/playrooms",
                    {"playroom": {"name": "mcp-check", "host": "127.0.0.1", "port": 9}})["id"]
    reader = rest(base, admin, "POST", "/api/keys",
                  {"api_key": {"label": "mcp-check reader", "scopes": ["webhooks:read"]}})["token"]

    async with client(base, admin) as mcp:
        tools = (await mcp.list_tools()).tools
        names = {t.name for t in tools}
        check(SPEC_TOOLS <= names, "tools/list has the spec's webhook tools", sorted(SPEC_TOOLS - names))
        check({"launch", "get_playground_status"} <= names, "tools/list has launch and get_playground_status")
        check(all(t.input_schema.get("type") == "object" and t.description for t in tools),
              f"all {len(tools)} tools have a JSON schema and a description")

        created = await mcp.call_tool("create_webhook_endpoint",
                                      {"url": "http://127.0.0.1:9/hook", "events": ["webhook.test"],
                                       "description": "created by the MCP Python client"})
        endpoint = created.structured_content or {}
        check(not created.is_error and isinstance(endpoint.get("id"), int),
              "create_webhook_endpoint creates an endpoint", created)
        check(endpoint.get("enabled") is True and endpoint.get("failure_count") == 0
              and len(endpoint.get("secret", "")) == 64, "the new endpoint is enabled, 0 failures, 64-hex secret")
        shown = rest(base, admin, "GET", f"/api/webhook_endpoints/{endpoint['id']}")
        check(shown["url"] == "http://127.0.0.1:9/hook", "the REST API shows the endpoint the tool created")

        launched = await mcp.call_tool("launch", {"name": "mcp-check", "compose_yaml": COMPOSE,
                                                  "create_playground": True, "playroom_id": playroom})
        playground = (launched.structured_content or {}).get("playground_id")
        check(not launched.is_error and isinstance(playground, int), "launch creates a Playground", launched)

        status = await mcp.call_tool("get_playground_status", {"id": playground})
        content = status.structured_content or {}
        check(not status.is_error and content.get("id") == playground and isinstance(content.get("status"), str),
              f"get_playground_status reads the Playground's status ({content.get('status')})", status)

    async with client(base, reader) as mcp:
        refused = await mcp.call_tool("create_webhook_endpoint",
                                      {"url": "http://127.0.0.1:9/hook", "events": ["webhook.test"]})
        error = (refused.structured_content or {}).get("error", {})
        check(refused.is_error and error.get("code") == "FORBIDDEN" and "webhooks:write" in error.get("message", ""),
              "a key without webhooks:write gets a FORBIDDEN tool error", refused)
        text = json.loads(refused.content[0].text)
        check(text["error"]["code"] == "FORBIDDEN", "the error's text content is the envelope")
        listed = await mcp.call_tool("list_webhook_endpoints", {})
        check(not listed.is_error, "the same key may list endpoints (webhooks:read)", listed)

    try:
        urllib.request.urlopen(urllib.request.Request(f"{base}/mcp", b"{}", method="POST",
                                                      headers={"Content-Type": "application/json"}))
        check(False, "/mcp without a key is refused")
    except urllib.error.HTTPError as e:
        check(e.code == 401, "/mcp without a key is HTTP 401", e.code)

    print(f"{passed} passed, 0 failed")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
