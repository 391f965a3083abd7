#!/bin/sh
# What `npm start` runs: the service in this process (exec), with the heap settings of
# docs/performance.md#memory. Arguments go to node, before the entry point.
#   --max-semi-space-size=16  fewer short-lived objects reach the old generation
#   --expose-gc               the memory release asks for young-generation collections
#   --max-old-space-size=512  (in NODE_OPTIONS, ahead of yours: yours win)
#   --memory-pool-timeout=1   where V8 has it (Node 26 on): pages a collection frees go back
#                             to the system after a second instead of staying pooled; older
#                             lines refuse it as a bad option, so it is passed only if known.
#   MALLOC_ARENA_MAX=2        (unless set) glibc's allocator keeps two arenas instead of one per
#                             thread that allocates: less memory held idle and after a load.
flags="--max-semi-space-size=16 --expose-gc"
case "$(node --v8-options)" in
  *--memory-pool-timeout*) flags="$flags --memory-pool-timeout=1" ;;
esac
export NODE_OPTIONS="--max-old-space-size=512 ${NODE_OPTIONS:-}"
export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
exec node $flags "$@" dist/main.js
