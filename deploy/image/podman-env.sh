# Sourced by the image scripts: podman and buildah keep their images under mirror-sink's cache folder
# (not /var/lib/containers) and run with deploy/image/containers.conf.
#   MIRROR_SINK_CACHE_DIR  the cache folder (default ~/.cache/mirror-sink, where the Kafka jars live too)
_here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
_store="${MIRROR_SINK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mirror-sink}/containers"
mkdir -p "$_store"
# Written aside and renamed into place: other scripts and test processes read it at any moment.
cat > "$_store/storage.conf.$$" <<CONF
[storage]
driver = "overlay"
graphroot = "$_store/storage"
runroot = "/run/mirror-sink-containers"
CONF
mv -f "$_store/storage.conf.$$" "$_store/storage.conf"
export CONTAINERS_CONF="$_here/containers.conf"
export CONTAINERS_STORAGE_CONF="$_store/storage.conf"
unset _here _store
