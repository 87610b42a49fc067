{{/* Fails on pod values that would otherwise reach the API server as a pod it refuses without
naming the chart's value: a probe with no handler or two (Helm merges a user's handler into the
chart's httpGet), a volume named as another, a mount of no volume. */}}
{{- define "modelgate.validatePod" -}}
{{- range $probe := list "livenessProbe" "readinessProbe" }}
{{- with index $.Values $probe }}
{{- $handlers := list }}
{{- range $handler := list "exec" "grpc" "httpGet" "tcpSocket" }}
{{- if index $.Values $probe $handler }}
{{- $handlers = append $handlers $handler }}
{{- end }}
{{- end }}
{{- if not $handlers }}
{{- fail (printf "%s has no handler: set one of exec, grpc, httpGet or tcpSocket (or %s=null for no probe)" $probe $probe) }}
{{- else if gt (len $handlers) 1 }}
{{- fail (printf "%s has %d handlers (%s), a probe takes one: set %s.httpGet=null beside yours to drop the chart's" $probe (len $handlers) (join ", " $handlers) $probe) }}
{{- end }}
{{- end }}
{{- end }}
{{- $volumes := list "tmp" }}
{{- range $i, $volume := .Values.extraVolumes }}
{{- if has $volume.name $volumes }}
{{- fail (printf "extraVolumes[%d] is named %q, as %s is: give each volume a name of its own" $i $volume.name (ternary "the chart's /tmp volume" "an earlier one" (eq $volume.name "tmp"))) }}
{{- end }}
{{- $volumes = append $volumes $volume.name }}
{{- end }}
{{- range $i, $mount := .Values.extraVolumeMounts }}
{{- if not (has $mount.name $volumes) }}
{{- fail (printf "extraVolumeMounts[%d] mounts volume %q, which neither extraVolumes nor the chart (tmp) defines: add it to extraVolumes" $i $mount.name) }}
{{- end }}
{{- end }}
{{- end }}
