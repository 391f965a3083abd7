# Observer's container image. docs/container.md tells how to build and run it.
#
#   docker build -t observer .
#   docker run -p 8080:8080 -v observer-data:/app/data observer
#
# BASE is any Debian bookworm image with Node in /usr/local (node in bin, headers in
# include/node) and npm: the official image by default; scripts/container.sh makes one from
# Debian's packages where no image registry can be reached.
ARG BASE=node:26-bookworm-slim

# The runtime dependencies. Native addons without a prebuilt binary for this Node compile here
# (node-gyp: python3, make, g++); libcap2-bin's setcap gives the entrypoint's setpriv its file
# capability; tini is the image's process 1.
FROM ${BASE} AS deps
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ libcap2-bin tini \
 && rm -rf /var/lib/apt/lists/*
# node-gyp builds against the headers of the Node in the image instead of downloading them.
ENV npm_config_nodedir=/usr/local
WORKDIR /build
COPY package.json package-lock.json ./
# The project's own `prepare` (its build) needs the sources and the dev dependencies: it runs
# in the build stage below. The compilers' object files are not loaded at run time.
RUN npm pkg delete scripts.prepare \
 && npm ci --omit=dev --no-audit --no-fund \
 && find node_modules -path '*/build/Release/*' \( -name obj -o -name obj.target -o -name .deps \) -prune -exec rm -rf {} +
# setpriv with CAP_NET_RAW in its permitted set only (no effective bit: it never fails to start
# where the container lacks the capability); see deploy/container-entrypoint.sh.
RUN cp /usr/bin/setpriv /build/observer-setpriv \
 && setcap cap_net_raw+p /build/observer-setpriv

# dist/: the compiled service and the web front. TypeScript and esbuild need no install script
# (esbuild's binary comes in its platform package), and the dev dependencies' native addons
# (test servers) are not wanted: none runs.
FROM ${BASE} AS build
WORKDIR /build
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src src
COPY web web
RUN npm run build

FROM ${BASE}
# A user of its own, without a login or a home of its own: nothing it runs needs either.
RUN groupadd --system --gid 10001 observer \
 && useradd --system --uid 10001 --gid observer --home-dir /app --no-create-home --shell /usr/sbin/nologin observer
WORKDIR /app
# Everything but data/ belongs to root: the service cannot change its own code.
COPY package.json ./
COPY --from=deps /build/node_modules node_modules
COPY --from=build /build/dist dist
COPY assets assets
COPY --from=deps /build/observer-setpriv /usr/local/libexec/observer-setpriv
COPY --from=deps /usr/bin/tini-static /usr/local/bin/tini
COPY deploy/container-entrypoint.sh /usr/local/bin/observer-entrypoint
# The SQLite database (DATABASE_URL's default, ./data/observer.db) lives on a volume.
RUN mkdir data && chown observer:observer data
VOLUME /app/data
ENV HOST=0.0.0.0 \
    PORT=8080
EXPOSE 8080
USER 10001:10001
# Health as an uptime monitor sees it: 200 with status OK. Node's fetch, since the image has
# neither curl nor wget.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/api/v1/status`, { signal: AbortSignal.timeout(4000) }).then((r) => r.json()).then((b) => process.exit(b.status === 'OK' ? 0 : 1), () => process.exit(1))"]
# tini is process 1: it passes SIGTERM from `docker stop` (and every other signal) on to node
# and reaps whatever exits beneath it; node, which the entrypoint execs, stops accepting,
# finishes the requests in flight (or ends the migration's step in progress) and exits 0,
# and tini exits with node's code.
ENTRYPOINT ["/usr/local/bin/tini", "--", "/usr/local/bin/observer-entrypoint"]
# The heap limits and the malloc arenas of the start script; NODE_OPTIONS or MALLOC_ARENA_MAX
# given to the container replace them (docs/container.md).
ENV NODE_OPTIONS="--max-old-space-size=512 --max-semi-space-size=8" \
    MALLOC_ARENA_MAX=2
# What scripts/start.sh runs (the image carries no scripts/).
CMD ["node", "dist/main.js"]
