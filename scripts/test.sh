#!/usr/bin/env bash
# `npm test`: installs what the tests need on a fresh machine, starts the real servers they
# talk to on loopback, runs every test, and stops the servers it started.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Stop only the servers this run started: another run (or the developer) may be using the
# others. A nested run inherits the marker and starts nothing, so it stops nothing.
OBSERVER_SERVICES_STARTED=$(bash scripts/services.sh up | tr '\n' ' ')
export OBSERVER_SERVICES_STARTED
trap '[ -z "${OBSERVER_SERVICES_STARTED// /}" ] || bash scripts/services.sh down $OBSERVER_SERVICES_STARTED' EXIT
# PostgreSQL and Redis listen on ports chosen when they started: their URLs, for the tests.
eval "$(bash scripts/services.sh env)"
mkdir -p .test-runtime
set +e
npx vitest run --reporter=default --reporter=json --outputFile.json=.test-runtime/vitest.json "$@"
code=$?
set -e
# One plain closing line that any CI can read.
node -e 'const r = JSON.parse(require("fs").readFileSync(".test-runtime/vitest.json", "utf8")); console.log(`Tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests} skipped`)' || true
exit $code
