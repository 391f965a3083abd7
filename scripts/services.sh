#!/usr/bin/env bash
# Starts (or stops) the real servers the tests talk to, on loopback only:
#   dnsmasq   127.0.0.1:5353   zone from test/fixtures/dnsmasq.conf
#   postgres  127.0.0.1:55432  trust auth, user postgres
#   redis     127.0.0.1:56379  no persistence
# `up` is idempotent: a server already answering is left as it is. Runtime files live in
# $OBSERVER_TEST_RUNTIME (default /tmp/observer-test-services).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNTIME=${OBSERVER_TEST_RUNTIME:-/tmp/observer-test-services}
DNS_PORT=5353 PG_PORT=55432 REDIS_PORT=56379
mkdir -p "$RUNTIME"

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

dns_up() {
  local conf="$PWD/test/fixtures/dnsmasq.conf" sum
  sum=$(sha1sum "$conf" | cut -d' ' -f1)
  if [ -f "$RUNTIME/dnsmasq.pid" ] && kill -0 "$(cat "$RUNTIME/dnsmasq.pid")" 2>/dev/null; then
    # Restart when the zone changed since it was started.
    [ "$(cat "$RUNTIME/dnsmasq.sum" 2>/dev/null)" = "$sum" ] && return 0
    kill "$(cat "$RUNTIME/dnsmasq.pid")" 2>/dev/null || true; sleep 0.3
  fi
  command -v dnsmasq >/dev/null || { echo "dnsmasq is not installed (apt-get install dnsmasq)" >&2; return 1; }
  dnsmasq --port=$DNS_PORT --listen-address=127.0.0.1 --bind-interfaces --no-resolv --no-hosts \
    --no-poll --user=root --conf-file="$conf" --pid-file="$RUNTIME/dnsmasq.pid" \
    --log-facility="$RUNTIME/dnsmasq.log"
  echo "$sum" > "$RUNTIME/dnsmasq.sum"
}

pg_up() {
  port_open $PG_PORT && return 0
  local bin; bin=$(pg_bin)
  [ -n "$bin" ] || { echo "PostgreSQL is not installed (apt-get install postgresql)" >&2; return 1; }
  local data="$RUNTIME/pgdata"
  if [ ! -f "$data/PG_VERSION" ]; then
    rm -rf "$data"; mkdir -p "$data"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$data" "$RUNTIME"
    as_postgres "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 >/dev/null
  fi
  [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$data"
  as_postgres "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 \
    -o "-p $PG_PORT -k $data -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null
}

redis_up() {
  port_open $REDIS_PORT && return 0
  command -v redis-server >/dev/null || { echo "redis-server is not installed (apt-get install redis-server)" >&2; return 1; }
  redis-server --port $REDIS_PORT --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
    --pidfile "$RUNTIME/redis.pid" --logfile "$RUNTIME/redis.log" >/dev/null
  for _ in $(seq 50); do port_open $REDIS_PORT && return 0; sleep 0.1; done
  echo "redis did not start" >&2; return 1
}

down() {
  [ -f "$RUNTIME/dnsmasq.pid" ] && kill "$(cat "$RUNTIME/dnsmasq.pid")" 2>/dev/null || true
  [ -f "$RUNTIME/redis.pid" ] && kill "$(cat "$RUNTIME/redis.pid")" 2>/dev/null || true
  local bin; bin=$(pg_bin)
  if [ -n "$bin" ] && [ -f "$RUNTIME/pgdata/postmaster.pid" ]; then
    as_postgres "$bin/pg_ctl" -D "$RUNTIME/pgdata" -m fast stop >/dev/null 2>&1 || true
  fi
}

case "${1:-up}" in
  up) dns_up; pg_up; redis_up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
