#!/usr/bin/env bash
# `npm test`: installs what the tests need on a fresh machine, starts the real servers they
# talk to on loopback, runs every test, and stops the servers it started.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/services.sh up
trap 'bash scripts/services.sh down' EXIT
npx vitest run "$@"
