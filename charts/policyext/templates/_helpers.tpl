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

{{- define "policyext.serviceAccountName" -}}
{{- default (include "policyext.fullname" .) .Values.serviceAccount.name -}}
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
{{- $scheme := ternary "https" "http" .Values.tls.enabled -}}
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

{{/* The scheduler's TLS files, mounted from the TLS Secret. */}}
{{- define "policyext.tlsDir" -}}/etc/policyext/tls{{- end -}}

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
enableHTTPS: {{ .Values.tls.enabled }}
httpTimeout: {{ .Values.extender.httpTimeout | quote }}
ignorable: {{ .Values.extender.ignorable }}
{{- if .Values.tls.enabled }}
tlsConfig:
  caFile: {{ printf "%s/ca.crt" (include "policyext.tlsDir" .) }}
  {{- if .Values.tls.clientAuth }}
  certFile: {{ printf "%s/tls.crt" (include "policyext.tlsDir" .) }}
  keyFile: {{ printf "%s/tls.key" (include "policyext.tlsDir" .) }}
  {{- end }}
  {{- with .Values.tls.serverName }}
  serverName: {{ . | quote }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* The HTTP probe of the extender: plain, HTTPS, or (mutual TLS) an exec of Python with the
client certificate, since the kubelet cannot present one. */}}
{{- define "policyext.extenderProbe" -}}
{{- $ := index . 0 -}}
{{- $path := index . 1 -}}
{{- if and $.Values.tls.enabled $.Values.tls.clientAuth -}}
exec:
  command:
    - python
    - -c
    - |
      import ssl, urllib.request
      d = "{{ include "policyext.tlsDir" $ }}"
      c = ssl.create_default_context(cafile=d + "/ca.crt")
      c.check_hostname = False
      c.load_cert_chain(d + "/tls.crt", d + "/tls.key")
      urllib.request.urlopen("https://127.0.0.1:{{ $.Values.extender.port }}{{ $path }}", context=c, timeout=4)
{{- else -}}
httpGet:
  path: {{ $path }}
  port: http
  scheme: {{ ternary "HTTPS" "HTTP" $.Values.tls.enabled }}
{{- end -}}
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
{{- if not (or .Values.policies.inline .Values.policies.existingConfigMap) -}}true{{- end -}}
{{- end -}}
