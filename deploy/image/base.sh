#!/usr/bin/env bash
# A Debian base image made from Debian's packages alone, for machines that reach no image registry:
# debootstrap a minbase root filesystem with the given packages, then `podman import` it.
#   bash deploy/image/base.sh IMAGE PACKAGE[,PACKAGE...]
# An existing IMAGE is kept (a cache, like the Kafka jars'); MIRROR_SINK_REBUILD_BASE=1 rebuilds it.
# The Debian mirror is the one apt is configured with. Needs root (debootstrap), as CI runs here.
set -euo pipefail
image=${1:?usage: $0 IMAGE PACKAGE[,PACKAGE...]}
packages=${2:?usage: $0 IMAGE PACKAGE[,PACKAGE...]}
# shellcheck source=deploy/image/podman-env.sh
source "$(dirname "$0")/podman-env.sh"
if [ "${MIRROR_SINK_REBUILD_BASE:-0}" != 1 ] && podman image exists "$image"; then
  exit 0
fi
mirror=$(awk '$1 == "URIs:" {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
mirror=${mirror:-$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)}
mirror=${mirror:-http://deb.debian.org/debian}
rootfs=$(mktemp -d)
trap 'rm -rf "$rootfs"' EXIT
echo "base.sh: debootstrap bookworm ($packages) from $mirror for $image" >&2
start=$SECONDS
if ! debootstrap --variant=minbase --include="$packages" bookworm "$rootfs" "$mirror" > "$rootfs.log" 2>&1; then
  tail -n 20 "$rootfs.log" >&2
  echo "base.sh: debootstrap failed (full log: $rootfs.log)" >&2
  exit 1
fi
rm -f "$rootfs.log"
# What an image never needs: package lists and archives, documentation, manuals, other locales.
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/usr/share/doc/* \
  "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/var/log/*
find "$rootfs"/usr/share/locale -mindepth 1 -maxdepth 1 ! -name 'C.*' -exec rm -rf {} +
tar -C "$rootfs" -c . | podman import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["/bin/bash"]' \
  - "$image" > /dev/null
echo "base.sh: $image in $((SECONDS - start)) s" >&2
