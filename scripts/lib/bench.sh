# Sourced by the benchmark scripts: loopback ports, waiting for a server,
# the release binaries and the simulated Docker hosts.
# shellcheck shell=bash

# A free TCP port on 127.0.0.1.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Waits (30 s at most) until URL answers 2xx; exits the script otherwise.
wait_http() {
  for _ in $(seq 1 300); do curl -fs "$1" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "no answer from $1" >&2
  exit 1
}

# Builds the release `play` and `play-simhost` unless SKIP_BUILD is set, and
# sets `bin` to where they are: ${CARGO_TARGET_DIR:-target}/${PROFILE:-release}
# (PROFILE=debug with SKIP_BUILD=1 for a quick try).
build_sim_binaries() {
  [ -n "${SKIP_BUILD:-}" ] || cargo build --release --quiet -p play -p play-simhost
  bin="${CARGO_TARGET_DIR:-target}/${PROFILE:-release}"
  ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
}

# start_simhost DIR HOSTS LOG: serves DIR/host-0.sock .. DIR/host-<HOSTS-1>.sock
# (simulated latency READ_MS / WRITE_MS, 2 / 20 ms), sets `sim_pid` and
# returns once the last socket exists.
start_simhost() {
  "$bin/play-simhost" --dir "$1" --hosts "$2" --images play-test/busybox:1 --no-pull \
    --read-latency-ms "${READ_MS:-2}" --write-latency-ms "${WRITE_MS:-20}" >"$3" 2>&1 &
  sim_pid=$!
  until [ -S "$1/host-$(($2 - 1)).sock" ]; do
    kill -0 "$sim_pid" 2>/dev/null || { echo "play-simhost exited; see $3" >&2; cat "$3" >&2; exit 1; }
    sleep 0.1
  done
}

# serve_default FLAG: the default `play serve --help` shows for --FLAG.
serve_default() {
  "$bin/play" serve --help | grep -A1 -- "--$1 " | sed -n 's/.*\[default: \([^]]*\)\].*/\1/p' | head -n 1
}

# time_runs N CMD...: runs CMD N times, each a whole process (its start-up
# included), and prints the wall time's min, median and max.
time_runs() {
  local n=$1
  shift
  python3 - "$n" "$@" <<'PY'
import statistics, subprocess, sys, time
n, cmd = int(sys.argv[1]), sys.argv[2:]
walls = []
for _ in range(n):
    started = time.perf_counter()
    subprocess.run(cmd, check=True)
    walls.append((time.perf_counter() - started) * 1000)
print(f"{n} runs, wall: min {min(walls):.1f} ms, median {statistics.median(walls):.1f} ms, max {max(walls):.1f} ms")
PY
}
