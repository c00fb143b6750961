{{/* The release's names, labels and the values derived from several others. */}}

{{- define "policyext.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "policyext.fullname" -}}
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

{{- define "policyext.selectorLabels" -}}
app.kubernetes.io/name: {{ include "policyext.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "policyext.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "policyext.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: {{ .Values.mode }}
{{- end -}}

{{/* The extender's ServiceAccount (both modes). */}}
{{- define "policyext.serviceAccountName" -}}
{{- default (include "policyext.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* kube-scheduler's ServiceAccount (scheduler mode): the pod's. */}}
{{- define "policyext.schedulerServiceAccountName" -}}
{{- default (printf "%s-scheduler" (include "policyext.fullname" .)) .Values.scheduler.serviceAccount.name -}}
{{- end -}}

{{/* The Secret holding the extender's token in scheduler mode (the pod's is kube-scheduler's). */}}
{{- define "policyext.extenderTokenSecret" -}}
{{- printf "%s-token" (include "policyext.serviceAccountName" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Whether the verbs are served over TLS ("true" or empty): tls.enabled, where auto means
on in extender mode (over the network) and off in scheduler mode (loopback in the pod). */}}
{{- define "policyext.tls" -}}
{{- $e := .Values.tls.enabled -}}
{{- if eq (toString $e) "auto" -}}
{{- if eq .Values.mode "extender" -}}true{{- end -}}
{{- else if $e -}}true{{- end -}}
{{- end -}}

{{/* Whether the extender requires client certificates ("true" or empty). */}}
{{- define "policyext.mtls" -}}
{{- if and (include "policyext.tls" .) .Values.tls.clientAuth -}}true{{- end -}}
{{- end -}}

{{/* Where the certificates come from: existing, certManager or generated. */}}
{{- define "policyext.tlsSource" -}}
{{- if .Values.tls.existingSecret -}}existing
{{- else if .Values.tls.certManager.enabled -}}certManager
{{- else -}}generated
{{- end -}}
{{- end -}}

{{/* The name the chart's and cert-manager's client certificates are issued to. */}}
{{- define "policyext.clientName" -}}
{{- default "kube-scheduler" (first (default (list) .Values.tls.clientAllow)) -}}
{{- end -}}

{{/* The Secret of the scheduler's client certificate. */}}
{{- define "policyext.clientTlsSecret" -}}
{{- if .Values.tls.existingClientSecret -}}
{{- .Values.tls.existingClientSecret -}}
{{- else if .Values.tls.existingSecret -}}
{{- .Values.tls.existingSecret -}}
{{- else -}}
{{- printf "%s-client-tls" (include "policyext.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* The schedulerNames whose pods the extender binds (--scheduler-name). */}}
{{- define "policyext.schedulerNames" -}}
{{- if .Values.extender.schedulerNames -}}
{{- join "," .Values.extender.schedulerNames -}}
{{- else if eq .Values.mode "scheduler" -}}
{{- .Values.scheduler.name -}}
{{- else -}}
default-scheduler
{{- end -}}
{{- end -}}

{{- define "policyext.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The ConfigMap the policies come from: the chart's own or an existing one. */}}
{{- define "policyext.policiesConfigMap" -}}
{{- if .Values.policies.existingConfigMap -}}
{{- .Values.policies.existingConfigMap -}}
{{- else -}}
{{- printf "%s-policies" (include "policyext.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "policyext.tlsSecret" -}}
{{- if .Values.tls.existingSecret -}}
{{- .Values.tls.existingSecret -}}
{{- else -}}
{{- printf "%s-tls" (include "policyext.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* Where kube-scheduler reaches the extender: the sidecar on localhost, or the Service. */}}
{{- define "policyext.extenderURL" -}}
{{- $scheme := ternary "https" "http" (eq (include "policyext.tls" .) "true") -}}
{{- $host := "127.0.0.1" -}}
{{- $port := .Values.extender.port -}}
{{- if eq .Values.mode "extender" -}}
{{- $host = .Values.service.clusterIP | default (printf "%s.%s.svc" (include "policyext.fullname" .) .Release.Namespace) -}}
{{- $port = .Values.service.port -}}
{{- end -}}
{{- $url := printf "%s://%s:%v" $scheme $host $port -}}
{{- if .Values.extender.urlPrefix -}}
{{- $url = printf "%s/%s" $url (trimAll "/" .Values.extender.urlPrefix) -}}
{{- end -}}
{{- $url -}}
{{- end -}}

{{/* The TLS files, mounted from the TLS Secret (ca.crt, and the extender's certificate). */}}
{{- define "policyext.tlsDir" -}}/etc/policyext/tls{{- end -}}

{{/* kube-scheduler's client certificate, mounted from the client TLS Secret. */}}
{{- define "policyext.clientTlsDir" -}}/etc/policyext/client-tls{{- end -}}

{{/*
The extenders: entry, field for field what `policyext config` prints for the same options
(policyext/cli/config.py extender_config); the chart tests compare the two.
*/}}
{{- define "policyext.extenderEntry" -}}
urlPrefix: {{ include "policyext.extenderURL" . | quote }}
filterVerb: filter
prioritizeVerb: prioritize
{{- if .Values.extender.preempt }}
preemptVerb: preempt
{{- end }}
{{- if .Values.extender.bind }}
bindVerb: bind
{{- end }}
weight: {{ .Values.extender.weight }}
nodeCacheCapable: true
enableHTTPS: {{ eq (include "policyext.tls" .) "true" }}
httpTimeout: {{ .Values.extender.httpTimeout | quote }}
ignorable: {{ .Values.extender.ignorable }}
{{- if include "policyext.tls" . }}
tlsConfig:
  caFile: {{ printf "%s/ca.crt" (include "policyext.tlsDir" .) }}
  {{- if include "policyext.mtls" . }}
  certFile: {{ printf "%s/tls.crt" (include "policyext.clientTlsDir" .) }}
  keyFile: {{ printf "%s/tls.key" (include "policyext.clientTlsDir" .) }}
  {{- end }}
  {{- with .Values.tls.serverName }}
  serverName: {{ . | quote }}
  {{- end }}
{{- end }}
{{- end -}}

{{/*
A Go duration ("5s", "1m30s", "500ms") in seconds, as a number: Helm has no duration type,
and the extender's --request-deadline is derived from the scheduler's httpTimeout.
*/}}
{{- define "policyext.seconds" -}}
{{- $total := 0.0 -}}
{{- $units := dict "h" 3600.0 "m" 60.0 "s" 1.0 "ms" 0.001 "us" 0.000001 "µs" 0.000001 "ns" 0.000000001 -}}
{{- range regexFindAll "[0-9.]+(ns|us|µs|ms|s|m|h)" . -1 -}}
{{- $number := regexFind "^[0-9.]+" . -}}
{{- $total = addf $total (mulf (float64 $number) (get $units (trimPrefix $number .))) -}}
{{- end -}}
{{- $total -}}
{{- end -}}

{{/*
The extender's --request-deadline: three quarters of the scheduler's httpTimeout, so that
the extender answers (what the deadline stopped failing as its failurePolicy says) while
the scheduler still waits, with a quarter left for reading the request and sending the
reply.
*/}}
{{- define "policyext.requestDeadline" -}}
{{- printf "%g" (mulf (include "policyext.seconds" .Values.extender.httpTimeout | float64) 0.75) -}}
{{- end -}}

{{/*
kube-scheduler's image tag: the value given, else the cluster's own version (the version
skew policy forbids a scheduler newer than the API server). Providers' suffixes
(v1.31.4-eks-..., v1.30.2+k3s1) are not tags of the upstream image: only vMAJOR.MINOR.PATCH.
*/}}
{{- define "policyext.schedulerTag" -}}
{{- .Values.scheduler.image.tag | default (regexFind "^v[0-9]+\\.[0-9]+\\.[0-9]+" .Capabilities.KubeVersion.Version) -}}
{{- end -}}

{{/* Whether the release serves no policy at all (allowed only with policies.allowEmpty). */}}
{{- define "policyext.noPolicies" -}}
{{- if not (or .Values.policies.inline .Values.policies.existingConfigMap .Values.policies.crd) -}}true{{- end -}}
{{- end -}}

{{/* Whether the admission webhook of SchedulingPolicy objects is on ("true" or empty):
policies.webhook.enabled, where auto means on with policies.crd. */}}
{{- define "policyext.webhook" -}}
{{- $e := .Values.policies.webhook.enabled -}}
{{- if eq (toString $e) "auto" -}}
{{- if .Values.policies.crd -}}true{{- end -}}
{{- else if $e -}}true{{- end -}}
{{- end -}}

{{/* The webhook's Service, Certificate and Secret (and the ValidatingWebhookConfiguration's name). */}}
{{- define "policyext.webhookName" -}}
{{- printf "%s-webhook" (include "policyext.fullname" . | trunc 55 | trimSuffix "-") -}}
{{- end -}}
