#!/usr/bin/env bash
# mirror-sink's developer entry point. From a fresh clone:
#   bash deploy/dev.sh run    start the local source and target clusters and run the demo mirror job
#   bash deploy/dev.sh test   install everything (Chromium for the browser test, podman & co. for the image
#                             tests), then lint, type-check, check the layers and run every test, in
#                             parallel (tests/tiers.py)
#   bash deploy/dev.sh image  build the worker image offline (deploy/image/image.sh); prints its name
#                             and the path of its OCI archive
#   bash deploy/dev.sh test --fast   the same checks, then only the unit tests and the shared-cluster tests
# Both install what they need first: a virtualenv in .venv with the project and its dev extras
# (re-installed when pyproject.toml changes) and the Kafka jars from Maven Central (cached once).
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "dev.sh: $*" >&2; exit 1; }

# Test brokers live minutes: C1 only and the serial collector spend less of two cores on JIT and GC
# threads than Kafka's G1 default does for brokers that live months.
TEST_BROKER_JVM_OPTS="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

check_prerequisites() {
  local py
  py=$(command -v python3.11 || command -v python3 || true)
  [ -n "$py" ] || die "Python 3.11+ is required (python3 not found)"
  "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || die "Python 3.11+ is required, found $("$py" --version)"
  command -v java >/dev/null || die "Java 17+ is required to run the local Kafka clusters (java not found)"
  command -v mvn >/dev/null || die "Maven is required once, to fetch the Kafka jars from Maven Central (mvn not found)"
  PYTHON=$py
}

ensure_venv() {
  check_prerequisites
  local stamp=.venv/.installed digest
  digest=$(sha256sum pyproject.toml | cut -d' ' -f1)
  if [ ! -x .venv/bin/python ]; then
    echo "dev.sh: creating .venv with $("$PYTHON" --version)"
    "$PYTHON" -m venv .venv
  fi
  if [ "$(cat "$stamp" 2>/dev/null)" != "$digest" ]; then
    echo "dev.sh: installing mirror-sink and its dev dependencies into .venv"
    if ! { .venv/bin/python -m pip install --upgrade pip && .venv/bin/python -m pip install -e '.[dev]'; } \
        > .venv/pip.log 2>&1; then
      tail -n 40 .venv/pip.log >&2
      die "pip install failed (full log: .venv/pip.log)"
    fi
    echo "$digest" > "$stamp"
  fi
  # Fetch the Kafka jars now, so a slow first download shows up as such and not as a test timeout.
  .venv/bin/python -c 'from mirror_sink.core.runtime.logs import configure_logging; configure_logging(); from devkafka import KafkaJars; KafkaJars.ensure()'
}

ensure_system_packages() {
  # What the slow tier needs besides Python and Java, from Debian packages: the status page's browser
  # test drives headless Chromium with Selenium; the image tests build and run images with buildah,
  # podman (runc) and skopeo on a base debootstrap makes (no registry needed).
  local missing=() tool package
  for tool in chromium:chromium chromedriver:chromium-driver buildah:buildah podman:podman skopeo:skopeo \
      runc:runc debootstrap:debootstrap; do
    command -v "${tool%%:*}" >/dev/null || PATH="$PATH:/usr/sbin:/sbin" command -v "${tool%%:*}" >/dev/null \
      || missing+=("${tool#*:}")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  command -v apt-get >/dev/null || die "the slow tests need ${missing[*]} (apt-get not found to install them)"
  echo "dev.sh: installing Debian packages ${missing[*]}"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"; } \
      > .venv/apt.log 2>&1; then
    tail -n 30 .venv/apt.log >&2
    die "installing ${missing[*]} failed (full log: .venv/apt.log)"
  fi
}

case "${1:-}" in
  run)
    shift
    ensure_venv
    exec .venv/bin/mirror-sink-dev demo "$@"
    ;;
  image)
    shift
    ensure_venv
    exec bash deploy/image/image.sh "$@"
    ;;
  test)
    shift
    tiers=()
    if [ "${1:-}" = "--fast" ]; then
      shift
      tiers=(-m "unit or kafka")  # no clusters of the tests' own, no benchmarks, wheel or browser
    fi
    ensure_venv
    [ ${#tiers[@]} -gt 0 ] || ensure_system_packages
    .venv/bin/ruff check .
    .venv/bin/ruff format --check .
    # mypy's incremental cache lives with the user's other caches (pip's, the Kafka jars), not in the
    # checkout: a fresh clone is checked in about a second instead of a minute, and a cache entry is
    # used only when its file's content hash still matches.
    MYPY_CACHE_DIR="${MYPY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mirror-sink/mypy}" .venv/bin/mypy
    .venv/bin/lint-imports
    # Three workers, though the machine may have two cores: most tests wait on brokers, timeouts and
    # child processes, not on the CPU. tests/tiers.py puts tests in lanes (--dist loadgroup) so that
    # JVM-heavy ones never run at once, and hands out the longest lanes first.
    MIRROR_SINK_REQUIRE_KAFKA=1 KAFKA_JVM_PERFORMANCE_OPTS="${KAFKA_JVM_PERFORMANCE_OPTS:-$TEST_BROKER_JVM_OPTS}" \
      exec .venv/bin/pytest -n "${MIRROR_SINK_TEST_WORKERS:-3}" --dist loadgroup --no-loadscope-reorder "${tiers[@]}" "$@"
    ;;
  *)
    die "usage: bash deploy/dev.sh run|image|test [args]"
    ;;
esac
