#!/usr/bin/env bash
# Build the worker image offline and save it as an OCI archive:
#   bash deploy/image/image.sh [--spark] [--base IMAGE]     (bash deploy/dev.sh image runs this)
# --spark builds the Spark runtime's image instead (deploy/spark/Containerfile: PySpark and a JRE).
# Without --base it builds on a Debian base made here from Debian packages (deploy/image/base.sh),
# for machines that reach no registry; --base docker.io/library/python:3.11-slim-bookworm is the
# Containerfile's own default where a registry is reachable. Prints the image name and the archive path.
#   MIRROR_SINK_IMAGE   the name (default localhost/mirror-sink:<version>, or localhost/mirror-sink-spark:<version>)
#   MIRROR_SINK_IMAGE_LOAD=0   do not load it into the user's default podman store as well
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
# shellcheck source=deploy/image/podman-env.sh
source deploy/image/podman-env.sh
base="" spark=0
while [ $# -gt 0 ]; do
  case "$1" in
    --spark) spark=1; shift ;;
    --base) base=${2:?--base needs an image}; shift 2 ;;
    *) echo "usage: $0 [--spark] [--base IMAGE]" >&2; exit 2 ;;
  esac
done
python=.venv/bin/python
[ -x "$python" ] || python=$(command -v python3)
version=$("$python" -c 'import re, pathlib; print(re.search(r"__version__ = \"(.+)\"", pathlib.Path("mirror_sink/__init__.py").read_text())[1])')
revision=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
name=mirror-sink containerfile=deploy/image/Containerfile project=. packages=python3,python3-venv,ca-certificates
if [ "$spark" = 1 ]; then
  name=mirror-sink-spark containerfile=deploy/spark/Containerfile project=".[spark]"
  packages=$packages,openjdk-17-jre-headless,procps
fi
image=${MIRROR_SINK_IMAGE:-localhost/$name:$version}
if [ -z "$base" ]; then
  base=localhost/$name-base:bookworm
  bash deploy/image/base.sh "$base" "$packages"
fi
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
start=$SECONDS
# The wheels of mirror-sink and its dependencies, from pip's cache when warm; dumb-init is the init.
[ -d build ] && had_build=1 || had_build=0
"$python" -m pip wheel --quiet --disable-pip-version-check --wheel-dir "$context/wheels" "$project" dumb-init >&2
cp deploy/spark/submit_entry.py "$context/"
[ "$had_build" = 1 ] || rm -rf build  # setuptools' scratch in the checkout, which mypy would then see
echo "image.sh: wheels in $((SECONDS - start)) s" >&2
podman build --quiet --network none --file "$containerfile" \
  --build-arg "BASE=$base" --build-arg "VERSION=$version" --build-arg "REVISION=$revision" \
  --tag "$image" "$context" > /dev/null
# The image this name held before and the build stage are left untagged: gone, or each build would
# keep a few hundred MB more of the cache's disk.
podman image prune --force > /dev/null
archive="$root/dist/$name-$version.oci.tar"
mkdir -p "$root/dist"
rm -f "$archive"
skopeo copy --quiet "containers-storage:$image" "oci-archive:$archive:$image"
echo "image.sh: built in $((SECONDS - start)) s, $(podman image inspect --format '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1 / 1e6}')" >&2
# The build's store is the project's own (podman-env.sh); a plain `podman run` reads the user's
# default store, so the image goes there too (MIRROR_SINK_IMAGE_LOAD=0 skips it).
if [ "${MIRROR_SINK_IMAGE_LOAD:-1}" = 1 ]; then
  if env -u CONTAINERS_CONF -u CONTAINERS_STORAGE_CONF podman load --quiet --input "$archive" > /dev/null 2>&1; then
    echo "image.sh: loaded into podman's default store: podman run ... $image" >&2
  else
    echo "image.sh: not loaded into podman's default store; load it with: podman load -i $archive" >&2
  fi
fi
echo "$image"
echo "$archive"
