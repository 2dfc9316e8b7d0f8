#!/usr/bin/env bash
# Submit a connector to a Spark standalone cluster in client mode:
#   MASTER=spark://spark-master:7077 bash deploy/spark/submit.sh my-mirror.json [mirror-sink spark flags]
#
# Runs deploy/spark/package.sh first if dist/ has no package. The package is a venv holding mirror-sink
# and its dependencies (PySpark itself comes from the Spark installation). Executors unpack it as ./deps;
# the driver runs from dist/driver, where ./deps is the same venv unpacked, so every Python of the
# application (the driver, the data source's planner workers beside it, the executors' workers) is
# ./deps/bin/python. spark-submit is $SPARK_SUBMIT, else $SPARK_HOME/bin/spark-submit, else the one on PATH.
# Give --checkpoint as an absolute path or a URI (hdfs://, s3a://): the driver does not run in the
# directory this script was started from.
set -euo pipefail
config=${1:?usage: MASTER=spark://host:7077 $0 connector.json [--checkpoint DIR] [--trigger ...]}
shift
: "${MASTER:?set MASTER, e.g. spark://spark-master:7077}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
config="$(cd "$(dirname "$config")" && pwd)/$(basename "$config")"
if [ ! -f "$root/dist/mirror-sink-deps.tar.gz" ] || [ ! -x "$root/dist/deps/bin/python" ]; then
  bash "$root/deploy/spark/package.sh"
fi
submit=${SPARK_SUBMIT:-${SPARK_HOME:+$SPARK_HOME/bin/spark-submit}}
submit=${submit:-$(command -v spark-submit || true)}
[ -n "$submit" ] || { echo "submit.sh: no spark-submit: set SPARK_HOME or SPARK_SUBMIT" >&2; exit 2; }
mkdir -p "$root/dist/driver"
ln -sfn ../deps "$root/dist/driver/deps"
cd "$root/dist/driver"
exec "$submit" \
  --master "$MASTER" \
  --name "mirror-sink-$(basename "${config%.*}")" \
  --archives "$root/dist/mirror-sink-deps.tar.gz#deps" \
  --conf spark.pyspark.python=./deps/bin/python \
  --conf spark.pyspark.driver.python=./deps/bin/python \
  --files "$config" \
  "$root/deploy/spark/submit_entry.py" "$config" "$@"
