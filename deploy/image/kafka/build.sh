#!/usr/bin/env bash
# Build the Kafka image of the testcontainers backend offline, from the Kafka jars devkafka caches
# (Maven Central), and print its name:
#   bash deploy/image/kafka/build.sh [--base IMAGE] [IMAGE]
# IMAGE defaults to localhost/mirror-sink-kafka:<Kafka version> (MIRROR_SINK_KAFKA_VERSION picks the
# version, as for the local clusters). An image built from the same recipe (this folder, the base,
# the version) is kept: a cache, like the jars' (MIRROR_SINK_REBUILD_KAFKA_IMAGE=1 rebuilds).
# Without --base the base is a Debian JRE image made here from Debian packages (deploy/image/base.sh).
#   MIRROR_SINK_CONTAINER_ENGINE  podman (default) or docker; docker needs --base (base.sh is podman's)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
engine=${MIRROR_SINK_CONTAINER_ENGINE:-podman}
base=""
if [ "${1:-}" = "--base" ]; then
  base=${2:?--base needs an image}
  shift 2
fi
if [ "$engine" = podman ]; then
  # shellcheck source=deploy/image/podman-env.sh
  source "$root/deploy/image/podman-env.sh"
elif [ -z "$base" ]; then
  echo "build.sh: with $engine, give --base IMAGE (an image with Java 17+, bash and hostname)" >&2
  exit 2
fi
python=$root/.venv/bin/python
[ -x "$python" ] || python=$(command -v python3)
# The jars (downloaded once into the cache) and their version, as the local clusters get them.
{ read -r version; read -r libs; } < <(cd "$root" && "$python" -c \
  'from devkafka import KafkaJars; j = KafkaJars.ensure(); print(j.version); print(j.libs)')
image=${1:-localhost/mirror-sink-kafka:$version}
if [ -z "$base" ]; then
  base=localhost/mirror-sink-base-jre:bookworm
  bash "$root/deploy/image/base.sh" "$base" openjdk-17-jre-headless,ca-certificates
fi
# What the image is made of, but the jars (a version's jars never change): the files here, with
# their modes, the base and the version.
recipe=$(cd "$here" && { find Containerfile rootfs -type f -printf '%p %m\n' | sort; \
  find Containerfile rootfs -type f -print0 | sort -z | xargs -0 cat; echo "$base $version"; } | sha256sum | cut -c1-16)
if [ "${MIRROR_SINK_REBUILD_KAFKA_IMAGE:-0}" != 1 ] \
  && [ "$("$engine" image inspect --format '{{index .Config.Labels "io.mirror-sink.kafka-image.recipe"}}' "$image" 2>/dev/null)" = "$recipe" ]; then
  echo "$image"
  exit 0
fi
replaced=$("$engine" image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
start=$SECONDS
cp -r "$libs" "$context/libs"
cp -r "$here/rootfs" "$context/rootfs"
chmod 0755 "$context"/rootfs/usr/local/bin/* "$context"/rootfs/etc/confluent/docker/{configure,launch,run}
"$engine" build --quiet --network none --file "$here/Containerfile" \
  --build-arg "BASE=$base" --build-arg "KAFKA_VERSION=$version" --build-arg "RECIPE=$recipe" \
  --tag "$image" "$context" > /dev/null
# The image this one replaces, left untagged, goes (unless a container still uses it).
if [ -n "$replaced" ] && [ "$replaced" != "$("$engine" image inspect --format '{{.Id}}' "$image")" ]; then
  "$engine" rmi "$replaced" > /dev/null 2>&1 || true
fi
size=$("$engine" image inspect --format '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1 / 1e6}')
echo "build.sh: $image (Kafka $version on $base) in $((SECONDS - start)) s, $size" >&2
echo "$image"
