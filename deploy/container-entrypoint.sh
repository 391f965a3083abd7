#!/bin/sh
# The container's entrypoint: runs the command (node) with CAP_NET_RAW when the container may
# have it, so that the `icmp` field can be measured, and without any capability otherwise.
#
# The service runs as a non-root user, whose processes get no effective capability from the
# runtime's set (Docker grants them to root only; Podman only those given with --cap-add).
# observer-setpriv is a copy of util-linux's setpriv carrying the file capability
# cap_net_raw+p: where CAP_NET_RAW is in the container's bounding set (Docker's default, or
# --cap-add NET_RAW), it makes CAP_NET_RAW ambient, so the node it execs holds it and nothing
# else. Where the runtime withholds it (--cap-drop NET_RAW, no-new-privileges), the trial run
# fails and node starts without it: `icmp` is then null.
set -eu
setpriv=/usr/local/libexec/observer-setpriv
if [ -x "$setpriv" ] && "$setpriv" --inh-caps +net_raw --ambient-caps +net_raw -- true 2>/dev/null; then
  exec "$setpriv" --inh-caps +net_raw --ambient-caps +net_raw -- "$@"
fi
exec "$@"
