"""Shared by the benchmark scripts (scripts/bench-scale, scripts/bench-replicas):
a small HTTP client for play's API, a thread-pool helper, and the Compose
file the simulated-host benchmarks run. Standard library only."""

import http.client
import json
import sys
from concurrent.futures import ThreadPoolExecutor

# Two services, one named volume: what the simulated-host benchmarks run.
COMPOSE = """services:
  db:
    image: play-test/busybox:1
    command: ["sleep", "3600"]
    volumes: ["data:/data"]
  web:
    image: play-test/busybox:1
    command: ["sleep", "3600"]
    depends_on: [db]
volumes:
  data: {}
"""


class Api:
    """One keep-alive connection to `play serve` on loopback."""

    def __init__(self, port, token):
        self.port, self.token = int(port), token
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)

    def request(self, method, path, body=None):
        """(status, parsed body or raw bytes) of `method /api<path>`."""
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        self.conn.request(method, "/api" + path, json.dumps(body) if body is not None else None, headers)
        r = self.conn.getresponse()
        data = r.read()
        try:
            return r.status, (json.loads(data) if data else None)
        except ValueError:
            return r.status, data

    def call(self, method, path, body=None, ok=(200, 201, 202)):
        """The parsed body of `method /api<path>`; exits on any other status."""
        status, data = self.request(method, path, body)
        if status not in ok:
            raise SystemExit(f"{method} {path}: {status} {str(data)[:500]}")
        return data


def parallel(fn, items, apis, workers=16):
    """fn(api, item) for every item on `workers` threads, results in item
    order. Worker w gets apis(w) (an Api); item i runs on worker i % workers."""

    def run(w):
        api = apis(w)
        return [fn(api, item) for item in items[w::workers]]

    with ThreadPoolExecutor(workers) as pool:
        parts = list(pool.map(run, range(workers)))
    out = [None] * len(items)
    for w, part in enumerate(parts):
        out[w::workers] = part
    return out


def create_playrooms(api_for, sim, hosts, workers=16):
    """A local Playroom (edge off) on every simulated host socket
    `<sim>/host-<i>.sock`; their ids, in socket order."""
    return parallel(lambda a, i: a.call("POST", "/playrooms", {"playroom": {
        "name": f"sim-{i}", "connection": "local", "docker_socket": f"{sim}/host-{i}.sock",
        "edge": {"enabled": False}}})["id"], list(range(hosts)), api_for, workers)


def log(prefix, msg):
    print(f"[{prefix}] {msg}", file=sys.stderr, flush=True)
