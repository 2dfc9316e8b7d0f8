{{/*
Names. The StatefulSet's name is kept to 52 characters: its pods carry a controller-revision-hash label
of the name plus 11 characters, and a label value is at most 63.
*/}}
{{- define "mirror-sink.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 52 | trimSuffix "-" -}}
{{- end -}}

{{- define "mirror-sink.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "mirror-sink.headlessName" -}}
{{- printf "%s-headless" (include "mirror-sink.fullname" .) -}}
{{- end -}}

{{- define "mirror-sink.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "mirror-sink.imageTag" -}}
{{- .Values.image.tag | default .Chart.AppVersion -}}
{{- end -}}

{{/* repository:tag, or repository@digest when a digest pins it. */}}
{{- define "mirror-sink.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (include "mirror-sink.imageTag" .) -}}
{{- end -}}
{{- end -}}

{{/*
Labels. Every object: the standard app.kubernetes.io set and helm.sh/chart. Selectors use only the
labels that never change over the release's life (name, instance, component).
Call with (dict "ctx" $ "component" "worker").
*/}}
{{- define "mirror-sink.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mirror-sink.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component | default "worker" }}
{{- end -}}

{{- define "mirror-sink.labels" -}}
{{ include "mirror-sink.selectorLabels" . }}
app.kubernetes.io/version: {{ include "mirror-sink.imageTag" .ctx | replace "+" "_" | replace "@" "_" | replace ":" "_" | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: {{ .ctx.Values.partOf | default "mirror-sink" }}
helm.sh/chart: {{ include "mirror-sink.chart" .ctx }}
{{- end -}}

{{- define "mirror-sink.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "mirror-sink.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Where things live in the container: the image and the worker agree on these. */}}
{{- define "mirror-sink.configDir" -}}/etc/mirror-sink{{- end -}}
{{- define "mirror-sink.connectorsDir" -}}/etc/mirror-sink/connectors{{- end -}}
{{- define "mirror-sink.secretsDir" -}}/etc/mirror-sink/secrets{{- end -}}
{{- define "mirror-sink.dataDir" -}}/var/lib/mirror-sink{{- end -}}
{{- define "mirror-sink.restPort" -}}8083{{- end -}}

{{/* The config store: configStorage, else file for one replica and kafka for more. */}}
{{- define "mirror-sink.configStorage" -}}
{{- if .Values.configStorage -}}
{{- .Values.configStorage -}}
{{- else if gt (int .Values.replicas) 1 -}}
kafka
{{- else -}}
file
{{- end -}}
{{- end -}}

{{- define "mirror-sink.hasConnectors" -}}
{{- if or .Values.connectors .Values.connectorsConfigMap -}}true{{- end -}}
{{- end -}}

{{/*
One config value as Connect's string. Helm reads every number of a values file as a float64, which
would print 67108864 as 6.7108864e+07: whole numbers print as integers.
*/}}
{{- define "mirror-sink.scalar" -}}
{{- if kindIs "float64" . -}}
{{- if eq (float64 (int64 .)) . -}}{{ int64 . }}{{- else -}}{{ . }}{{- end -}}
{{- else if kindIs "invalid" . -}}
{{- else -}}
{{- . -}}
{{- end -}}
{{- end -}}

{{/*
Keys whose values are credentials (mirror_sink.core.settings.secrets's pattern); keys naming a file, a location
or a URL hold no credential. Such a value must be a config provider reference to a mounted Secret.
Call with (dict "where" "config" "map" $map).
*/}}
{{- define "mirror-sink.checkNoLiteralSecrets" -}}
{{- $secretKey := "(?i)(password|secret|sasl\\.jaas\\.config|sasl\\.oauthbearer\\.config|ssl\\.key\\.pem|ssl_key|ssl\\.keystore\\.key|ssl\\.truststore\\.certificates|token|credentials?)" -}}
{{- $notSecret := "(?i)\\.(file|location|url|path|dir)$" -}}
{{- range $key, $value := .map -}}
{{- if and (regexMatch $secretKey $key) (not (regexMatch $notSecret $key)) -}}
{{- $text := include "mirror-sink.scalar" $value -}}
{{- if and $text (not (regexMatch "\\$\\{[A-Za-z0-9_.-]+:[^}]+\\}" $text)) -}}
{{- fail (printf "%s: %s holds a literal credential, which would land in a ConfigMap. Mount the Secret with secretMounts and reference it, e.g. %s=${file:%s/<name>/<file>.properties:<key>}" $.where $key $key (include "mirror-sink.secretsDir" $.root)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A connector's config map: the value itself, or its "config" in Connect's {"name", "config"} shape. */}}
{{- define "mirror-sink.connectorConfig" -}}
{{- if and (kindIs "map" .) (hasKey . "config") (kindIs "map" (get . "config")) -}}
{{- toJson (get . "config") -}}
{{- else -}}
{{- toJson . -}}
{{- end -}}
{{- end -}}

{{/* Every refusal, with the reason and what to set instead. Included by the StatefulSet. */}}
{{- define "mirror-sink.validate" -}}
{{- $storage := include "mirror-sink.configStorage" . -}}
{{- $replicas := int .Values.replicas -}}
{{- if and (gt $replicas 1) (eq $storage "file") -}}
{{- fail (printf "replicas=%d with config.storage=file: the file store is one pod's own volume, so the workers would not share their connectors. Use configStorage: kafka (the default when replicas > 1) with bootstrapServers, or replicas: 1." $replicas) -}}
{{- end -}}
{{- if and (eq $storage "kafka") (not .Values.bootstrapServers) -}}
{{- fail "config.storage=kafka needs bootstrapServers: the Kafka cluster holding the worker group's config and status topics (usually the mirror's target cluster)." -}}
{{- end -}}
{{- $owned := dict "listeners" "the chart sets it (CONNECT_LISTENERS=http://0.0.0.0:8083; probes and Services use port 8083)" "data.dir" "the chart sets it (CONNECT_DATA_DIR, the data volume)" "config.storage" "set configStorage instead" "bootstrap.servers" "set bootstrapServers instead" "worker.id" "every pod would share one id; a worker's id is its pod name and port (mirror-sink-0:8083), stable across restarts" "connectors.config.dir" "set connectors or connectorsConfigMap instead" -}}
{{- range $key, $why := $owned -}}
{{- if hasKey $.Values.config $key -}}
{{- fail (printf "config.%s cannot be set: %s." $key $why) -}}
{{- end -}}
{{- end -}}
{{- range $key, $value := .Values.config -}}
{{- if contains "\n" (include "mirror-sink.scalar" $value) -}}
{{- fail (printf "config.%s: a worker.properties value cannot span lines." $key) -}}
{{- end -}}
{{- end -}}
{{- include "mirror-sink.checkNoLiteralSecrets" (dict "where" "config" "map" .Values.config "root" .) -}}
{{- range $name, $connector := .Values.connectors -}}
{{- if not (regexMatch "^[A-Za-z0-9][-._A-Za-z0-9]*$" $name) -}}
{{- fail (printf "connectors.%s: a connector name here must be letters, digits, '.', '_' or '-' (it names a ConfigMap key)." $name) -}}
{{- end -}}
{{- $config := include "mirror-sink.connectorConfig" $connector | fromJson -}}
{{- if not (hasKey $config "connector.class") -}}
{{- fail (printf "connectors.%s: connector.class is required (MirrorSinkConnector)." $name) -}}
{{- end -}}
{{- include "mirror-sink.checkNoLiteralSecrets" (dict "where" (printf "connectors.%s" $name) "map" $config "root" $) -}}
{{- end -}}
{{- $envOwned := list "CONNECT_LISTENERS" "CONNECT_DATA_DIR" "CONNECT_CONFIG_STORAGE" "CONNECT_BOOTSTRAP_SERVERS" "CONNECT_WORKER_ID" "CONNECT_CONNECTORS_CONFIG_DIR" -}}
{{- range .Values.env -}}
{{- if has .name $envOwned -}}
{{- fail (printf "env %s cannot be set: the chart renders it (or, for CONNECT_WORKER_ID, every pod would share one id)." .name) -}}
{{- end -}}
{{- end -}}
{{- $seen := dict -}}
{{- range .Values.secretMounts -}}
{{- if hasKey $seen .name -}}
{{- fail (printf "secretMounts: %s is listed twice." .name) -}}
{{- end -}}
{{- $_ := set $seen .name true -}}
{{- end -}}
{{- end -}}

{{/* Memory for one worker, in MiB: base + ceil(tasks x buffer.memory x factor). See values.yaml. */}}
{{- define "mirror-sink.memoryMiB" -}}
{{- $bytes := mul (int64 .Values.tasksPerWorker) (int64 .Values.bufferMemoryBytes) (int64 .Values.memory.bufferFactorPercent) -}}
{{- $unit := mul 100 1048576 -}}
{{- add (int64 .Values.memory.baseMiB) (div (add $bytes (sub $unit 1)) $unit) -}}
{{- end -}}

{{- define "mirror-sink.resources" -}}
{{- if .Values.resources -}}
{{- toYaml .Values.resources -}}
{{- else -}}
{{- $memory := printf "%sMi" (include "mirror-sink.memoryMiB" .) -}}
requests:
  cpu: {{ .Values.cpu.request | quote }}
  memory: {{ $memory }}
  {{- with .Values.ephemeralStorageRequest }}
  ephemeral-storage: {{ . | quote }}
  {{- end }}
limits:
  {{- if .Values.cpu.limit }}
  cpu: {{ .Values.cpu.limit | quote }}
  {{- end }}
  memory: {{ $memory }}
{{- end -}}
{{- end -}}

{{/*
Tasks one worker runs for the given connectors: steady (tasks.max spread round robin over the replicas)
and while one worker is away (a restart or a drain: over one fewer). Returns "steady,away".
*/}}
{{- define "mirror-sink.tasksPerWorkerNeeded" -}}
{{- $replicas := int64 .Values.replicas -}}
{{- $others := max (sub $replicas 1) 1 -}}
{{- $steady := 0 -}}
{{- $away := 0 -}}
{{- range $name, $connector := .Values.connectors -}}
{{- $config := include "mirror-sink.connectorConfig" $connector | fromJson -}}
{{- $tasks := int64 (include "mirror-sink.scalar" (get $config "tasks.max") | default "1") -}}
{{- $steady = add $steady (div (add $tasks (sub $replicas 1)) $replicas) -}}
{{- $away = add $away (div (add $tasks (sub $others 1)) $others) -}}
{{- end -}}
{{- printf "%d,%d" $steady $away -}}
{{- end -}}
