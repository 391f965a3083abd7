#!/usr/bin/env bash
# Starts (or stops) the real servers the tests talk to, on loopback only:
#   dnsmasq   127.0.0.1:5353   zone from test/fixtures/dnsmasq.conf
#   postgres  127.0.0.1:55432  trust auth, user postgres
#   redis     127.0.0.1:56379  no persistence
# `up` is idempotent: a server already answering is left as it is. It prints the names of the
# servers it started itself (dns, postgres, redis), one a line, so that a caller stops only
# those: `down NAME...`; `down` alone stops all three. Runtime files live in
# $OBSERVER_TEST_RUNTIME (default /tmp/observer-test-services).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNTIME=${OBSERVER_TEST_RUNTIME:-/tmp/observer-test-services}
DNS_PORT=5353 PG_PORT=55432 REDIS_PORT=56379
mkdir -p "$RUNTIME"

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

# Each *_up returns 0 when it started its server, 3 when one was already answering.
dns_up() {
  local conf="$PWD/test/fixtures/dnsmasq.conf" sum
  sum=$(sha1sum "$conf" | cut -d' ' -f1)
  if [ -f "$RUNTIME/dnsmasq.pid" ] && kill -0 "$(cat "$RUNTIME/dnsmasq.pid")" 2>/dev/null; then
    # Restart when the zone changed since it was started.
    [ "$(cat "$RUNTIME/dnsmasq.sum" 2>/dev/null)" = "$sum" ] && return 3
    kill "$(cat "$RUNTIME/dnsmasq.pid")" 2>/dev/null || true; sleep 0.3
  fi
  command -v dnsmasq >/dev/null || { echo "dnsmasq is not installed (apt-get install dnsmasq)" >&2; return 1; }
  dnsmasq --port=$DNS_PORT --listen-address=127.0.0.1 --bind-interfaces --no-resolv --no-hosts \
    --no-poll --user=root --conf-file="$conf" --pid-file="$RUNTIME/dnsmasq.pid" \
    --log-facility="$RUNTIME/dnsmasq.log"
  echo "$sum" > "$RUNTIME/dnsmasq.sum"
}

pg_up() {
  port_open $PG_PORT && return 3
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
  port_open $REDIS_PORT && return 3
  command -v redis-server >/dev/null || { echo "redis-server is not installed (apt-get install redis-server)" >&2; return 1; }
  redis-server --port $REDIS_PORT --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
    --pidfile "$RUNTIME/redis.pid" --logfile "$RUNTIME/redis.log" >/dev/null
  for _ in $(seq 50); do port_open $REDIS_PORT && return 0; sleep 0.1; done
  echo "redis did not start" >&2; return 1
}

dns_down() { [ -f "$RUNTIME/dnsmasq.pid" ] && kill "$(cat "$RUNTIME/dnsmasq.pid")" 2>/dev/null || true; }
redis_down() { [ -f "$RUNTIME/redis.pid" ] && kill "$(cat "$RUNTIME/redis.pid")" 2>/dev/null || true; }
pg_down() {
  local bin; bin=$(pg_bin)
  if [ -n "$bin" ] && [ -f "$RUNTIME/pgdata/postmaster.pid" ]; then
    as_postgres "$bin/pg_ctl" -D "$RUNTIME/pgdata" -m fast stop >/dev/null 2>&1 || true
  fi
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

cmd=${1:-up}
[ $# -gt 0 ] && shift
case "$cmd" in
  up) up ;;
  down)
    [ $# -gt 0 ] || set -- dns postgres redis
    for name in "$@"; do
      case "$name" in dns) dns_down ;; postgres) pg_down ;; redis) redis_down ;; *) echo "unknown server: $name" >&2; exit 2 ;; esac
    done ;;
  *) echo "usage: $0 up | down [dns|postgres|redis]..." >&2; exit 2 ;;
esac
