#!/bin/sh
# The official redis image's entrypoint, in short: options alone run redis-server; as root, the
# server runs as the redis user. The official server is built with protected mode off (it
# listens on every address of the container, without a password); Debian's is not, so the
# option is given here, before the command's own, which may set it again.
set -eu
case "$1" in -*|*.conf) set -- redis-server "$@" ;; esac
if [ "$1" = redis-server ]; then
  shift
  set -- redis-server --protected-mode no "$@"
  if [ "$(id -u)" = 0 ]; then
    chown -R redis:redis .
    exec setpriv --reuid redis --regid redis --init-groups "$@"
  fi
fi
exec "$@"
