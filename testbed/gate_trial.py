"""`python -m testbed.gate_trial`: what a gated rollout needs on the local bed, for a user to try
`spec.gate` by hand (docs/gate.md, "Trying it on the local bed"). On a bed that is up (`make
cluster-up`) it serves namespace `gate-trial`: Deployments chat-v1 (the incumbent) and chat-v2 behind
Services and HTTPRoute `chat`, a model-server double per Pod that knows examples/gate/test-set.jsonl
and answers a set share of each capability right, the check Pods' kubelet (kwok runs no containers:
testbed/check_pods.py) and the operator. It runs until interrupted (Ctrl-C, or SIGTERM), then stops
what it started and deletes the namespace."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from testbed.answering import Answers
from testbed.check_pods import CheckPods
from testbed.fleet import ModelFleet
from testbed.localcluster import LocalCluster
from testbed.manifests import http_route, model_deployment, model_service
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from testbed.versions import REPO_ROOT
from testbed.waiting import wait_for

NAMESPACE = "gate-trial"
TEST_SET = REPO_ROOT / "examples" / "gate" / "test-set.jsonl"
INCUMBENT_CORRECT = {"math": 0.8, "code": 0.8}
CANDIDATE_CORRECT = {"math": 0.9, "code": 0.8}
READY = "ready"  # the line that says the trial serves (the test waits for it)


def _share(text: str) -> tuple[str, float]:
    capability, separator, share = text.partition("=")
    if not separator or not capability:
        raise argparse.ArgumentTypeError(f"{text!r}: expected CAPABILITY=SHARE")
    return capability, float(share)


def _knowing(correct: Mapping[str, float]) -> Behaviour:
    return Behaviour(answers=Answers(test_set=str(TEST_SET), correct=dict(correct)))


@contextmanager
def served(bed: LocalCluster, api_client: client.ApiClient, candidate: Mapping[str, float]) -> Iterator[None]:
    """The namespace's models, each Pod's double knowing the test set, and the check Pods' kubelet."""
    core = client.CoreV1Api(api_client)
    _without_namespace(core)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE)))
    with ExitStack() as stack:
        stack.callback(core.delete_namespace, NAMESPACE)
        manifests = [model_deployment(name, NAMESPACE, replicas=1) for name in ("chat-v1", "chat-v2")]
        manifests += [model_service(name, NAMESPACE) for name in ("chat-v1", "chat-v2")]
        manifests.append(http_route("chat", NAMESPACE, {"chat-v1": 100, "chat-v2": 0}))
        for manifest in manifests:
            bed.kubectl("create", "-f", "-", stdin=json.dumps(manifest))
        fleet = ModelFleet(bed, api_client)
        stack.callback(fleet.stop)
        fleet.serve(NAMESPACE, "chat-v1", _knowing(INCUMBENT_CORRECT))
        fleet.serve(NAMESPACE, "chat-v2", _knowing(candidate))
        # The evaluator's Pod reaches the Services by their cluster names; the bed maps them to the doubles.
        services = {
            f"http://{name}.{NAMESPACE}.svc:8000": fleet.urls(name)[0] for name in ("chat-v1", "chat-v2")
        }
        stack.enter_context(CheckPods(api_client, NAMESPACE, bed.layout.root / NAMESPACE, services))
        yield


def _without_namespace(core: client.CoreV1Api) -> None:
    """A trial stopped a moment ago leaves its namespace terminating: wait until it is gone."""

    def gone() -> bool:
        try:
            core.delete_namespace(NAMESPACE)
        except ApiException as error:
            if error.status == 404:
                return True
            raise
        return False

    wait_for(gone, timeout=120, interval=1, what=f"namespace {NAMESPACE} of an earlier trial to go")


def run(root: Path, candidate: Mapping[str, float], stop: threading.Event) -> int:
    bed = LocalCluster(root)
    if not bed.is_up():
        print(f"the bed in {root} is not up: run `make cluster-up` first", file=sys.stderr)
        return 1
    api_client = config.new_client_from_config(config_file=str(bed.kubeconfig))  # type: ignore[no-untyped-call]
    operator = OperatorProcess(bed.kubeconfig, bed.layout.root / "gate-trial-operator", [NAMESPACE])
    with served(bed, api_client, candidate):
        operator.start()
        try:
            print(
                f"{READY}: namespace {NAMESPACE}, chat-v1 and chat-v2 served, check Pods run, operator log "
                f"{operator.log_file}; Ctrl-C stops",
                flush=True,
            )
            stop.wait()
        finally:
            operator.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.gate_trial", description=__doc__)
    parser.add_argument("--root", type=Path, default=Path(".localcluster"), help="the bed's state folder")
    parser.add_argument(
        "--correct",
        type=_share,
        action="append",
        default=[],
        metavar="CAPABILITY=SHARE",
        help=f"the candidate's share of a capability's items answered right (default {CANDIDATE_CORRECT}; "
        f"the incumbent's: {INCUMBENT_CORRECT}; other capabilities all right)",
    )
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    return run(args.root, {**CANDIDATE_CORRECT, **dict(args.correct)}, stop)


if __name__ == "__main__":
    sys.exit(main())
