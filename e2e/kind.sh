#!/usr/bin/env bash
# The end-to-end on kind: modelgate's image and Helm chart in a real cluster, with a real gateway
# (Istio, Gateway API standard channel), a real Prometheus and model-server doubles as real Pods.
# A good candidate (chat-v2) must be promoted (Succeeded), then a bad one (chat-v3, 8% errors) must
# be rolled back (RolledBack) with the route back at weight 0 for it.
#
#   bash e2e/kind.sh           # needs docker, kind, kubectl and helm on PATH, and network access
#   KEEP=1 bash e2e/kind.sh    # keep the cluster afterwards (the script prints its KUBECONFIG)
#
# Settings (environment): CLUSTER (modelgate-e2e), NAMESPACE of the models (serving),
# OPERATOR_NAMESPACE (modelgate-system), ROLLOUT_TIMEOUT per rollout in seconds (600), and
# KIND / KUBECTL / HELM / DOCKER to use other binaries.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
manifests=$root/e2e/manifests
# GATEWAY_API_VERSION and ISTIO_API_VERSION: the same pins the local bed uses.
# shellcheck source=../hack/versions.env
. "$root/hack/versions.env"

cluster=${CLUSTER:-modelgate-e2e}
namespace=${NAMESPACE:-serving}
operator_namespace=${OPERATOR_NAMESPACE:-modelgate-system}
rollout_timeout=${ROLLOUT_TIMEOUT:-600}
kind=${KIND:-kind}
kubectl=${KUBECTL:-kubectl}
helm=${HELM:-helm}
docker=${DOCKER:-docker}
image=modelgate:e2e # the operator and load generator's tag, loaded into the nodes (never pulled)
testbed_image=modelgate-testbed:e2e # the model-server doubles' tag (the operator image plus testbed/)
# Istio's release that matches the istio.io/api module the bed installs CRDs from.
istio_version=${ISTIO_API_VERSION#v}
istio_charts=https://istio-release.storage.googleapis.com/charts
gateway_api_crds=https://github.com/kubernetes-sigs/gateway-api/releases/download/$GATEWAY_API_VERSION/standard-install.yaml
# The example rollouts name this Prometheus; the e2e runs its own next to the models.
example_prometheus=http://prometheus.monitoring:9090
e2e_prometheus=http://prometheus.$namespace.svc:9090

workdir=$(mktemp -d)
export KUBECONFIG=$workdir/kubeconfig
created=0
started=$SECONDS

log() { printf '\n[%4ds] %s\n' "$((SECONDS - started))" "$*"; }
k() { "$kubectl" "$@"; }

diagnostics() {
  log "diagnostics"
  k get nodes -o wide || true
  k get pods -A -o wide || true
  k -n "$namespace" get modelrollout chat -o yaml || true
  k -n "$namespace" get httproute chat -o yaml || true
  k -n "$namespace" get gateway inference-gateway -o yaml || true
  k -n "$namespace" get events --sort-by=.lastTimestamp | tail -n 60 || true
  k -n "$operator_namespace" logs deploy/modelgate --tail=200 || true
  k -n "$namespace" logs job/loadgen --tail=20 || true
}

on_exit() {
  local status=$?
  if [ "$status" -ne 0 ] && [ "$created" = 1 ]; then diagnostics; fi
  if [ "${KEEP:-0}" = 1 ] && [ "$created" = 1 ]; then
    log "KEEP=1: cluster $cluster kept; export KUBECONFIG=$KUBECONFIG"
  else
    # Only a cluster this run created is deleted.
    if [ "$created" = 1 ]; then "$kind" delete cluster --name "$cluster" || true; fi
    rm -rf "$workdir"
  fi
  log "e2e: exit status $status"
  exit "$status"
}
trap on_exit EXIT

# wait_until SECONDS WHAT COMMAND...: runs COMMAND every 2 s until it succeeds.
wait_until() {
  local timeout=$1 what=$2
  shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "e2e: timed out after ${timeout}s waiting for $what" >&2
      return 1
    fi
    sleep 2
  done
}

# prometheus_has QUERY: the in-cluster Prometheus returns at least one sample for QUERY. Through the
# API server's service proxy, so nothing listens on this host. QUERY must need no URL escaping.
prometheus_has() {
  k get --raw "/api/v1/namespaces/$namespace/services/prometheus:web/proxy/api/v1/query?query=$1" |
    grep -q '"value"'
}

# apply_rollout EXAMPLE: an example ModelRollout, pointed at the e2e's Prometheus.
apply_rollout() {
  local example=$1
  grep -qF "$example_prometheus" "$example" || {
    echo "e2e: $example no longer names $example_prometheus; update e2e/kind.sh" >&2
    return 1
  }
  sed "s#$example_prometheus#$e2e_prometheus#" "$example" | k -n "$namespace" apply -f -
}

# wait_phase CANDIDATE PHASE: until ModelRollout chat reports PHASE for CANDIDATE. Another final
# phase for that candidate fails at once; progress is printed as it changes.
wait_phase() {
  local candidate=$1 want=$2
  local deadline=$((SECONDS + rollout_timeout)) seen="" state rollout_candidate phase
  while :; do
    state=$(k -n "$namespace" get modelrollout chat -o \
      jsonpath='{.status.rolloutCandidate}|{.status.phase}|step {.status.currentStepIndex}, weight {.status.currentWeight}: {.status.message}' \
      2>/dev/null || true)
    if [ "$state" != "$seen" ]; then
      printf '  chat: %s\n' "${state:-<no status yet>}"
      seen=$state
    fi
    IFS='|' read -r rollout_candidate phase _ <<<"$state"
    if [ "$rollout_candidate" = "$candidate" ]; then
      case $phase in
        "$want") return 0 ;;
        Succeeded | RolledBack | Failed)
          echo "e2e: rollout chat of $candidate ended $phase, expected $want" >&2
          return 1
          ;;
      esac
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "e2e: timed out after ${rollout_timeout}s waiting for chat of $candidate to be $want" >&2
      return 1
    fi
    sleep 3
  done
}

