"""A flood of requests at a sleeping Playground's URL (scripts/bench-sleep,
issue #49 item 7), and what it cost play, read from outside: `/metrics`
(store write transactions, the edge monitor's wake lines by outcome) and the
Playground's `playground.woke` events through the API.

  wake_flood.py PLAY_PORT TOKEN EDGE_PORT HOST PLAYGROUND REQUESTS SECONDS WINDOW KIND LABEL

Sends REQUESTS `GET /` to HOST on the edge at loopback, paced evenly over
SECONDS, each on a connection of its own: KIND `plain` (no body, no
`Accept: text/html`: each one is held by the edge until the service
answers) or `page` (a browser's page load, `Accept: text/html`: answered
at once with the waiting page while it sleeps); waits for every answer; samples the counters before the first request and WINDOW
seconds after it (a fixed window, so a flood and a single request are
compared over the same time, the wake's own writes included in both).
REQUESTS 0 measures the window with no request at all (the background).
Prints one row of scripts/bench-sleep's table (LABEL first), and the
figures as one JSON object on stderr. Standard library only."""

import asyncio
import json
import re
import sys
import time
import urllib.request

from benchlib import Api


def counters(port):
    """(store write transactions, {wake line outcome: count}) from /metrics."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    writes = re.search(r"^play_store_write_transactions_total (\d+)", text, re.M)
    lines = {m[1]: int(m[2]) for m in re.finditer(r'^play_edge_wake_lines_total\{outcome="(\w+)"\} (\d+)', text, re.M)}
    return (int(writes[1]) if writes else None), lines


def woke_events(api, playground):
    events = api.call("GET", f"/playgrounds/{playground}/events?limit=100")
    return sum(1 for e in events if e["event_type"] == "playground.woke")


async def one(edge_port, host, accept, started):
    """One request on its own connection: (status, seconds to the first byte;
    status 0 when it got no answer)."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", edge_port)
        writer.write(f"GET / HTTP/1.1\r\nHost: {host}\r\nAccept: {accept}\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        first = await asyncio.wait_for(reader.readline(), 45)
        at = time.monotonic() - started
        await asyncio.wait_for(reader.read(), 45)
        writer.close()
        parts = first.split()
        return (int(parts[1]) if len(parts) > 1 else 0), at
    except (OSError, asyncio.TimeoutError):
        return 0, time.monotonic() - started


async def flood(edge_port, host, accept, requests, seconds):
    tasks = []
    started = time.monotonic()
    for i in range(requests):
        due = started + seconds * i / requests
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(edge_port, host, accept, time.monotonic())))
    sent = time.monotonic() - started
    return await asyncio.gather(*tasks), sent


def main():
    port, token, edge_port, host, playground, requests, seconds, window, kind, label = sys.argv[1:11]
    accept = {"plain": "*/*", "page": "text/html,application/xhtml+xml"}[kind]
    requests, seconds, window = int(requests), float(seconds), float(window)
    api = Api(port, token)
    woke_before = woke_events(api, playground)
    writes_before, lines_before = counters(port)
    t0 = time.monotonic()
    answers, sent = asyncio.run(flood(int(edge_port), host, accept, requests, seconds)) if requests else ([], 0.0)
    done = time.monotonic() - t0
    if done < window:
        time.sleep(window - done)
    writes_after, lines_after = counters(port)
    codes = {}
    for status, _ in answers:
        codes[status] = codes.get(status, 0) + 1
    r = {
        "requests": requests,
        "sent_in_s": round(sent, 2),
        "answered_in_s": round(done, 2),
        "first_byte_s": round(answers[0][1], 2) if answers else None,
        "statuses": codes,
        "store_writes": None if writes_before is None else writes_after - writes_before,
        "wake_lines": {k: v - lines_before.get(k, 0) for k, v in lines_after.items() if v - lines_before.get(k, 0)},
        "woke_events": woke_events(api, playground) - woke_before,
    }
    print(json.dumps(r), file=sys.stderr)
    lines = ", ".join(f"{k} {v}" for k, v in sorted(r["wake_lines"].items())) or "-"
    first = "-" if r["first_byte_s"] is None else f"{r['first_byte_s']:.2f} s"
    answers = ", ".join(f"{v} x {k}" for k, v in sorted(codes.items())) or "-"
    print(f"| {label} | {r['store_writes']} | {r['woke_events']} | {lines} | {first} | {answers} |")


if __name__ == "__main__":
    main()
