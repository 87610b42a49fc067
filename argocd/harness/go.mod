// Runs modelgate's Argo CD customizations (../health.lua, ../application.yaml) the way Argo CD
// runs them. Tests only; nothing here is built into modelgate. `go test ./...` from this folder.
module modelgate.local/argocd/harness

go 1.26.0

require (
	github.com/evanphx/json-patch/v5 v5.9.11
	github.com/itchyny/gojq v0.12.20
	github.com/yuin/gopher-lua v1.1.2
	layeh.com/gopher-json v0.0.0-20190114024228-97fed8db8427
	sigs.k8s.io/yaml v1.6.0
)

require (
	github.com/itchyny/timefmt-go v0.1.9 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
)
