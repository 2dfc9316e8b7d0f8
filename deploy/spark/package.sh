#!/usr/bin/env bash
# Build the mirror-sink wheel and a relocatable venv archive with its dependencies for spark-submit.
set -euo pipefail
cd "$(dirname "$0")/../.."
rm -rf dist/deps && mkdir -p dist
python3 -m pip wheel --no-deps -w dist .
rm -rf build  # setuptools' scratch copy of the sources
python3 -m venv --copies dist/deps
dist/deps/bin/pip install --quiet dist/mirror_sink-*.whl "pyarrow>=15"
tar -C dist/deps -czf dist/mirror-sink-deps.tar.gz .
echo "built: $(ls dist/*.whl) dist/mirror-sink-deps.tar.gz"
