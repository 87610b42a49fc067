#!/usr/bin/env bash
# Assembles, in the empty directory $1, the Go module the bed's Traefik is built in: the wrapper
# module of hack/gomod/traefik (go.mod, go.sum, ./ext), plus writable copies of the Traefik and lego
# modules in which two files whose imports the module proxy refuses are swapped for the stand-ins of
# hack/gomod/traefik/_stand_ins (each says why). The copies come from the module cache, checked
# against the wrapper's go.sum. (A `go build -overlay` cannot do this: it refuses files in GOMODCACHE.)
set -euo pipefail
build=${1:?usage: traefik-build-module.sh EMPTY_DIR}
wrapper=$(cd "$(dirname "$0")/gomod/traefik" && pwd)
cp "$wrapper/go.mod" "$wrapper/go.sum" "$build/"
cp -r "$wrapper/ext" "$build/ext"
cd "$build"
copy_module() {  # module local-dir
  local src
  src=$(go mod download -json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  cp -r "$src" "$2"
  chmod -R u+w "$2"
  go mod edit -replace "$1=./$2"
}
copy_module github.com/traefik/traefik/v3 traefik
copy_module github.com/go-acme/lego/v5 lego
cp "$wrapper/_stand_ins/middlewares_auth.go" traefik/pkg/middlewares/auth/basic_auth.go
rm traefik/pkg/middlewares/auth/digest_auth.go
cp "$wrapper/_stand_ins/lego_dns_providers.go" lego/providers/dns/zz_gen_dns_providers.go
