{{/* The chart's names and labels, and the pod template every process shares. */}}

{{- define "policy-indexer.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "policy-indexer.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "policy-indexer.selectorLabels" -}}
app.kubernetes.io/name: {{ include "policy-indexer.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "policy-indexer.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "policy-indexer.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: policy-indexer
{{- end -}}

{{- define "policy-indexer.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "policy-indexer.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "policy-indexer.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/*
The pod spec of one process. Call with (dict "root" $ "component" NAME "spec" VALUES "spread" BOOL); spread: the
component runs more than one replica (topologySpreadConstraints).
The component name is the pod's app.kubernetes.io/component label, which the PodMonitor
copies to the `component` label the alert rules select on.
*/}}
{{- define "policy-indexer.podTemplate" -}}
{{- $root := .root -}}
{{- $spec := .spec -}}
metadata:
  labels:
    {{- include "policy-indexer.selectorLabels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
    {{- with $root.Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    # a changed setting rolls the pods
    checksum/config: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
    {{- with $root.Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ include "policy-indexer.serviceAccountName" $root }}
  automountServiceAccountToken: {{ $root.Values.serviceAccount.automountToken }}
  {{- with $root.Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- toYaml $root.Values.podSecurityContext | nindent 4 }}
  terminationGracePeriodSeconds: {{ $root.Values.terminationGracePeriodSeconds }}
  containers:
    - name: {{ .component }}
      image: {{ include "policy-indexer.image" $root | quote }}
      imagePullPolicy: {{ $root.Values.image.pullPolicy }}
      args:
        {{- toYaml $spec.args | nindent 8 }}
      ports:
        - name: {{ $spec.port.name }}
          containerPort: {{ $spec.port.number }}
          protocol: TCP
        {{- with $spec.metricsPort }}
        - name: {{ .name }}
          containerPort: {{ .number }}
          protocol: TCP
        {{- end }}
      envFrom:
        - configMapRef:
            name: {{ include "policy-indexer.fullname" $root }}-config
      env:
        {{- if $spec.portEnv }}
        - name: {{ $spec.portEnv }}
          value: {{ $spec.port.number | quote }}
        {{- end }}
        {{- with $spec.metricsPort }}
        - name: POLICY_INDEXER_METRICS_PORT
          value: {{ .number | quote }}
        {{- end }}
        {{- range $name, $value := $spec.env }}
        - name: {{ $name }}
          value: {{ $value | quote }}
        {{- end }}
        {{- range $name, $file := $root.Values.secretFiles }}
        {{- if $file.secretName }}
        - name: {{ $file.env }}
          value: /var/run/secrets/policy-indexer/{{ $name | kebabcase }}/{{ $file.key }}
        {{- end }}
        {{- end }}
        {{- range $name, $ref := merge (deepCopy (default dict $spec.secretEnv)) $root.Values.secretEnv }}
        - name: {{ $name }}
          valueFrom:
            secretKeyRef:
              name: {{ $ref.secretName }}
              key: {{ $ref.key }}
              {{- if $ref.optional }}
              optional: true
              {{- end }}
        {{- end }}
      startupProbe:
        httpGet: {path: /healthz, port: {{ $spec.port.name }}}
        {{- toYaml $root.Values.probes.startup | nindent 8 }}
      livenessProbe:
        httpGet: {path: /healthz, port: {{ $spec.port.name }}}
        {{- toYaml $root.Values.probes.liveness | nindent 8 }}
      readinessProbe:
        httpGet: {path: /readyz, port: {{ $spec.port.name }}}
        {{- toYaml $root.Values.probes.readiness | nindent 8 }}
      resources:
        {{- toYaml $spec.resources | nindent 8 }}
      securityContext:
        {{- toYaml $root.Values.securityContext | nindent 8 }}
      volumeMounts:
        - name: tmp
          mountPath: /tmp
        - name: data
          mountPath: /var/lib/policy-indexer
        {{- range $name, $file := $root.Values.secretFiles }}
        {{- if $file.secretName }}
        - name: secret-{{ $name | kebabcase }}
          mountPath: /var/run/secrets/policy-indexer/{{ $name | kebabcase }}
          readOnly: true
        {{- end }}
        {{- end }}
  volumes:
    - name: tmp
      emptyDir: {}
    {{- if not .persistent }}
    # the embedding cache and the scheduler's state; the read-only root needs a place
    - name: data
      emptyDir: {}
    {{- end }}
    {{- range $name, $file := $root.Values.secretFiles }}
    {{- if $file.secretName }}
    - name: secret-{{ $name | kebabcase }}
      secret:
        secretName: {{ $file.secretName }}
        items:
          - key: {{ $file.key }}
            path: {{ $file.key }}
    {{- end }}
    {{- end }}
  {{- with $root.Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $root.Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $root.Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if and .spread $root.Values.topologySpread.enabled }}
  # More than one replica: spread over zones and nodes, so losing one takes one replica.
  topologySpreadConstraints:
    {{- range $root.Values.topologySpread.constraints }}
    - topologyKey: {{ .topologyKey }}
      maxSkew: {{ .maxSkew }}
      whenUnsatisfiable: {{ .whenUnsatisfiable }}
      labelSelector:
        matchLabels:
          {{- include "policy-indexer.selectorLabels" $root | nindent 10 }}
          app.kubernetes.io/component: {{ $.component }}
      matchLabelKeys: [pod-template-hash]
    {{- end }}
  {{- end }}
{{- end -}}
