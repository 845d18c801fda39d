{{/* The chart's name, 63 characters at most (a label value). */}}
{{- define "foresight.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name: the objects' names. */}}
{{- define "foresight.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "foresight.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels every object carries. */}}
{{- define "foresight.labels" -}}
helm.sh/chart: {{ include "foresight.chart" . }}
{{ include "foresight.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The labels that select the router's pods (Deployment, Service, PodDisruptionBudget). */}}
{{- define "foresight.selectorLabels" -}}
app.kubernetes.io/name: {{ include "foresight.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "foresight.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "foresight.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret holding the admin token: the user's, or the one the chart creates. */}}
{{- define "foresight.adminSecretName" -}}
{{- default (printf "%s-admin-token" (include "foresight.fullname" .)) .Values.adminToken.existingSecret }}
{{- end }}

{{- define "foresight.adminSecretKey" -}}
{{- if .Values.adminToken.existingSecret }}
{{- required "adminToken.existingSecretKey: the key of the token in adminToken.existingSecret; got none" .Values.adminToken.existingSecretKey }}
{{- else }}
{{- "token" }}
{{- end }}
{{- end }}

{{/* The InferencePool the router follows: the one the chart creates, an existing one, or "" (label selector). */}}
{{- define "foresight.poolName" -}}
{{- if .Values.inferencePool.create }}
{{- default (include "foresight.fullname" .) .Values.inferencePool.name }}
{{- else }}
{{- .Values.inferencePool.name }}
{{- end }}
{{- end }}

{{/* The image reference: repository:tag, the tag defaulting to the chart's appVersion. */}}
{{- define "foresight.image" -}}
{{- printf "%s:%s" (required "image.repository: the Foresight image built by the repository's Dockerfile; got none" .Values.image.repository) (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
The router's configuration file: .Values.config with the listeners set from .Values.ports and
endpoints.kubernetes from .Values.modelServers and .Values.inferencePool.
*/}}
{{- define "foresight.config" -}}
{{- $cfg := deepCopy (.Values.config | default dict) }}
{{- $server := get $cfg "server" | default dict }}
{{- $_ := set $server "listen" (printf "0.0.0.0:%d" (int .Values.ports.http)) }}
{{- $_ := set $server "adminListen" (printf "0.0.0.0:%d" (int .Values.ports.admin)) }}
{{- /* Requests in flight drain until 5 s before the kubelet's kill, which leaves the plugins time to stop. */}}
{{- if not (hasKey $server "shutdownGrace") }}
{{- $_ := set $server "shutdownGrace" (printf "%ds" (max 1 (sub (int .Values.terminationGracePeriodSeconds) 5))) }}
{{- end }}
{{- $_ := set $cfg "server" $server }}
{{- $endpoints := get $cfg "endpoints" | default dict }}
{{- if hasKey $endpoints "kubernetes" }}
{{- fail "config.endpoints.kubernetes: the chart sets it from modelServers and inferencePool; remove it from config" }}
{{- end }}
{{- $kube := dict "namespace" .Release.Namespace }}
{{- $pool := include "foresight.poolName" . }}
{{- if $pool }}
{{- $_ := set $kube "inferencePool" $pool }}
{{- else }}
{{- if not .Values.modelServers.matchLabels }}
{{- fail "modelServers.matchLabels: the labels of the model server pods the router discovers; got none" }}
{{- end }}
{{- $_ := set $kube "selector" .Values.modelServers.matchLabels }}
{{- $port := required "modelServers.targetPort: the model servers' port, a number or a container port's name; got none" .Values.modelServers.targetPort }}
{{- if kindIs "string" $port }}
{{- $_ := set $kube "targetPort" $port }}
{{- else }}
{{- $_ := set $kube "targetPort" (int $port) }}
{{- end }}
{{- end }}
{{- with .Values.modelServers.kvEventsPort }}
{{- if kindIs "string" . }}
{{- $_ := set $kube "kvEventsPort" . }}
{{- else }}
{{- $_ := set $kube "kvEventsPort" (int .) }}
{{- end }}
{{- end }}
{{- $_ := set $endpoints "kubernetes" $kube }}
{{- $_ := set $cfg "endpoints" $endpoints }}
{{- if and .Values.models.existingClaim (gt (int .Values.replicaCount) 1) }}
{{- fail (printf "models.existingClaim: one claim for %d replicas would have them all write one modelDir; keep the models on the emptyDir and share what the replicas learn with share.existingClaim" (int .Values.replicaCount)) }}
{{- end }}
{{- $natsURL := include "foresight.natsURL" . }}
{{- if $natsURL }}
{{- if .Values.share.existingClaim }}
{{- fail "share.existingClaim: the replicas share their samples through the state plane's NATS (state.natsURL or nats.enabled); a share volume too would make each producer choose the directory" }}
{{- end }}
{{- if hasKey $cfg "state" }}
{{- fail "config.state: the chart sets it from state.natsURL or nats.enabled" }}
{{- end }}
{{- $_ := set $cfg "state" (dict "nats" (dict "url" $natsURL) "prefix" (default (include "foresight.fullname" .) .Values.state.prefix)) }}
{{- end }}
{{- if .Values.share.existingClaim }}
{{- range $p := (get $cfg "plugins" | default list) }}
{{- if eq (get $p "type") "predicted-latency-producer" }}
{{- $params := get $p "parameters" | default dict }}
{{- $_ := set $params "shareDir" $.Values.share.mountPath }}
{{- $_ := set $p "parameters" $params }}
{{- end }}
{{- end }}
{{- end }}
{{- /* The sections in the order docs/configuration.md gives them; toYaml would sort them. */}}
{{- $order := list "plugins" "pipeline" "server" "endpoints" "scrape" "objectives" "state" }}
{{- range $k := $order }}
{{- if hasKey $cfg $k }}
{{ dict $k (get $cfg $k) | toYaml }}
{{- end }}
{{- end }}
{{- range $k, $v := $cfg }}
{{- if not (has $k $order) }}
{{ dict $k $v | toYaml }}
{{- end }}
{{- end }}
{{- end }}

{{/* The state plane's NATS: the chart's own (nats.enabled), or state.natsURL; "" without one. */}}
{{- define "foresight.natsURL" -}}
{{- if and .Values.nats.enabled .Values.state.natsURL }}
{{- fail "state.natsURL and nats.enabled: give the address of your NATS or let the chart run one, not both" }}
{{- end }}
{{- if .Values.nats.enabled }}
{{- printf "nats://%s-nats.%s.svc:4222" (include "foresight.fullname" .) .Release.Namespace }}
{{- else }}
{{- .Values.state.natsURL }}
{{- end }}
{{- end }}

{{/* The labels that select the chart's NATS pod: not the router's. */}}
{{- define "foresight.natsSelectorLabels" -}}
app.kubernetes.io/name: {{ include "foresight.name" . }}-nats
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: nats
{{- end }}
