#!/usr/bin/env bash
# `npm run bench`: every benchmark in bench/, one after the other (they must not compete for
# the two cores). Each prints its figures and ratios against a baseline measured in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Worker threads run the built modules, also for the benches that run from the sources.
node scripts/build-if-stale.mjs
# Stop only the servers this run started: another run (or the developer) may be using the
# others. A nested run inherits the marker and starts nothing, so it stops nothing.
OBSERVER_SERVICES_STARTED=$(bash scripts/services.sh up | tr '\n' ' ')
export OBSERVER_SERVICES_STARTED
trap '[ -z "${OBSERVER_SERVICES_STARTED// /}" ] || bash scripts/services.sh down $OBSERVER_SERVICES_STARTED' EXIT
# PostgreSQL and Redis listen on ports chosen when they started: their URLs, for the tests.
eval "$(bash scripts/services.sh env)"
only=${1:-}
# The figures that answer the targets, gathered from every benchmark and printed at the end.
BENCH_SUMMARY=$(mktemp)
export BENCH_SUMMARY
failed=0
for f in bench/*.ts; do
  case "$f" in bench/support.ts | bench/minimal-server.ts) continue ;; esac
  [ -n "$only" ] && [[ "$f" != *"$only"* ]] && continue
  echo "== $f"
  # One benchmark failing does not stop the others; the run fails at the end.
  if ! npx tsx "$f"; then
    echo "$f failed" | tee -a "$BENCH_SUMMARY"
    failed=1
  fi
  echo
done
echo "== summary (npm run bench${only:+ -- $only}, $(date -u +%Y-%m-%d), $(nproc) cores)"
cat "$BENCH_SUMMARY"
rm -f "$BENCH_SUMMARY"
exit $failed
