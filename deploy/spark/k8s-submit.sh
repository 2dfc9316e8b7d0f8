#!/usr/bin/env bash
# Submit a connector to Spark on Kubernetes (cluster mode). IMAGE must contain Python 3.11 and the
# mirror-sink wheel (deploy/spark/Dockerfile); K8S is the API server URL.
set -euo pipefail
config=${1:?usage: IMAGE=... K8S=https://... $0 connector.json [mirror-sink spark flags]}
shift
: "${IMAGE:?set IMAGE}" "${K8S:?set K8S}"
exec spark-submit \
  --master "k8s://${K8S}" \
  --deploy-mode cluster \
  --name "mirror-sink-$(basename "${config%.*}")" \
  --conf spark.kubernetes.container.image="${IMAGE}" \
  --conf spark.kubernetes.namespace="${NAMESPACE:-mirror-sink}" \
  --conf spark.kubernetes.authenticate.driver.serviceAccountName="${SERVICE_ACCOUNT:-spark}" \
  --conf spark.executor.instances="${EXECUTORS:-2}" \
  --conf spark.pyspark.python=python3 \
  --files "${config}" \
  local:///opt/mirror-sink/submit_entry.py "$(basename "${config}")" "$@"
