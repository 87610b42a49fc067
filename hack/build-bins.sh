#!/usr/bin/env bash
# Builds the local control plane's binaries once and caches them outside the repo:
#   ${MODELGATE_CACHE:-~/.cache/modelgate}/<component>-<version>/bin/
# A component whose binaries are all present is not rebuilt. Prints how long each build took.
# ${cache}/bin/ links to the pinned versions; that is where testbed looks.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${MODELGATE_CACHE:-$HOME/.cache/modelgate}
export GOFLAGS="${GOFLAGS:-} -trimpath"
export CGO_ENABLED=0

kube_version=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' "$here/gomod/kubernetes/go.mod")
etcd_version=$(awk '$1 == "go.etcd.io/etcd/server/v3" {print $2}' "$here/gomod/etcd/go.mod")
# shellcheck source=versions.env
. "$here/versions.env"

have_all() {  # dir binary...
  local dir=$1; shift
  for b in "$@"; do [ -x "$dir/$b" ] || return 1; done
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
  if have_all "$out" "${bins[@]}"; then echo "build-bins: kubernetes $kube_version cached in $out"; return; fi
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
  rm -rf "$out" && mv "$out.tmp" "$out"
}

build_etcd() {
  local out=$cache/etcd-$etcd_version/bin
  if have_all "$out" etcd; then echo "build-bins: etcd $etcd_version cached in $out"; return; fi
  mkdir -p "$out.tmp"
  (cd "$here/gomod/etcd" && timed "etcd $etcd_version" go build -ldflags "-s -w" -o "$out.tmp/etcd" go.etcd.io/etcd/server/v3)
  rm -rf "$out" && mv "$out.tmp" "$out"
}

go_install() {  # name version package
  local name=$1 version=$2 pkg=$3
  local out=$cache/$name-$version/bin
  if have_all "$out" "$name"; then echo "build-bins: $name $version cached in $out"; return; fi
  mkdir -p "$out.tmp"
  GOBIN="$out.tmp" timed "$name $version" go install -ldflags "-s -w" "$pkg@$version"
  rm -rf "$out" && mv "$out.tmp" "$out"
}

link_pinned() {
  mkdir -p "$cache/bin"
  local pinned_dirs=("kubernetes-$kube_version" "etcd-$etcd_version" "kwok-$KWOK_VERSION" "helm-$HELM_VERSION" "actionlint-$ACTIONLINT_VERSION")
  for d in "${pinned_dirs[@]}"; do
    for b in "$cache/$d/bin/"*; do ln -sfn "$b" "$cache/bin/$(basename "$b")"; done
  done
}

case "${1:-all}" in
  kubernetes) build_kubernetes ;;
  etcd) build_etcd ;;
  kwok) go_install kwok "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok ;;
  helm) go_install helm "$HELM_VERSION" helm.sh/helm/v3/cmd/helm ;;
  actionlint) go_install actionlint "$ACTIONLINT_VERSION" github.com/rhysd/actionlint/cmd/actionlint ;;
  all)
    build_etcd
    go_install kwok "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok
    go_install helm "$HELM_VERSION" helm.sh/helm/v3/cmd/helm
    go_install actionlint "$ACTIONLINT_VERSION" github.com/rhysd/actionlint/cmd/actionlint
    build_kubernetes
    link_pinned
    ;;
  *) echo "usage: build-bins.sh [all|kubernetes|etcd|kwok|helm|actionlint]" >&2; exit 2 ;;
esac
