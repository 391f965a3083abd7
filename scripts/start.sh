#!/bin/sh
# What `npm start` runs: the service in this process (exec). Arguments go to node, before the
# entry point.
#   --max-old-space-size=512  (in NODE_OPTIONS, ahead of yours: yours win) a cap on the heap,
#                             so that the process fails before it outgrows a small machine
#   --max-semi-space-size=8   (likewise) a cap on V8's young generation, which otherwise grows
#                             to several times what a request's short-lived objects need and
#                             stays that size, idle, after start-up and after a load
#   MALLOC_ARENA_MAX=2        (unless set) glibc's allocator keeps two arenas instead of one per
#                             thread that allocates: less memory held idle and after a load
#                             (docs/performance.md)
export NODE_OPTIONS="--max-old-space-size=512 --max-semi-space-size=8 ${NODE_OPTIONS:-}"
export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
exec node "$@" dist/main.js
