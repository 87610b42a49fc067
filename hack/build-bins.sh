#!/usr/bin/env bash
# Builds the local control plane's binaries once and caches them outside the repo:
#   ${MODELGATE_CACHE:-~/.cache/modelgate}/<component>-<version>/bin/
# with the sha256 of each binary built recorded beside them (SHA256SUMS). A component whose binaries
# are all present and match their record is not rebuilt; one that does not match is said so (file,
# both hashes) and rebuilt. Prints how long each build took.
# ${cache}/bin/ links to the pinned versions; that is where testbed looks (testbed/binaries.py checks
# the record again before each use).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${MODELGATE_CACHE:-$HOME/.cache/modelgate}
export GOFLAGS="${GOFLAGS:-} -trimpath"
export CGO_ENABLED=0

kube_version=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' "$here/gomod/kubernetes/go.mod")
etcd_version=$(awk '$1 == "go.etcd.io/etcd/server/v3" {print $2}' "$here/gomod/etcd/go.mod")
traefik_version=$(awk '$1 == "require" && $2 == "github.com/traefik/traefik/v3" {print $3}' "$here/gomod/traefik/go.mod")
sim_version=$(awk '$1 == "github.com/llm-d/llm-d-inference-sim" {print $2}' "$here/gomod/inference-sim/go.mod")
lws_version=$(awk '$1 == "sigs.k8s.io/lws" {print $2}' "$here/gomod/lws/go.mod")
# The wrapper's own source is part of the recipe: a change to it builds a new binary.
sim_recipe=-$(cat "$here/gomod/inference-sim/main.go" "$here/gomod/inference-sim/go.sum" | sha256sum | cut -c1-8)
# shellcheck source=versions.env
. "$here/versions.env"

have_all() {  # dir binary...
  local dir=$1; shift
  for b in "$@"; do [ -x "$dir/$b" ] || return 1; done
}

record_sums() {  # dir binary...
  local dir=$1; shift
  (cd "$dir" && sha256sum -- "$@" >SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS)
}

# Whether dir holds every binary, each as its record says. A mismatch (or a binary the record lacks)
# is reported with both hashes, and the caller rebuilds. A dir cached before records were kept gets
# one now, from the files as they are: that trusts them as found (README.md says so).
cached() {  # dir binary...
  local dir=$1; shift
  have_all "$dir" "$@" || return 1
  if [ ! -f "$dir/SHA256SUMS" ]; then
    echo "build-bins: $dir has no recorded checksums: recording the present binaries' (trusted as found)" >&2
    record_sums "$dir" "$@"
    return 0
  fi
  local b recorded found intact=0
  for b in "$@"; do
    recorded=$(awk -v name="$b" '$2 == name {print $1}' "$dir/SHA256SUMS")
    found=$(sha256sum <"$dir/$b" | cut -d' ' -f1)
    if [ "$recorded" != "$found" ]; then
      echo "build-bins: $dir/$b does not match its record: recorded ${recorded:-nothing}, found $found; rebuilding" >&2
      intact=1
    fi
  done
  return $intact
}

# Moves a finished build into place, its checksums recorded first.
install_built() {  # dir binary...
  local out=$1; shift
  record_sums "$out.tmp" "$@"
  rm -rf "$out" && mv "$out.tmp" "$out"
}

timed() {  # label command...
  local label=$1; shift
  local start=$SECONDS
  "$@"
  echo "build-bins: ${label} built in $((SECONDS - start))s"
}