# expect_weights WEIGHTS: the backend weights of the HTTPRoute's rule 0, in order ("0 100").
expect_weights() {
  local got
  got=$(k -n "$namespace" get httproute chat -o jsonpath='{.spec.rules[0].backendRefs[*].weight}')
  if [ "$got" != "$1" ]; then
    echo "e2e: HTTPRoute chat has weights '$got', expected '$1'" >&2
    return 1
  fi
}

for tool in "$kind" "$kubectl" "$helm" "$docker"; do
  command -v "$tool" >/dev/null || {
    echo "e2e: $tool is not on PATH" >&2
    exit 1
  }
done
if "$kind" get clusters 2>/dev/null | grep -qx "$cluster"; then
  echo "e2e: a kind cluster named $cluster exists; delete it or set CLUSTER" >&2
  exit 1
fi

log "image $image"
"$docker" build -t "$image" \
  --build-arg REVISION="${GITHUB_SHA:-$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)}" "$root"
log "image $testbed_image (the model-server doubles)"
"$docker" build -t "$testbed_image" -f "$root/e2e/testbed.Dockerfile" --build-arg BASE="$image" "$root"

log "kind cluster $cluster"
created=1
"$kind" create cluster --name "$cluster" --config "$root/kind-config.yaml" --kubeconfig "$KUBECONFIG" --wait 180s
"$kind" load docker-image "$image" "$testbed_image" --name "$cluster"

log "Gateway API $GATEWAY_API_VERSION (standard channel)"
k apply --server-side -f "$gateway_api_crds"
k wait --for=condition=Established crd --all --timeout=120s

log "Istio $istio_version (istiod; it serves GatewayClass istio)"
"$helm" install istio-base base --repo "$istio_charts" --version "$istio_version" \
  --namespace istio-system --create-namespace --wait --timeout 5m
"$helm" install istiod istiod --repo "$istio_charts" --version "$istio_version" \
  --namespace istio-system --wait --timeout 5m \
  --set pilot.resources.requests.cpu=100m --set pilot.resources.requests.memory=256Mi
wait_until 180 "GatewayClass istio" k get gatewayclass istio
k wait --for=condition=Accepted gatewayclass/istio --timeout=180s

log "modelgate (charts/modelgate)"
"$helm" install modelgate "$root/charts/modelgate" --namespace "$operator_namespace" --create-namespace \
  --set image.repository=modelgate --set image.tag=e2e --set image.pullPolicy=Never --wait --timeout 5m

log "models, Prometheus, Gateway and traffic in namespace $namespace"
k create namespace "$namespace"
k -n "$namespace" apply -f "$manifests/prometheus.yaml"
k -n "$namespace" apply -f "$manifests/models.yaml"
k -n "$namespace" apply -f "$manifests/gateway.yaml"
k -n "$namespace" wait --for=condition=Available deployment --all --timeout=300s
k -n "$namespace" wait --for=condition=Programmed gateway/inference-gateway --timeout=300s
k -n "$namespace" apply -f "$manifests/loadgen.yaml"
# Traffic must go through the Gateway to chat-v1 and be scraped before a rollout can be judged.
wait_until 180 "chat-v1's requests in Prometheus" prometheus_has 'sum(http_requests_total)'

log "rollout 1: chat-v1 -> chat-v2, a good candidate"
apply_rollout "$root/examples/rollout-good.yaml"
wait_phase chat-v2 Succeeded
expect_weights "0 100"

log "rollout 2: chat-v2 -> chat-v3, 8% errors"
k -n "$namespace" apply -f "$manifests/route-v2-v3.yaml"
apply_rollout "$root/examples/rollout-bad.yaml"
wait_phase chat-v3 RolledBack
expect_weights "100 0"
reason=$(k -n "$namespace" get modelrollout chat -o jsonpath='{.status.rollbackReason}')
printf '  rollback reason: %s\n' "$reason"
grep -q 'error-rate' <<<"$reason" || {
  echo "e2e: the rollback was not caused by error-rate" >&2
  exit 1
}

log "result"
k -n "$namespace" get modelrollouts -o wide
# The CLI from the operator's own image, with the operator's in-cluster credentials.
k -n "$operator_namespace" exec deploy/modelgate -- modelgate status chat -n "$namespace"
k -n "$namespace" logs job/loadgen --tail=1
log "e2e: passed"
