#!/usr/bin/env bash
# Starts (or stops) the real servers the tests talk to, on loopback only:
#   dnsmasq   127.0.0.1:5353        zone from test/fixtures/dnsmasq.conf (a fixed port: the
#                                   zone's SRV tests and DNS_SERVERS in the tests name it)
#   postgres  127.0.0.1:<free port> trust auth, user postgres, data in $RUNTIME/pgdata
#   redis     127.0.0.1:<free port> no persistence
# PostgreSQL and Redis get a port the kernel reports free when they start, so the suite runs
# beside anything else on the machine. `up` is idempotent, but it only ever reuses a server it
# started itself, recognised by its pid file in $RUNTIME (a live process of the right program,
# answering on the port recorded beside it), never whatever happens to listen on a port. The
# one exception is dnsmasq's fixed port: a dnsmasq already there serving the very same zone
# file (another checkout's test run) is shared, never stopped; anything else there is an error.
#
# `up` prints the names of the servers it started itself (dns, postgres, redis), one a line,
# so that a caller stops only those: `down NAME...`; `down` alone stops all three. `env` prints
# the servers' addresses as shell assignments (OBSERVER_TEST_POSTGRES_URL,
# OBSERVER_TEST_REDIS_URL, OBSERVER_TEST_RUNTIME) for `eval`; test/support/services.ts reads
# the same variables, or the port files in $RUNTIME when they are unset. Runtime files live in
# $OBSERVER_TEST_RUNTIME (default /tmp/observer-test-services).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNTIME=${OBSERVER_TEST_RUNTIME:-/tmp/observer-test-services}
DNS_PORT=5353
mkdir -p "$RUNTIME"

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
# A TCP port on 127.0.0.1 that nothing holds (scripts/ports.mjs).
free_port() { node scripts/ports.mjs; }
# Is $1 a live process whose command line contains $2?
alive_as() {
  [ -n "$1" ] && kill -0 "$1" 2>/dev/null && tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null | grep -q -- "$2"
}
# The pid of the process listening on TCP 127.0.0.1:$1, if any.
listener_pid() { ss -Hltnp "sport = :$1" 2>/dev/null | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2; }

# Each *_up returns 0 when it started its server, 3 when one it may use was already running.
dns_up() {
  local conf="$PWD/test/fixtures/dnsmasq.conf" sum pid
  sum=$(sha1sum "$conf" | cut -d' ' -f1)
  pid=$(cat "$RUNTIME/dnsmasq.pid" 2>/dev/null || true)
  if alive_as "$pid" dnsmasq; then
    # Restart when the zone changed since it was started.
    [ "$(cat "$RUNTIME/dnsmasq.sum" 2>/dev/null)" = "$sum" ] && return 3
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  if port_open $DNS_PORT; then
    # Another checkout's test dnsmasq (another runtime dir) with the same zone file content:
    # share it (not ours to stop). Anything else on the mandated port is an error.
    local other other_conf
    other=$(listener_pid $DNS_PORT)
    other_conf=$(tr '\0' '\n' < "/proc/$other/cmdline" 2>/dev/null | sed -n 's/^--conf-file=//p' | head -n 1)
    if alive_as "$other" dnsmasq && [ -f "$other_conf" ] && [ "$(sha1sum "$other_conf" | cut -d' ' -f1)" = "$sum" ]; then
      return 3
    fi
    echo "127.0.0.1:$DNS_PORT is taken by pid ${other:-?} ($(tr '\0' ' ' < "/proc/$other/cmdline" 2>/dev/null || echo unknown)), not a test dnsmasq with this zone; the tests need that port" >&2
    return 1
  fi
  command -v dnsmasq >/dev/null || { echo "dnsmasq is not installed (apt-get install dnsmasq)" >&2; return 1; }
  dnsmasq --port=$DNS_PORT --listen-address=127.0.0.1 --bind-interfaces --no-resolv --no-hosts \
    --no-poll --user=root --conf-file="$conf" --pid-file="$RUNTIME/dnsmasq.pid" \
    --log-facility="$RUNTIME/dnsmasq.log"
  echo "$sum" > "$RUNTIME/dnsmasq.sum"
}

# PostgreSQL's own pid file names the port it listens on (line 4): ours when its postmaster
# (from $RUNTIME/pgdata) is alive and answers there.
pg_running_port() {
  local data="$RUNTIME/pgdata" pid port
  [ -f "$data/postmaster.pid" ] || return 1
  pid=$(sed -n 1p "$data/postmaster.pid"); port=$(sed -n 4p "$data/postmaster.pid")
  alive_as "$pid" "$data" && [ -n "$port" ] && port_open "$port" && echo "$port"
}

