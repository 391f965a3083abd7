#!/usr/bin/env bash
# Installs the Debian packages the tests use (when missing, and only as root) and the npm
# packages (`npm ci` when node_modules is missing or differs from package-lock.json).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v dnsmasq >/dev/null || need+=(dnsmasq)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v redis-server >/dev/null || need+=(redis-server)
[ -x /usr/bin/chromium ] || need+=(chromium)
command -v ping >/dev/null || need+=(iputils-ping)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx)
# GET /probe's tests: the real Prometheus and its promtool.
command -v prometheus >/dev/null || need+=(prometheus)
# The container image's test (scripts/container.sh): podman with runc, debootstrap for its base.
command -v podman >/dev/null || need+=(podman)
command -v runc >/dev/null || [ -x /usr/sbin/runc ] || need+=(runc)
command -v debootstrap >/dev/null || [ -x /usr/sbin/debootstrap ] || need+=(debootstrap)
# The compose test (test/support/compose-stack.ts): docker-compose on podman's API, netavark and
# aardvark-dns for a compose network whose containers find each other by name.
command -v docker-compose >/dev/null || need+=(docker-compose)
[ -x /usr/lib/podman/netavark ] || need+=(netavark)
[ -x /usr/lib/podman/aardvark-dns ] || need+=(aardvark-dns)
# netavark sets up a network's forwarding and NAT with iptables: without it every container
# of the compose network fails to start ("netavark: No such file or directory").
command -v iptables >/dev/null || [ -x /usr/sbin/iptables ] || need+=(iptables)
# bench/service.ts's per-core comparison: a load generator that costs little CPU per request.
command -v wrk >/dev/null || need+=(wrk)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "Installing Debian packages: ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    # The packages start system services of their own; the tests run their own on loopback.
    for s in dnsmasq postgresql redis-server nginx prometheus; do service "$s" stop >/dev/null 2>&1 || true; done
  else
    echo "Missing Debian packages: ${need[*]} (run as root, or: sudo apt-get install ${need[*]})" >&2
    exit 1
  fi
fi
if ! node scripts/check-lock.mjs --installed; then
  # Exactly the versions the lock file pins (`npm run check:lock` keeps it complete).
  npm ci --no-audit --no-fund
fi
