#!/usr/bin/env bash
# mirror-sink's developer entry point. From a fresh clone:
#   bash deploy/dev.sh run    start the local source and target clusters and run the demo mirror job
#   bash deploy/dev.sh test   install everything (Chromium too, for the browser test), then lint, type-check,
#                             check the layers and run every test, in parallel (tests/tiers.py)
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
  .venv/bin/python -c 'from mirror_sink.core.logs import configure_logging; configure_logging(); from devkafka import KafkaJars; KafkaJars.ensure()'
}

ensure_browser() {
  # The status page's browser test drives Debian's headless Chromium with Selenium.
  if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
    return
  fi
  command -v apt-get >/dev/null || die "the browser test needs Chromium and ChromeDriver (apt-get not found to install them)"
  echo "dev.sh: installing Chromium and ChromeDriver (Debian packages chromium, chromium-driver)"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver; } \
      > .venv/apt.log 2>&1; then
    tail -n 30 .venv/apt.log >&2
    die "installing Chromium failed (full log: .venv/apt.log)"
  fi
}

case "${1:-}" in
  run)
    shift
    ensure_venv
    exec .venv/bin/mirror-sink-dev demo "$@"
    ;;
  test)
    shift
    tiers=()
    if [ "${1:-}" = "--fast" ]; then
      shift
      tiers=(-m "unit or kafka")  # no clusters of the tests' own, no benchmarks, wheel or browser
    fi
    ensure_venv
    [ ${#tiers[@]} -gt 0 ] || ensure_browser
    .venv/bin/ruff check .
    .venv/bin/ruff format --check .
    .venv/bin/mypy
    .venv/bin/lint-imports
    # Three workers, though the machine may have two cores: most tests wait on brokers, timeouts and
    # child processes, not on the CPU. tests/tiers.py puts tests in lanes (--dist loadgroup) so that
    # JVM-heavy ones never run at once, and hands out the longest lanes first.
    MIRROR_SINK_REQUIRE_KAFKA=1 KAFKA_JVM_PERFORMANCE_OPTS="${KAFKA_JVM_PERFORMANCE_OPTS:-$TEST_BROKER_JVM_OPTS}" \
      exec .venv/bin/pytest -n "${MIRROR_SINK_TEST_WORKERS:-3}" --dist loadgroup --no-loadscope-reorder "${tiers[@]}" "$@"
    ;;
  *)
    die "usage: bash deploy/dev.sh run|test [args]"
    ;;
esac