build_kubernetes() {
  local out=$cache/kubernetes-$kube_version/bin
  local bins=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
  if cached "$out" "${bins[@]}"; then echo "build-bins: kubernetes $kube_version cached in $out"; return; fi
  local minor=${kube_version#v1.}; minor=${minor%%.*}
  local ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  done
  mkdir -p "$out.tmp"
  (cd "$here/gomod/kubernetes" && for b in "${bins[@]}"; do
     timed "$b $kube_version" go build -ldflags "$ldflags" -o "$out.tmp/$b" "k8s.io/kubernetes/cmd/$b"
   done)
  install_built "$out" "${bins[@]}"
}

build_etcd() {
  local out=$cache/etcd-$etcd_version/bin
  if cached "$out" etcd; then echo "build-bins: etcd $etcd_version cached in $out"; return; fi
  mkdir -p "$out.tmp"
  (cd "$here/gomod/etcd" && timed "etcd $etcd_version" go build -ldflags "-s -w" -o "$out.tmp/etcd" go.etcd.io/etcd/server/v3)
  install_built "$out" etcd
}

# Traefik, the bed's Gateway API data plane, built in the module hack/traefik-build-module.sh assembles
# (its wrapper repeats Traefik's replaces; two files whose imports the proxy refuses are stood in for).
build_traefik() {
  local out=$cache/traefik-$traefik_version/bin
  if cached "$out" traefik; then echo "build-bins: traefik $traefik_version cached in $out"; return; fi
  local ldflags="-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=$traefik_version"
  ldflags+=" -X github.com/traefik/traefik/v3/pkg/version.BuildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  mkdir -p "$out.tmp"
  (
    build=$(mktemp -d)
    trap 'rm -rf "$build"' EXIT
    bash "$here/traefik-build-module.sh" "$build"
    cd "$build"
    timed "traefik $traefik_version" go build -ldflags "$ldflags" -o "$out.tmp/traefik" github.com/traefik/traefik/v3/cmd/traefik
  )
  install_built "$out" traefik
}

# llm-d's vLLM simulator, served on one address by the command in hack/gomod/inference-sim (its
# main.go says why); the module pins the simulator's version and whole dependency graph.
build_inference_sim() {
  local out=$cache/inference-sim-$sim_version$sim_recipe/bin
  if cached "$out" inference-sim; then echo "build-bins: inference-sim $sim_version cached in $out"; return; fi
  mkdir -p "$out.tmp"
  (cd "$here/gomod/inference-sim" && timed "inference-sim $sim_version" go build -ldflags "-s -w" -o "$out.tmp/inference-sim" .)
  install_built "$out" inference-sim
}

# LeaderWorkerSet's controller (sigs.k8s.io/lws/cmd), run by the bed's LeaderWorkerSet tests as a
# local process (testbed/leaderworkersets.py); the module pins its whole dependency graph.
build_lws() {
  local out=$cache/lws-$lws_version/bin
  if cached "$out" lws-controller; then echo "build-bins: lws $lws_version cached in $out"; return; fi
  mkdir -p "$out.tmp"
  (cd "$here/gomod/lws" && timed "lws $lws_version" go build -ldflags "-s -w" -o "$out.tmp/lws-controller" sigs.k8s.io/lws/cmd)
  install_built "$out" lws-controller
}

go_install() {  # name version package [cache-dir suffix naming the recipe] [ldflags]
  local name=$1 version=$2 pkg=$3 recipe=${4:-} ldflags="-s -w ${5:-}"
  local out=$cache/$name-$version$recipe/bin
  if cached "$out" "$name"; then echo "build-bins: $name $version cached in $out"; return; fi
  mkdir -p "$out.tmp"
  GOBIN="$out.tmp" timed "$name $version" go install -ldflags "$ldflags" "$pkg@$version"
  install_built "$out" "$name"
}

# helm built as its release is (helm's Makefile at the tag sets these): without them `helm version`
# says "v3.22" and `helm template`/`helm lint` assume Kubernetes v1.20 when given no --kube-version.
# The Makefile derives that default from helm's own client-go requirement: v0.N -> Kubernetes 1.N.
# The release's gitCommit (the tag's commit) is left empty: nothing here knows it.
# A new recipe gets a new suffix, so a helm cached from an older recipe is rebuilt once.
helm_recipe=-release-ldflags
helm_release_ldflags() {
  local gomod client_go minor major
  gomod=$(go mod download -json "helm.sh/helm/v3@$HELM_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  client_go=$(awk '$1 == "k8s.io/client-go" {print $2}' "$gomod")
  [[ $client_go =~ ^v0\.[0-9]+\. ]] || { echo "build-bins: no k8s.io/client-go v0.N in helm's go.mod" >&2; exit 1; }
  client_go=${client_go#v}
  major=$((${client_go%%.*} + 1))
  minor=${client_go#*.}; minor=${minor%%.*}
  local flags="-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
  flags+=" -X helm.sh/helm/v3/internal/version.metadata= -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    flags+=" -X $pkg.k8sVersionMajor=$major -X $pkg.k8sVersionMinor=$minor"
  done
  echo "$flags"
}

build_helm() {
  local ldflags
  ldflags=$(helm_release_ldflags)
  go_install helm "$HELM_VERSION" helm.sh/helm/v3/cmd/helm "$helm_recipe" "$ldflags"
}

link_bins() {  # cache-dir...
  mkdir -p "$cache/bin"
  for d in "$@"; do
    for b in "$cache/$d/bin/"*; do ln -sfn "$b" "$cache/bin/$(basename "$b")"; done
  done
}

# The local control plane's own binaries (testbed/localcluster.py starts them; Prometheus is not Go-built).
bed_dirs=("kubernetes-$kube_version" "etcd-$etcd_version" "kwok-$KWOK_VERSION")
build_bed() {
  build_etcd
  go_install kwok "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok
  build_kubernetes
}

link_pinned() {
  link_bins "${bed_dirs[@]}" "helm-$HELM_VERSION$helm_recipe" "actionlint-$ACTIONLINT_VERSION" \
    "traefik-$traefik_version" "inference-sim-$sim_version$sim_recipe" "lws-$lws_version"
}

case "${1:-all}" in
  kubernetes) build_kubernetes ;;
  etcd) build_etcd ;;
  kwok) go_install kwok "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok ;;
  helm) build_helm ;;
  traefik) build_traefik; link_bins "traefik-$traefik_version" ;;
  inference-sim) build_inference_sim; link_bins "inference-sim-$sim_version$sim_recipe" ;;
  lws) build_lws; link_bins "lws-$lws_version" ;;
  actionlint) go_install actionlint "$ACTIONLINT_VERSION" github.com/rhysd/actionlint/cmd/actionlint ;;
  bed)  # what `make cluster-up` runs: the control plane alone
    build_bed
    link_bins "${bed_dirs[@]}"
    ;;
  demo)  # what `make demo` runs: the bed, Traefik and the simulator; no helm, no actionlint (tests only)
    build_bed
    build_traefik
    build_inference_sim
    link_bins "${bed_dirs[@]}" "traefik-$traefik_version" "inference-sim-$sim_version$sim_recipe"
    ;;
  all)
    build_etcd
    go_install kwok "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok
    build_helm
    go_install actionlint "$ACTIONLINT_VERSION" github.com/rhysd/actionlint/cmd/actionlint
    build_kubernetes
    build_traefik
    build_inference_sim
    build_lws
    link_pinned
    ;;
  *) echo "usage: build-bins.sh [all|bed|demo|kubernetes|etcd|kwok|helm|actionlint|traefik|inference-sim|lws]" >&2; exit 2 ;;
esac