pg_up() {
  local port
  if port=$(pg_running_port); then echo "$port" > "$RUNTIME/postgres.port"; return 3; fi
  local bin; bin=$(pg_bin)
  [ -n "$bin" ] || { echo "PostgreSQL is not installed (apt-get install postgresql)" >&2; return 1; }
  local data="$RUNTIME/pgdata"
  if [ ! -f "$data/PG_VERSION" ]; then
    rm -rf "$data"; mkdir -p "$data"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$data" "$RUNTIME"
    as_postgres "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 >/dev/null
  fi
  [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$data"
  # The port is free when chosen; should another process take it before PostgreSQL binds it,
  # PostgreSQL fails to start and another port is tried.
  for _ in 1 2 3; do
    port=$(free_port)
    if as_postgres "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 \
      -o "-p $port -k $data -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null; then
      echo "$port" > "$RUNTIME/postgres.port"
      return 0
    fi
  done
  echo "PostgreSQL did not start (see $data/server.log)" >&2; return 1
}

# Ours: the pid in redis-server.pid is a live redis-server that answers on the port in
# redis-server.port and reports that very pid as its own.
redis_running_port() {
  local pid port
  pid=$(cat "$RUNTIME/redis-server.pid" 2>/dev/null || true)
  port=$(cat "$RUNTIME/redis-server.port" 2>/dev/null || true)
  alive_as "$pid" redis-server && [ -n "$port" ] && redis_is "$port" "$pid" && echo "$port"
}
redis_is() { [ "$(redis-cli -h 127.0.0.1 -p "$1" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p')" = "$2" ]; }

redis_up() {
  redis_running_port >/dev/null && return 3
  command -v redis-server >/dev/null || { echo "redis-server is not installed (apt-get install redis-server)" >&2; return 1; }
  local port pid
  for _ in 1 2 3; do
    port=$(free_port)
    rm -f "$RUNTIME/redis-server.pid"
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
      --pidfile "$RUNTIME/redis-server.pid" --logfile "$RUNTIME/redis-server.log" >/dev/null || continue
    # Up when the process in the pid file answers on the port as itself (not a process that
    # took the port in between).
    for _ in $(seq 50); do
      pid=$(cat "$RUNTIME/redis-server.pid" 2>/dev/null || true)
      if [ -n "$pid" ] && redis_is "$port" "$pid"; then echo "$port" > "$RUNTIME/redis-server.port"; return 0; fi
      [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null && break
      sleep 0.1
    done
    [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null || true
  done
  echo "redis did not start (see $RUNTIME/redis-server.log)" >&2; return 1
}

dns_down() {
  local pid; pid=$(cat "$RUNTIME/dnsmasq.pid" 2>/dev/null || true)
  if alive_as "$pid" dnsmasq; then kill "$pid" 2>/dev/null || true; fi
}
redis_down() {
  local pid; pid=$(cat "$RUNTIME/redis-server.pid" 2>/dev/null || true)
  if alive_as "$pid" redis-server; then kill "$pid" 2>/dev/null || true; fi
  rm -f "$RUNTIME/redis-server.port"
}
pg_down() {
  local bin; bin=$(pg_bin)
  if [ -n "$bin" ] && [ -f "$RUNTIME/pgdata/postmaster.pid" ]; then
    as_postgres "$bin/pg_ctl" -D "$RUNTIME/pgdata" -m fast stop >/dev/null 2>&1 || true
  fi
  rm -f "$RUNTIME/postgres.port"
}

up() {
  local name code
  for name in dns pg redis; do
    code=0
    "${name}_up" >&2 || code=$?
    case $code in
      0) [ "$name" = pg ] && echo postgres || echo "$name" ;;
      3) ;;
      *) return "$code" ;;
    esac
  done
}

# Assignments for `eval "$(bash scripts/services.sh env)"`, from the running servers.
print_env() {
  local pg_port redis_port
  pg_port=$(pg_running_port) || { echo "PostgreSQL is not running (scripts/services.sh up)" >&2; return 1; }
  redis_port=$(redis_running_port) || { echo "Redis is not running (scripts/services.sh up)" >&2; return 1; }
  printf 'export OBSERVER_TEST_RUNTIME=%q\n' "$RUNTIME"
  printf 'export OBSERVER_TEST_POSTGRES_URL=%q\n' "postgres://postgres@127.0.0.1:$pg_port/postgres"
  printf 'export OBSERVER_TEST_REDIS_URL=%q\n' "redis://127.0.0.1:$redis_port"
}

cmd=${1:-up}
[ $# -gt 0 ] && shift
case "$cmd" in
  up) up ;;
  env) print_env ;;
  down)
    [ $# -gt 0 ] || set -- dns postgres redis
    for name in "$@"; do
      case "$name" in dns) dns_down ;; postgres) pg_down ;; redis) redis_down ;; *) echo "unknown server: $name" >&2; exit 2 ;; esac
    done ;;
  *) echo "usage: $0 up | env | down [dns|postgres|redis]..." >&2; exit 2 ;;
esac
