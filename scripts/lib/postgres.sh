# Sourced by scripts: start_postgres starts a throwaway PostgreSQL on a free
# loopback port and exports PLAY_TEST_POSTGRES_URL (an admin URL); it stops
# and is removed when the calling script exits, after the caller's own EXIT
# trap (which typically stops what uses the database) has run.
# shellcheck shell=bash

_pg_run() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start_postgres() {
  _pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  _pg_dir=$(mktemp -d /tmp/play-pg.XXXXXX)
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  if [ "$(id -u)" -eq 0 ]; then chown postgres "$_pg_dir"; fi
  _pg_chain_exit_trap
  _pg_run "$_pg_bin/initdb" -D "$_pg_dir/data" -A trust -U play >/dev/null
  _pg_run "$_pg_bin/pg_ctl" -D "$_pg_dir/data" -l "$_pg_dir/log" -w \
    -o "-p $port -k $_pg_dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=400" start >/dev/null
  export PLAY_TEST_POSTGRES_URL="postgres://play@127.0.0.1:$port/postgres"
}

# Sets the EXIT trap to the caller's (if any), then stop_postgres: replacing
# it would leave the caller's processes running when the script exits.
_pg_chain_exit_trap() {
  local previous
  eval "set -- $(trap -p EXIT)"
  previous=${3:-}
  # shellcheck disable=SC2064 # the caller's trap is expanded now, on purpose
  trap "${previous:+$previous; }stop_postgres" EXIT
}

stop_postgres() {
  [ -n "${_pg_dir:-}" ] || return 0
  _pg_run "$_pg_bin/pg_ctl" -D "$_pg_dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$_pg_dir"
  _pg_dir=
}
