{{/* The chart's name, or nameOverride. */}}
{{- define "modelgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The objects' name: fullnameOverride, or the release name (with the chart's name unless it
already contains it). */}}
{{- define "modelgate.fullname" -}}
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

{{/* Quoted: a release named `y` or `on` would otherwise be a YAML boolean. */}}
{{- define "modelgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "modelgate.name" . | quote }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
{{- end }}

{{- define "modelgate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" | quote }}
{{ include "modelgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: operator
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
{{- end }}

{{- define "modelgate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "modelgate.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Every image the chart renders, from {registry, repository, tag, digest} (as `image` in
values.yaml; registry optional) and the chart's appVersion (the tag when none is given):
repository@digest when a digest is given, the tag then ignored (a digest names the image's bytes; a
tag can be moved to other bytes). */}}
{{- define "modelgate.imageRef" -}}
{{- $repository := .image.repository }}
{{- with .image.registry }}
{{- $repository = printf "%s/%s" . $repository }}
{{- end }}
{{- if .image.digest }}
{{- printf "%s@%s" $repository .image.digest }}
{{- else }}
{{- printf "%s:%s" $repository (default .appVersion .image.tag) }}
{{- end }}
{{- end }}

{{/* The operator's image, which its evaluator Jobs and the refusal proxy run too by default. */}}
{{- define "modelgate.image" -}}
{{- $_ := required "image.repository is required: no registry publishes modelgate's image; build it from the repository's Dockerfile, load or push it, and set image.repository (charts/modelgate/README.md, \"The image\")" .Values.image.repository }}
{{- include "modelgate.imageRef" (dict "image" .Values.image "appVersion" .Chart.AppVersion) }}
{{- end }}

{{/* Fails on values that would run something other than what was asked: a scope without its
namespaces, or several replicas that would all act. */}}
{{- define "modelgate.validate" -}}
{{- include "modelgate.foreignValues" . }}
{{- include "modelgate.validatePod" . }}
{{- if eq .Values.rbac.scope "namespaces" }}
{{- if not .Values.watchNamespaces }}
{{- fail "rbac.scope is namespaces: list the namespaces to watch in watchNamespaces" }}
{{- end }}
{{- else if .Values.watchNamespaces }}
{{- fail "watchNamespaces is set but rbac.scope is cluster (all namespaces): set rbac.scope=namespaces to watch only those" }}
{{- end }}
{{- if and .Values.rbac.gateJobNamespaces (ne .Values.rbac.scope "cluster") }}
{{- fail "rbac.gateJobNamespaces narrows the cluster scope's Job rights; in namespaces scope the Roles of watchNamespaces already hold them: leave it empty" }}
{{- end }}
{{- if and .Values.gate.checkServiceAccount.create (ne .Values.rbac.scope "namespaces") }}
{{- fail "gate.checkServiceAccount.create makes the ServiceAccount in each of watchNamespaces: it needs rbac.scope=namespaces (in cluster scope create it in each namespace yourself and set gate.checkServiceAccount.name)" }}
{{- end }}
{{- if and (gt (int .Values.replicas) 1) (not .Values.peering.enabled) }}
{{- fail (printf "replicas is %d but peering.enabled is false: without peering every replica would act on the same rollouts; set peering.enabled=true (one acts, the others stand by) or replicas=1" (int .Values.replicas)) }}
{{- end }}
{{- if and .Values.serviceMonitor.enabled .Values.podMonitor.enabled }}
{{- fail "serviceMonitor.enabled and podMonitor.enabled are both true: Prometheus would scrape the operator twice, each series under two jobs; enable one of them" }}
{{- end }}
{{- end }}

{{/* The ServiceAccount of the gate's check Pods; empty: each namespace's default. */}}
{{- define "modelgate.checkServiceAccountName" -}}
{{- $account := .Values.gate.checkServiceAccount -}}
{{- if $account.create }}{{ default "modelgate-gate-check" $account.name }}{{ else }}{{ $account.name }}{{ end }}
{{- end }}

{{/* kopf's peering object of this release: peering.name, or the release's full name. */}}
{{- define "modelgate.peeringName" -}}
{{- default (include "modelgate.fullname" .) .Values.peering.name }}
{{- end }}

{{/*
kopf's peering, with peering.enabled, in the scope's kind: kopf lists and watches the peering
objects and merge-patches its own record into this release's; the operator's loops get it before
each tick. get and patch only on this release's object, by name.
*/}}
{{- define "modelgate.peeringRules" -}}
{{- if .Values.peering.enabled -}}
{{- $resource := ternary "clusterkopfpeerings" "kopfpeerings" (eq .Values.rbac.scope "cluster") -}}
- apiGroups: ["kopf.dev"]
  resources: [{{ $resource | quote }}]
  verbs: ["list", "watch"]
- apiGroups: ["kopf.dev"]
  resources: [{{ $resource | quote }}]
  resourceNames: [{{ include "modelgate.peeringName" . | quote }}]
  verbs: ["get", "patch"]
{{- end }}
{{- end }}

{{/*
The operator's permissions inside the namespaces it watches: the same rules for the ClusterRole
(scope cluster) and for the Role in each watched namespace (scope namespaces). Verbs are exactly
what operator/modelgate/kube/ and kopf call; nothing with "*", no delete.
*/}}
{{- define "modelgate.namespacedRules" -}}
# kopf lists and watches ModelRollouts; the reconciler gets them, merge-patches annotations (it
# clears a consumed `modelgate promote/abort/...` command) and JSON-patches metadata.finalizers
# (modelgate.io/return-traffic, on rollouts with spec.rollback.onDelete: ReturnTraffic only).
- apiGroups: ["modelgate.io"]
  resources: ["modelrollouts"]
  verbs: ["get", "list", "watch", "patch"]
# The reconciler writes status through the status subresource only.
- apiGroups: ["modelgate.io"]
  resources: ["modelrollouts/status"]
  verbs: ["patch"]
# ModelEvaluations: kopf lists and watches them, the evaluation loop gets them (a run on demand is
# an annotation the operator reads, never writes) and writes their status.
- apiGroups: ["modelgate.io"]
  resources: ["modelevaluations"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["modelgate.io"]
  resources: ["modelevaluations/status"]
  verbs: ["patch"]
# ModelRolloutPolicies (spec.policyRef): kopf lists and watches them to wake the rollouts naming
# one; the reconciler reads them from that cache. Never written. (ClusterModelRolloutPolicies:
# rollout-policies.yaml.)
- apiGroups: ["modelgate.io"]
  resources: ["modelrolloutpolicies"]
  verbs: ["get", "list", "watch"]
# kopf watches Deployments to wake a rollout when its candidate changes; the reconciler reads the
# candidate's availability (and the incumbent's in a watch window). Deployments are never written
# but for their scale with rbac.scaleDownIncumbents.
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "list", "watch"]
# The routers' rules, generated from their records by `make generate` (_router_rules.tpl).
{{ include "modelgate.routerRules" . }}
# InferencePool sides (spec.incumbent/candidate.inferencePool): kopf watches the pools to wake a
# rollout when its candidate's changes; the reconciler reads a pool (from the watch cache) and lists
# the Pods its selector selects, for their readiness and names. Neither is ever written.
- apiGroups: ["inference.networking.k8s.io"]
  resources: ["inferencepools"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list"]
# Workload sides (spec.incumbent/candidate.workload): kopf watches StatefulSets and LeaderWorkerSets
# to wake a rollout when its candidate changes, and their status says whether it can serve; another
# kind is read through its scale subresource (the kinds of rbac.extraWorkloads: RBAC cannot grant
# "anything with a scale subresource"). Never written but for their scale with
# rbac.scaleDownIncumbents.
- apiGroups: ["apps"]
  resources: ["statefulsets"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["leaderworkerset.x-k8s.io"]
  resources: ["leaderworkersets"]
  verbs: ["get", "list", "watch"]
{{- range .Values.rbac.extraWorkloads }}
- apiGroups: [{{ .group | quote }}]
  resources: [{{ .resource | quote }}, {{ printf "%s/scale" .resource | quote }}]
  verbs: ["get"]
{{- end }}
# The evaluation gate (spec.gate): the operator creates one Job per check (owned by the rollout),
# watches them (a finished one wakes its rollout), reads them and their Pods' termination messages,
# and deletes them once the gate has decided. It checks that a test set's ConfigMap exists and reads
# the first port of the Services the built-in evaluator talks to; neither is ever written.
{{- if and (eq .Values.rbac.scope "cluster") .Values.rbac.gateJobNamespaces }}
# (create and delete: only in rbac.gateJobNamespaces, by the Roles of gate-checks.yaml)
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["get", "list", "watch"]
{{- else }}
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["get", "list", "watch", "create", "delete"]
{{- end }}
- apiGroups: [""]
  resources: ["configmaps", "services"]
  verbs: ["get"]
# Every decision is recorded as an events.k8s.io/v1 Event (kopf's own event posting is off).
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create"]
{{- if .Values.rbac.scaleDownIncumbents }}
# spec.watch.scaleDownIncumbent: the incumbent's replicas go to 0 once the watch window has passed.
- apiGroups: ["apps"]
  resources: ["deployments/scale", "statefulsets/scale"]
  verbs: ["patch"]
- apiGroups: ["leaderworkerset.x-k8s.io"]
  resources: ["leaderworkersets/scale"]
  verbs: ["patch"]
{{- range .Values.rbac.extraWorkloads }}
- apiGroups: [{{ .group | quote }}]
  resources: [{{ printf "%s/scale" .resource | quote }}]
  verbs: ["patch"]
{{- end }}
{{- end }}
{{- if .Values.oneEdit.enabled }}
# One-edit rollouts (spec.candidatePatch): the operator creates the candidate's Deployment and Service
# (owned by the rollout), patches the incumbent's Pod template (PromoteIntoIncumbent) and the generated
# objects' ownerReferences (RetireIncumbent), scales a retired incumbent to 0, and deletes what it
# generated. RBAC cannot tell generated objects from others: the admission policy of one-edit.yaml
# keeps tenants from asking for what they could not do themselves.
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["create", "patch", "delete"]
{{- if not .Values.rbac.scaleDownIncumbents }}
- apiGroups: ["apps"]
  resources: ["deployments/scale"]
  verbs: ["patch"]
{{- end }}
- apiGroups: [""]
  resources: ["services"]
  verbs: ["create", "patch", "delete"]
{{- end }}
{{- with .Values.rbac.prometheusSecrets }}
# Bearer tokens for Prometheus (spec.analysis.prometheus.bearerTokenSecretRef): these names only.
- apiGroups: [""]
  resources: ["secrets"]
  resourceNames: {{ toJson . }}
  verbs: ["get"]
{{- end }}
{{- with .Values.rbac.notificationSecrets }}
# Notification receivers' URLs (spec.notifications.receivers[].urlSecretRef): these names only.
- apiGroups: [""]
  resources: ["secrets"]
  resourceNames: {{ toJson . }}
  verbs: ["get"]
{{- end }}
{{- end }}

{{/*
The refusal proxy's sidecar container (docs/refusal-sidecar.md), for a model Deployment's pod
template: it binds every interface (the Service and Prometheus reach it from outside the pod) and
runs as hardened as the operator.
*/}}
{{- define "modelgate.refusalProxyContainer" -}}
{{- $proxy := .Values.refusalProxy -}}
name: refusal-proxy
{{- $image := ternary $proxy.image .Values.image (ne $proxy.image.repository "") }}
image: {{ include "modelgate.imageRef" (dict "image" $image "appVersion" .Chart.AppVersion) | quote }}
command: ["modelgate"]
args:
  - refusal-proxy
  - --upstream=http://127.0.0.1:{{ $proxy.upstreamPort }}
  - --host=0.0.0.0
  - --port={{ $proxy.port }}
  - --metrics-port={{ $proxy.metricsPort }}
  {{- range $proxy.models }}
  - {{ printf "--model=%s" . | quote }}
  {{- end }}
  {{- if $proxy.patterns }}
  - --patterns-file=/etc/refusal-proxy/patterns.txt
  {{- end }}
  - --max-connections={{ $proxy.maxConnections }}
  - --header-timeout={{ $proxy.headerTimeoutSeconds }}
  - --idle-timeout={{ $proxy.idleTimeoutSeconds }}
  - --upstream-read-timeout={{ $proxy.upstreamReadTimeoutSeconds }}
  - --log-format={{ .Values.logFormat }}
  {{- with $proxy.recording }}
  {{- if .url }}
  - {{ printf "--record=%s" .url | quote }}
  - --record-rate={{ .rate }}
  - --record-max-bytes={{ int64 .maxBytes }}
  {{- range .redactPatterns }}
  - {{ printf "--redact-pattern=%s" . | quote }}
  {{- end }}
  {{- end }}
  {{- end }}
env:
  - name: PYTHONDONTWRITEBYTECODE
    value: "1"
  - name: PYTHONUNBUFFERED
    value: "1"
  {{- with $proxy.recording }}
  {{- if .url }}
  # Records are named after the Pod that wrote them.
  - name: POD_NAME
    valueFrom:
      fieldRef:
        fieldPath: metadata.name
  {{- end }}
  {{- if and .url .secret }}
  {{- $secret := .secret }}
  {{- range $key, $variable := dict "endpoint" "ENDPOINT_URL" "region" "REGION" "accessKeyId" "ACCESS_KEY_ID" "secretAccessKey" "SECRET_ACCESS_KEY" "sessionToken" "SESSION_TOKEN" }}
  - name: {{ printf "AWS_%s" $variable }}
    valueFrom:
      secretKeyRef:
        name: {{ $secret | quote }}
        key: {{ $key }}
        optional: {{ not (has $key (list "accessKeyId" "secretAccessKey")) }}
  {{- end }}
  {{- end }}
  {{- end }}
ports:
  - name: proxy
    containerPort: {{ $proxy.port }}
    protocol: TCP
  - name: refusal-metrics
    containerPort: {{ $proxy.metricsPort }}
    protocol: TCP
livenessProbe:
  httpGet:
    path: /healthz
    port: refusal-metrics
  periodSeconds: 20
  timeoutSeconds: 5
readinessProbe:
  httpGet:
    path: /healthz
    port: refusal-metrics
  periodSeconds: 10
  timeoutSeconds: 5
{{- with $proxy.resources }}
resources:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.securityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if $proxy.patterns }}
# Needs the pod volume `refusal-patterns`: a ConfigMap of that name in the model's namespace, made
# from this ConfigMap's patterns.txt (docs/refusal-sidecar.md).
volumeMounts:
  - name: refusal-patterns
    mountPath: /etc/refusal-proxy
    readOnly: true
{{- end }}
{{- end }}

{{- /* The binding of admission policy `policy` (its name after the release's full name): it denies,
in watchNamespaces only in `namespaces` scope. */ -}}
{{- define "modelgate.admissionPolicyBinding" -}}
{{- $name := printf "%s-%s" (include "modelgate.fullname" .root) .policy -}}
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: {{ $name | quote }}
  labels:
    {{- include "modelgate.labels" .root | nindent 4 }}
spec:
  policyName: {{ $name | quote }}
  validationActions: ["Deny"]
  {{- if eq .root.Values.rbac.scope "namespaces" }}
  matchResources:
    namespaceSelector:
      matchExpressions:
        - key: kubernetes.io/metadata.name
          operator: In
          values: {{ toJson .root.Values.watchNamespaces }}
  {{- end }}
{{- end }}
