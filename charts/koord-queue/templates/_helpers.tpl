{{/* Common labels. */}}
{{- define "koord-queue.labels" -}}
app.kubernetes.io/part-of: koord-queue
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/*
An image: [imagePrefix/]repository:tag, the tag the image's own, else
global.imageTag, else the chart's appVersion. Koord-Queue v1.8's images
(koordinator-sh/...), which its values file names, are another program's
binaries that do not take this chart's flags: they fail the render, naming
.key, the value to change.
*/}}
{{- define "koord-queue.image" -}}
{{- if hasPrefix "koordinator-sh/" (.image.repository | trimPrefix "/") }}
{{- fail (printf "%s: %s is Koord-Queue v1.8's image, which does not take this chart's flags; set %s to this project's image (the default, %s) and global.imagePrefix to the registry you pushed it to (docs/tasks/migrate.md)" .key .image.repository .key .default) }}
{{- end -}}
{{- $prefix := .global.imagePrefix -}}
{{- $tag := .image.tag | default .global.imageTag | default .appVersion -}}
{{- if $prefix }}{{ printf "%s/%s:%s" $prefix .image.repository $tag }}{{ else }}{{ printf "%s:%s" .image.repository $tag }}{{ end }}
{{- end }}

{{/* The extensions koord-queue-controllers runs, as --enabled-extensions takes them. */}}
{{- define "koord-queue.extensions" -}}
{{- $ext := .Values.extension -}}
{{- $names := list -}}
{{- if $ext.batchjob.enable }}{{ $names = append $names "job" }}{{ end -}}
{{- if $ext.tf.enable }}{{ $names = append $names "tfjob" }}{{ end -}}
{{- if $ext.pytorch.enable }}{{ $names = append $names "pytorchjob" }}{{ end -}}
{{- if $ext.mpi.enable }}{{ $names = append $names "mpijob" }}{{ end -}}
{{- if $ext.argo.enable }}{{ $names = append $names "workflow" }}{{ end -}}
{{- if $ext.ray.enable }}{{ $names = append (append $names "rayjob") "raycluster" }}{{ end -}}
{{- if $ext.spark.enable }}{{ $names = append $names "sparkapplication" }}{{ end -}}
{{- join "," $names -}}
{{- end }}

{{/*
The rollout strategy of Deployment .name in .namespace. Recreate: every
old pod has stopped before a new one starts, so that a pod of Koord-Queue
v1.8, which elects its leaders on Leases of its own, never runs beside
one of this chart's (both would admit). RollingUpdate once the live
Deployment runs this chart's pods and no pod of Koord-Queue's is left
(its pods lack app.kubernetes.io/name), so that upgrades from this chart
to itself keep a replica up. Without a cluster to ask (`helm template`),
Recreate.
*/}}
{{- define "koord-queue.strategy" -}}
{{- $live := lookup "apps/v1" "Deployment" .namespace .name -}}
{{- $ours := ne (dig "spec" "template" "metadata" "labels" "app.kubernetes.io/name" "" $live) "" -}}
{{- range (lookup "v1" "Pod" .namespace "").items -}}
{{- $labels := dig "metadata" "labels" dict . -}}
{{- if and (eq (get $labels "control-plane") $.name) (not (hasKey $labels "app.kubernetes.io/name")) }}{{ $ours = false }}{{ end -}}
{{- end -}}
{{- if $ours }}RollingUpdate{{ else }}Recreate{{ end -}}
{{- end }}

{{/* A pod spec's imagePullSecrets, from global.imagePullSecrets (names or {name: ...}). */}}
{{- define "koord-queue.imagePullSecrets" -}}
{{- with .Values.global.imagePullSecrets }}
imagePullSecrets:
{{- range . }}
- name: {{ if kindIs "string" . }}{{ . }}{{ else }}{{ .name }}{{ end }}
{{- end }}
{{- end }}
{{- end }}
