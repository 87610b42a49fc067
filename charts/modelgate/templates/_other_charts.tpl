{{/* Fails when the values use another chart's name for one of modelgate's
(files/other-charts-values.yaml), with a sentence a line for each, naming modelgate's value. */}}
{{- define "modelgate.foreignValues" -}}
{{- $named := list }}
{{- $sentences := list }}
{{- range $entry := .Files.Get "files/other-charts-values.yaml" | fromYamlArray }}
{{- $longer := printf "%s." $entry.name }}
{{- $shadowed := false }}
{{- range $named }}
{{- if hasPrefix $longer . }}{{ $shadowed = true }}{{ end }}
{{- end }}
{{- if and (include "modelgate.hasValue" (dict "values" $.Values "path" $entry.name)) (not $shadowed) }}
{{- $named = append $named $entry.name }}
{{- $ours := ternary (printf "modelgate's is %s" $entry.ours) $entry.instead (hasKey $entry "ours") }}
{{- $note := ternary (printf " (%s)" $entry.note) "" (hasKey $entry "note") }}
{{- $sentences = append $sentences (printf "%s is %s name; %s%s." $entry.name $entry.of $ours $note) }}
{{- end }}
{{- end }}
{{- with $sentences }}
{{- fail (printf "values named as another chart names them:\n%s" (join "\n" .)) }}
{{- end }}
{{- end }}

{{/* "true" when the dotted `path` is a key in `values`, whatever its value (false or {}
included: the user typed it). */}}
{{- define "modelgate.hasValue" -}}
{{- $node := .values }}
{{- $found := true }}
{{- range splitList "." .path }}
{{- if and $found (kindIs "map" $node) (hasKey $node .) }}
{{- $node = index $node . }}
{{- else }}
{{- $found = false }}
{{- end }}
{{- end }}
{{- if $found }}true{{ end }}
{{- end }}
