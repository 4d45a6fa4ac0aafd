{{/*
Names. A release called "leaderhook" (docs/install.md's) names its objects as
deploy/ does: leaderhook-webhook, leaderhook-ca, ... Any other release name is
prefixed to "leaderhook".
*/}}
{{- define "leaderhook.fullname" -}}
{{- if contains "leaderhook" .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-leaderhook" .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "leaderhook.webhookName" -}}
{{- printf "%s-webhook" (include "leaderhook.fullname" .) -}}
{{- end -}}

{{- define "leaderhook.tlsSecretName" -}}
{{- .Values.tls.secretName | default (printf "%s-webhook-tls" (include "leaderhook.fullname" .)) -}}
{{- end -}}

{{/* Labels on every object. The first two are deploy/'s; the rest are Helm's bookkeeping. */}}
{{- define "leaderhook.labels" -}}
app.kubernetes.io/name: leaderhook
app.kubernetes.io/part-of: leaderhook
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The webhook's pods; values.yaml's default affinity names the same labels. */}}
{{- define "leaderhook.selectorLabels" -}}
app.kubernetes.io/name: leaderhook
app.kubernetes.io/component: webhook
{{- end -}}

{{/* The one image of the webhook and of the hook it injects. */}}
{{- define "leaderhook.image" -}}
{{- with .Values.image -}}
{{- if .digest -}}
{{- printf "%s@%s" .repository .digest -}}
{{- else -}}
{{- printf "%s:%s" .repository (.tag | default $.Chart.AppVersion | toString) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The caBundle of the registration without cert-manager, base64 of the PEM the
user gave. Checked here so a wrong value fails the install, not every pod
admission later.
*/}}
{{- define "leaderhook.caBundle" -}}
{{- $pem := .Values.tls.caBundle | required "tls.caBundle: the PEM of the CA that signed the serving certificate is required when certManager.enabled is false (helm --set-file tls.caBundle=ca.crt)" -}}
{{- if not (contains "-----BEGIN CERTIFICATE-----" $pem) -}}
{{- fail "tls.caBundle: not a PEM certificate (it must contain -----BEGIN CERTIFICATE-----; give the file with --set-file, not its base64)" -}}
{{- end -}}
{{- $pem | b64enc -}}
{{- end -}}

{{/* Where the API server sends reviews, and which CA it trusts without cert-manager. */}}
{{- define "leaderhook.clientConfig" -}}
clientConfig:
  service:
    name: {{ include "leaderhook.webhookName" . }}
    namespace: {{ .Release.Namespace }}
    path: /mutate
    port: 443
  {{- if not .Values.certManager.enabled }}
  caBundle: {{ include "leaderhook.caBundle" . }}
  {{- end }}
{{- end -}}

{{/*
The namespaceSelector of an entry: (list $ MODES), the injection modes it
serves. The release's own namespace and kube-system are always excluded,
whatever the user's selector adds.
*/}}
{{- define "leaderhook.namespaceSelector" -}}
{{- $root := index . 0 -}}
{{- $modes := index . 1 -}}
namespaceSelector:
  {{- with $root.Values.namespaceSelector.matchLabels }}
  matchLabels:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  matchExpressions:
  - key: leaderhook.io/injection
    operator: In
    values: {{ toJson $modes }}
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values: {{ list $root.Release.Namespace "kube-system" | uniq | toJson }}
  {{- with $root.Values.namespaceSelector.matchExpressions }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end -}}

{{/* Pods labelled leaderhook.io/inject=false are never sent, whatever the user's selector. */}}
{{- define "leaderhook.objectSelector" -}}
objectSelector:
  {{- with .Values.objectSelector.matchLabels }}
  matchLabels:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  matchExpressions:
  - key: leaderhook.io/inject
    operator: NotIn
    values: ["false"]
  {{- with .Values.objectSelector.matchExpressions }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end -}}
