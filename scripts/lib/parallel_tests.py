#!/usr/bin/env python3
"""Runs every test binary of the workspace, several at once.

`cargo test` runs its test binaries one after another; the end-to-end one
spends its time waiting on Docker, SSH and containers, not on the CPU, so
the suite's wall time is mostly waiting in series. This builds them once
(`cargo test --no-run`), then runs JOBS binaries at a time (each with its
own tests in parallel as usual), every one in its package's folder as
`cargo test` does, its output printed whole when it ends. The doc tests
run afterwards through cargo. Exit status: 0 when every binary passed.

    scripts/lib/parallel_tests.py [JOBS]

Environment (PLAY_TEST_BACKEND and the rest) passes through.
"""

import concurrent.futures
import json
import os
import subprocess
import sys
import time

CARGO = os.environ.get("CARGO", "cargo")


def binaries():
    """(name, executable, package folder) of every test binary."""
    build = subprocess.run(
        [CARGO, "test", "--workspace", "--locked", "--no-run", "--message-format=json-render-diagnostics"],
        stdout=subprocess.PIPE,
        check=True,
    )
    found = []
    for line in build.stdout.decode().splitlines():
        message = json.loads(line)
        if message.get("reason") != "compiler-artifact" or not message.get("profile", {}).get("test"):
            continue
        if not message.get("executable"):
            continue
        target = message["target"]
        name = f"{message['package_id'].split('#')[0].rsplit('/', 1)[-1]} {target['kind'][0]} {target['name']}"
        found.append((name, message["executable"], os.path.dirname(message["manifest_path"])))
    # The end-to-end binary is the long one: start it first.
    found.sort(key=lambda b: (not b[0].endswith(" e2e"), b[0]))
    return found


def run(binary):
    name, executable, folder = binary
    started = time.monotonic()
    env = dict(os.environ, CARGO_MANIFEST_DIR=folder)
    # Its tests wait on Docker and SSH far more than they compute: the one
    # end-to-end binary runs several at once, as the separate binaries it
    # replaces did (PLAY_E2E_THREADS, default 4: with 6, beside two other
    # binaries on 2 cores, CI saw an edge isolation probe fail once, see
    # docs/architecture.md, "Tests").
    if name.endswith(" e2e") and "RUST_TEST_THREADS" not in env:
        env["RUST_TEST_THREADS"] = os.environ.get("PLAY_E2E_THREADS", "4")
    done = subprocess.run([executable], cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return name, done.returncode, done.stdout.decode(errors="replace"), time.monotonic() - started


def main():
    jobs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    found = binaries()
    print(f"== {len(found)} test binaries, {jobs} at a time", flush=True)
    failed, times = [], []
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        running = [pool.submit(run, binary) for binary in found]
        for finished in concurrent.futures.as_completed(running):
            name, code, output, seconds = finished.result()
            times.append((seconds, name))
            print(f"\n== {name}: {'ok' if code == 0 else f'FAILED (exit {code})'} in {seconds:.1f} s", flush=True)
            print(output, end="", flush=True)
            if code != 0:
                failed.append(name)
    print("\n== slowest test binaries:", flush=True)
    for seconds, name in sorted(times, reverse=True)[:10]:
        print(f"   {seconds:7.1f} s  {name}")
    doc = subprocess.run([CARGO, "test", "--workspace", "--locked", "--doc"])
    if doc.returncode != 0:
        failed.append("doc tests")
    if failed:
        print(f"\n== FAILED: {', '.join(failed)}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
